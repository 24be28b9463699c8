package dnspub

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/grpc-config-dns/grpc-config-dns/internal/promtest"
)

// Every series an alert may watch is there before the first event, at
// zero (issue 18: rate() over a series born with its first event misses
// it), and the last successful reload has a timestamp.
func TestMetricsStartAtZero(t *testing.T) {
	reg := prometheus.NewRegistry()
	startServer(t, baseConfig("allow: [127.0.0.1]"), func(o *Options) { o.Registerer = reg })
	m := promtest.Gather(t, reg)
	for _, key := range []string{
		`grpc_config_dns_reloads_total{result="rejected"}`,
		`grpc_config_dns_transfers_total{result="error",type="ixfr"}`,
		`grpc_config_dns_notifies_total{result="timeout"}`,
		`grpc_config_dns_tsig_failures_total{error="BADSIG"}`,
		`grpc_config_dns_tcp_refused_total{limit="total"}`,
		`grpc_config_dns_queries_total{proto="udp",qtype="TXT",rcode="NOERROR",zone="example.test."}`,
		`grpc_config_dns_queries_total{proto="udp",qtype="TXT",rcode="NXDOMAIN",zone="example.test."}`,
		`grpc_config_dns_queries_total{proto="udp",qtype="A",rcode="REFUSED",zone=""}`,
		`grpc_config_dns_response_size_bytes_count{proto="udp",zone="example.test."}`,
		`grpc_config_dns_request_duration_seconds_count{proto="tcp",zone="example.test."}`,
	} {
		if v, ok := m[key]; !ok || v != 0 {
			t.Errorf("%s = %v (present %v), want 0 before any event", key, v, ok)
		}
	}
	if ts := m["grpc_config_dns_config_last_reload_success_timestamp_seconds"]; ts < 1e9 {
		t.Errorf("last reload timestamp %v, want the start-up load's time", ts)
	}
}

func TestMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	ts := startServer(t, baseConfig("allow: [127.0.0.1]"), func(o *Options) { o.Registerer = reg })
	for range 3 {
		ts.ask("udp", "echo.example.test.", dns.TypeA, 0)
	}
	ts.ask("tcp", "nope.example.test.", dns.TypeTXT, 0)
	ts.ask("udp", "_grpc_config.big.example.test.", dns.TypeTXT, 0)
	ts.ask("udp", "example.org.", dns.TypeA, 0)
	if _, err := transferIn(t, ts.addr, axfrQuery(), ""); err != nil {
		t.Fatal(err)
	}
	// The server counts a transfer after its last message is flushed,
	// which may be after the client has read it.
	waitFor(t, "the transfer counted", func() bool {
		return promtest.Gather(t, reg)[`grpc_config_dns_transfers_total{result="ok",type="axfr"}`] == 1
	})
	ts.write("zones: [")
	ts.Reload()
	m := promtest.Gather(t, reg)
	for key, want := range map[string]float64{
		`grpc_config_dns_queries_total{proto="udp",qtype="A",rcode="NOERROR",zone="example.test."}`:    3,
		`grpc_config_dns_queries_total{proto="tcp",qtype="TXT",rcode="NXDOMAIN",zone="example.test."}`: 1,
		`grpc_config_dns_queries_total{proto="udp",qtype="A",rcode="REFUSED",zone=""}`:                 1,
		`grpc_config_dns_queries_total{proto="tcp",qtype="AXFR",rcode="NOERROR",zone="example.test."}`: 1,
		// Series with no query are not made up.
		`grpc_config_dns_queries_total{proto="udp",qtype="A",rcode="NOERROR",zone=""}`: -1,
		`grpc_config_dns_truncated_total{proto="udp"}`:                                 1,
		`grpc_config_dns_transfers_total{result="ok",type="axfr"}`:                     1,
		`grpc_config_dns_reloads_total{result="accepted"}`:                             1,
		`grpc_config_dns_reloads_total{result="rejected"}`:                             1,
		`grpc_config_dns_config_last_reload_successful`:                                0,
		`grpc_config_dns_zone_serial{zone="example.test."}`:                            float64(ts.serial()),
		// Per zone: the three A queries and the big TXT over UDP, the
		// NXDOMAIN and the transfer over TCP; the REFUSED one has no zone.
		`grpc_config_dns_response_size_bytes_count{proto="udp",zone="example.test."}`:            4,
		`grpc_config_dns_request_duration_seconds_count{proto="udp",zone="example.test."}`:       4,
		`grpc_config_dns_response_size_bytes_bucket{proto="tcp",zone="example.test.",le="+Inf"}`: 2,
	} {
		if got, ok := m[key]; want < 0 && ok {
			t.Errorf("%s = %v, want no such series", key, got)
		} else if want >= 0 && (!ok || got != want) {
			t.Errorf("%s = %v (present %v), want %v", key, got, ok, want)
		}
	}
}

// With Options.QueryLog, each answered query is one record (issue 18,
// CoreDNS's log plugin); without it, none.
func TestQueryLog(t *testing.T) {
	var logs syncBuffer
	ts := startServer(t, baseConfig("allow: [127.0.0.1]"), func(o *Options) {
		o.QueryLog = slog.New(slog.NewTextHandler(&logs, nil))
	})
	ts.ask("udp", "echo.example.test.", dns.TypeA, 0)
	ts.ask("tcp", "nope.example.test.", dns.TypeTXT, 0)
	got := logs.String()
	for _, want := range []string{
		`msg=query client=127.0.0.1 proto=udp name=echo.example.test. type=A rcode=NOERROR zone=example.test.`,
		`proto=tcp name=nope.example.test. type=TXT rcode=NXDOMAIN zone=example.test.`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("query log %q lacks %q", got, want)
		}
	}
}

// TestSecondaryGauges: a secondary that stops answering NOTIFY is seen
// behind, more every second, by the gauge the documented alert watches
// (grpc_config_dns_secondary_unacknowledged_seconds > 600); one that
// answers is at the serial served, behind by 0, again after a change;
// and a transfer over TCP records the serial its peer received.
func TestSecondaryGauges(t *testing.T) {
	lagging, acking := startSecondary(t, 1<<30), startSecondary(t, 0)
	reg := prometheus.NewRegistry()
	config := func(address string) string {
		return strings.Replace(baseConfig(`allow: [127.0.0.1], notify: ["`+lagging.addr+`", "`+acking.addr+`"]`), "192.0.2.1,", address+",", 1)
	}
	ts := startServerWith(t, config("192.0.2.1"), func(o *Options) { o.Registerer = reg }, func(s *Server) {
		s.notifier.timeout = 50 * time.Millisecond
		s.notifier.minBackoff = 10 * time.Millisecond
	})
	key := func(name, secondary string) string {
		return `grpc_config_dns_secondary_` + name + `{secondary="` + secondary + `",zone="example.test."}`
	}
	waitFor(t, "the answering secondary's acknowledgement", func() bool {
		return promtest.Gather(t, reg)[key("acknowledged_serial", acking.addr)] == float64(ts.serial())
	})
	time.Sleep(300 * time.Millisecond)
	m := promtest.Gather(t, reg)
	if behind := m[key("unacknowledged_seconds", lagging.addr)]; behind < 0.3 {
		t.Errorf("the secondary that answers no NOTIFY is behind by %vs, want >= 0.3s (since the start)", behind)
	}
	if _, ok := m[key("acknowledged_serial", lagging.addr)]; ok {
		t.Error("the secondary that answers no NOTIFY has an acknowledged serial")
	}
	if behind, ok := m[key("unacknowledged_seconds", acking.addr)]; !ok || behind != 0 {
		t.Errorf("the answering secondary is behind by %v (present %v), want 0", behind, ok)
	}

	first := m[key("unacknowledged_seconds", lagging.addr)]
	ts.write(config("192.0.2.9"))
	if err := ts.Reload(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the acknowledgement of the new serial", func() bool {
		return promtest.Gather(t, reg)[key("acknowledged_serial", acking.addr)] == float64(ts.serial())
	})
	if behind := promtest.Gather(t, reg)[key("unacknowledged_seconds", lagging.addr)]; behind <= first {
		t.Errorf("the lagging secondary's time behind went from %v to %v after a change: it counts from the first serial it missed", first, behind)
	}

	if _, err := transferIn(t, ts.addr, axfrQuery(), ""); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the transfer's gauges", func() bool {
		m := promtest.Gather(t, reg)
		return m[`grpc_config_dns_transferred_serial{peer="127.0.0.1",zone="example.test."}`] == float64(ts.serial()) &&
			m[`grpc_config_dns_transferred_timestamp_seconds{peer="127.0.0.1",zone="example.test."}`] > 1e9
	})
}
