package dnspub

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/miekg/dns"

	sc "github.com/grpc-config-dns/grpc-config-dns/serviceconfig"
)

// fleetWithPolicies is a zone of n services under a zone-wide policy and
// a team policy; extra is more policies.
func fleetWithPolicies(n int, extra string) string {
	var b strings.Builder
	b.WriteString(`zones:
  - origin: example.test.
    nameservers: [ns1.example.net.]
    policies:
      - name: retries
        targetRef: {kind: Zone}
        default: {methodConfig: [{name: [{service: echo.Echo}], timeout: 2s}]}
      - name: team-a
        targetRef: {kind: Service, labels: {team: a}}
        default: {loadBalancingConfig: [{round_robin: {}}]}
` + extra + `    services:
`)
	for i := range n {
		fmt.Fprintf(&b, "      - name: svc-%d\n        labels: {team: %c}\n        addresses: [10.0.%d.%d]\n        serviceConfig: {methodConfig: [{name: [{service: s%d.S}], timeout: 1s}]}\n", i, 'a'+rune(i%3), i/256, i%256, i)
	}
	return b.String()
}

func txtOf(t *testing.T, ts *testServer, name string) string {
	t.Helper()
	r := ts.ask("udp", "_grpc_config."+name, dns.TypeTXT, 4096)
	if len(r.Answer) != 1 {
		t.Fatalf("TXT %s: %v", name, r)
	}
	// miekg/dns presents TXT strings escaped.
	return strings.ReplaceAll(strings.Join(r.Answer[0].(*dns.TXT).Txt, ""), `\"`, `"`)
}

// A policy that breaks one service of 300: the reload is refused with an
// error placed in the policy that names the service; DNS answers what it
// answered before, for every service, at the same serial.
func TestPolicyBreakingOneOf300ServicesPublishesNothing(t *testing.T) {
	ts := startServer(t, fleetWithPolicies(300, ""), func(o *Options) { o.WatchInterval = -1 })
	want := `grpc_config=[{"serviceConfig":{"methodConfig":[{"name":[{"service":"echo.Echo"}],"timeout":"2s"},{"name":[{"service":"s0.S"}],"timeout":"1s"}],"loadBalancingConfig":[{"round_robin":{}}]}}]`
	if got := txtOf(t, ts, "svc-0.example.test."); got != want {
		t.Fatalf("svc-0 publishes\n%s\nwant\n%s", got, want)
	}
	probe := []string{"svc-0.example.test.", "svc-137.example.test.", "svc-299.example.test."}
	var before []string
	for _, n := range probe {
		before = append(before, txtOf(t, ts, n))
	}
	serial := ts.serial()

	broken := fleetWithPolicies(300, `      - name: svc-137-exception
        targetRef: {kind: Service, name: svc-137}
        default: {retryThrottling: {maxTokens: -1, tokenRatio: 0.1}}
`)
	line := 1 + strings.Count(broken[:strings.Index(broken, "maxTokens: -1")], "\n")
	ts.write(broken)
	err := ts.Reload()
	var ce *ConfigError
	if !errors.As(err, &ce) {
		t.Fatalf("Reload: %v, want a ConfigError", err)
	}
	i := slices.IndexFunc(ce.Diagnostics, func(d sc.Diagnostic) bool {
		return d.Line == line && strings.Contains(d.Message, "svc-137.example.test.") && strings.HasPrefix(d.Path, "/zones/0/policies/2/default/retryThrottling/maxTokens")
	})
	if i < 0 {
		t.Errorf("no error at line %d, in the policy, naming svc-137:\n%v", line, err)
	}
	var after []string
	for _, n := range probe {
		after = append(after, txtOf(t, ts, n))
	}
	if !slices.Equal(before, after) || ts.serial() != serial {
		t.Errorf("DNS changed after a refused config: serial %d -> %d", serial, ts.serial())
	}
}
