package resolvermetrics

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/grpc-config-dns/grpc-config-dns/internal/dnstest"
	"github.com/grpc-config-dns/grpc-config-dns/internal/promtest"
	"github.com/grpc-config-dns/grpc-config-dns/resolver"
)

// TestCollector: a channel's choice, config, resolution and problems are
// exported per target, and follow an invalid record (counted; the config
// kept, as gRFC A21 says).
func TestCollector(t *testing.T) {
	dns := dnstest.Start(t)
	dns.SetAddrs("echo.test", 0, "127.0.0.1")
	dns.SetConfig("echo.test", 0, `[{"clientLanguage":["JAVA"],"serviceConfig":{}},{"serviceConfig":{"methodConfig":[{"name":[{}],"timeout":"2s"}]}}]`)
	b := resolver.NewBuilder(resolver.Options{MinRefresh: 20 * time.Millisecond, MaxRefresh: 20 * time.Millisecond})
	reg := prometheus.NewRegistry()
	reg.MustRegister(NewCollector(b))
	target := "dnsconfig://" + dns.Addr + "/echo.test:50051"
	cc, err := grpc.NewClient(target, append(b.DialOptions(), grpc.WithTransportCredentials(insecure.NewCredentials()))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	cc.Connect()
	key := func(name string, labels ...string) string {
		return "grpc_config_dns_resolver_" + name + "{" + strings.Join(append(labels, `target="`+target+`"`), ",") + "}"
	}
	wait := func(what string, ok func(m map[string]float64) bool) map[string]float64 {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			if m := promtest.Gather(t, reg); ok(m) {
				return m
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: %v", what, promtest.Gather(t, reg))
			}
		}
	}
	// The channel gets its config before the resolution's bookkeeping
	// (its time, its TTL) is done: wait for both, or a scrape in between
	// has the choice without the resolution's time (seen once in CI).
	m := wait("the published config", func(m map[string]float64) bool {
		return m[key("choice")] == 1 && m[key("last_resolution_timestamp_seconds")] > 0
	})
	var info string
	for k, v := range m {
		if strings.HasPrefix(k, "grpc_config_dns_resolver_config_info{") && v == 1 {
			info = k
		}
	}
	if !strings.Contains(info, `config="published"`) || strings.Contains(info, `sha256=""`) {
		t.Errorf("config info %q", info)
	}
	if m[key("addresses")] != 1 || m[key("last_resolution_timestamp_seconds")] < 1e9 || m[key("problems_total", `kind="invalid_record"`)] != 0 {
		t.Errorf("after the first resolution: %v", m)
	}
	dns.SetConfig("echo.test", 0, `[{"serviceConfig":{},"clientHostName":["x"]}]`)
	m = wait("invalid records counted", func(m map[string]float64) bool { return m[key("problems_total", `kind="invalid_record"`)] >= 1 })
	if m[key("choice")] != 1 {
		t.Errorf("the channel's choice after an invalid record: %v, want 1 kept", m[key("choice")])
	}
}
