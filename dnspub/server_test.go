package dnspub

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/grpc-config-dns/grpc-config-dns/dnspub/zone"
)

const testSecret = "c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0cw=="

// baseConfig is the zone most tests serve; %s is the extra transfer
// settings.
func baseConfig(transfer string) string {
	return `
server: {tcpIdleTimeout: 1s}
tsigKeys:
  - {name: xfr-key, secret: "` + testSecret + `"}
zones:
  - origin: example.test.
    ttl: 300
    soa: {minimum: 60}
    nameservers: [{name: ns1, addresses: [192.0.2.53]}]
    transfer: {` + transfer + `}
    services:
      - name: echo
        addresses: [192.0.2.1, "2001:db8::1"]
        ttl: 30
        serviceConfig: {loadBalancingConfig: [{round_robin: {}}]}
      - name: big
        serviceConfig:
          methodConfig: [{name: [{service: ` + strings.Repeat("x", 1250) + `}]}]
      - {name: a.b, addresses: [192.0.2.3]}
`
}

type testServer struct {
	*Server
	t    testing.TB
	file string
	addr string
	logs *syncBuffer
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// startServer serves config from a file in a temporary directory on
// 127.0.0.1:0.
func startServer(t testing.TB, config string, mod func(*Options)) *testServer {
	t.Helper()
	return startServerWith(t, config, mod, nil)
}

// startServerWith is startServer with a hook run between New and Start.
func startServerWith(t testing.TB, config string, mod func(*Options), before func(*Server)) *testServer {
	t.Helper()
	return startServerAt(t, filepath.Join(t.TempDir(), "publisher.yaml"), config, mod, before)
}

// startServerAt is startServerWith with the config at file (which is
// written unless config is "": the state file is beside it).
func startServerAt(t testing.TB, file, config string, mod func(*Options), before func(*Server)) *testServer {
	t.Helper()
	ts := &testServer{t: t, file: file, logs: &syncBuffer{}}
	if config != "" {
		if err := os.WriteFile(ts.file, []byte(config), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	opts := Options{
		ConfigFile:    ts.file,
		Listen:        "127.0.0.1:0",
		Logger:        slog.New(slog.NewTextHandler(ts.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		WatchInterval: -1,
	}
	if mod != nil {
		mod(&opts)
	}
	s, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ts.Server = s
	if before != nil {
		before(s)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	ts.addr = s.Addr().String()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		if t.Failed() {
			t.Logf("server log:\n%s", ts.logs.String())
		}
	})
	return ts
}

// write replaces the config file atomically.
func (ts *testServer) write(config string) {
	ts.t.Helper()
	tmp := ts.file + ".tmp"
	if err := os.WriteFile(tmp, []byte(config), 0o644); err != nil {
		ts.t.Fatal(err)
	}
	if err := os.Rename(tmp, ts.file); err != nil {
		ts.t.Fatal(err)
	}
}

func (ts *testServer) ask(net, name string, qtype uint16, edns int) *dns.Msg {
	ts.t.Helper()
	m := new(dns.Msg)
	m.SetQuestion(name, qtype)
	if edns > 0 {
		m.SetEdns0(uint16(edns), false)
	}
	r, err := ts.exchange(net, m)
	if err != nil {
		ts.t.Fatalf("%s %s over %s: %v", name, dns.TypeToString[qtype], net, err)
	}
	return r
}

func (ts *testServer) exchange(net string, m *dns.Msg) (*dns.Msg, error) {
	c := &dns.Client{Net: net, Timeout: 2 * time.Second, UDPSize: 65535}
	r, _, err := c.Exchange(m, ts.addr)
	return r, err
}

func (ts *testServer) serial() uint32 { return ts.Serials()["example.test."] }

func TestQueriesOverUDPAndTCP(t *testing.T) {
	for _, portable := range []bool{false, true} {
		t.Run(fmt.Sprintf("portable=%v", portable), func(t *testing.T) {
			ts := startServer(t, baseConfig(""), func(o *Options) { o.PortableUDP = portable })
			for _, proto := range []string{"udp", "tcp"} {
				r := ts.ask(proto, "ECHO.example.test.", dns.TypeA, 0)
				if !r.Authoritative || r.RecursionAvailable || len(r.Answer) != 1 || r.Question[0].Name != "ECHO.example.test." {
					t.Errorf("%s A: %v", proto, r)
				}
				r = ts.ask(proto, "echo.example.test.", dns.TypeAAAA, 1232)
				if len(r.Answer) != 1 || r.IsEdns0() == nil {
					t.Errorf("%s AAAA: %v", proto, r)
				}
				r = ts.ask(proto, "_grpc_config.echo.example.test.", dns.TypeTXT, 0)
				if len(r.Answer) != 1 || strings.Join(zone.RawTXT(r.Answer[0].(*dns.TXT)), "") != `grpc_config=[{"serviceConfig":{"loadBalancingConfig":[{"round_robin":{}}]}}]` {
					t.Errorf("%s TXT: %v", proto, r)
				}
				r = ts.ask(proto, "nope.example.test.", dns.TypeA, 0)
				if r.Rcode != dns.RcodeNameError || len(r.Ns) != 1 || r.Ns[0].Header().Ttl != 60 {
					t.Errorf("%s NXDOMAIN: %v", proto, r)
				}
				r = ts.ask(proto, "b.example.test.", dns.TypeA, 0)
				if r.Rcode != dns.RcodeSuccess || len(r.Answer) != 0 || len(r.Ns) != 1 {
					t.Errorf("%s NODATA at an empty non-terminal: %v", proto, r)
				}
				r = ts.ask(proto, "example.org.", dns.TypeA, 0)
				if r.Rcode != dns.RcodeRefused || r.Authoritative {
					t.Errorf("%s REFUSED: %v", proto, r)
				}
				r = ts.ask(proto, "echo.example.test.", dns.TypeANY, 0)
				if len(r.Answer) != 1 || r.Answer[0].Header().Rrtype != dns.TypeA {
					t.Errorf("%s ANY: %v", proto, r)
				}
			}
			// EDNS: the buffer size is clamped to the cap (1232), so the
			// 1.3 KB TXT is truncated over UDP even at 4096, then fits over TCP.
			r := ts.ask("udp", "_grpc_config.big.example.test.", dns.TypeTXT, 4096)
			if !r.Truncated || len(r.Answer) != 0 || r.IsEdns0().UDPSize() != 1232 {
				t.Errorf("big TXT over UDP: %v", r)
			}
			r = ts.ask("tcp", "_grpc_config.big.example.test.", dns.TypeTXT, 0)
			if r.Truncated || len(r.Answer) != 1 {
				t.Errorf("big TXT over TCP: %v", r)
			}
			bad := new(dns.Msg)
			bad.SetQuestion("echo.example.test.", dns.TypeA)
			bad.SetEdns0(1232, false)
			bad.IsEdns0().SetVersion(1)
			if r, err := ts.exchange("udp", bad); err != nil || r.Rcode != dns.RcodeBadVers {
				t.Errorf("BADVERS: %v %v", r, err)
			}
			upd := new(dns.Msg)
			upd.SetUpdate("example.test.")
			if r, err := ts.exchange("udp", upd); err != nil || r.Rcode != dns.RcodeNotImplemented {
				t.Errorf("UPDATE: %v %v", r, err)
			}
		})
	}
}

// TestTruncatedThenTCP: a client without EDNS gets TC=1 and retries over
// TCP, as dig and stub resolvers do.
func TestTruncatedThenTCP(t *testing.T) {
	ts := startServer(t, baseConfig(""), nil)
	m := new(dns.Msg)
	m.SetQuestion("_grpc_config.big.example.test.", dns.TypeTXT)
	c := &dns.Client{Net: "udp", Timeout: 2 * time.Second}
	r, _, err := c.Exchange(m, ts.addr)
	if err != nil || !r.Truncated || len(r.Answer) != 0 {
		t.Fatalf("UDP: %v %v", r, err)
	}
	c.Net = "tcp"
	r, _, err = c.Exchange(m, ts.addr)
	if err != nil || r.Truncated || len(r.Answer) != 1 || len(strings.Join(zone.RawTXT(r.Answer[0].(*dns.TXT)), "")) < 1250 {
		t.Fatalf("TCP: %v %v", r, err)
	}
	if got := ts.metrics.stats.truncated[protoUDP].Load(); got != 1 {
		t.Errorf("truncations counted: %d", got)
	}
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }
