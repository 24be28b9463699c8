package resolver

import (
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/miekg/dns"
	"google.golang.org/grpc/backoff"
	grpcresolver "google.golang.org/grpc/resolver"

	"github.com/grpc-config-dns/grpc-config-dns/internal/dnstest"
)

// The resolver's behaviour over time, run under testing/synctest against
// an in-memory DNS (dnstest.Network): the bubble's clock moves only when
// every goroutine waits, so budgets, backoff and refresh intervals are
// exact, and a test of a minute takes none. grpc_test.go runs real
// channels against a real DNS server on loopback, end to end.

const (
	cfgA = `{"methodConfig":[{"name":[{}],"timeout":"1s"}]}`
	cfgB = `{"methodConfig":[{"name":[{}],"timeout":"2s"}]}`
	cfgD = `{"methodConfig":[{"name":[{}],"timeout":"9s"}]}`
)

func oneChoice(cfg string) string { return `[{"serviceConfig":` + cfg + `}]` }

// nsAddr is where the in-memory nameserver listens.
const nsAddr = "192.0.2.53:53"

// memDNS is an in-memory network whose nameserver at nsAddr publishes
// svc.test at 192.0.2.1 and 2001:db8::1. Make it inside the bubble.
type memDNS struct {
	net    *dnstest.Network
	dns    *dnstest.Server
	target string // dnsconfig://nsAddr/svc.test:8080
}

func newMemDNS() *memDNS {
	n := dnstest.NewNetwork()
	s := n.Server(nsAddr)
	s.SetAddrs("svc.test", 60, "192.0.2.1", "2001:db8::1")
	return &memDNS{net: n, dns: s, target: "dnsconfig://" + nsAddr + "/svc.test:8080"}
}

// builder is a Builder for o whose resolvers ask the in-memory network.
func (m *memDNS) builder(o Options) *Builder {
	b := NewBuilder(o)
	b.net = m.net
	return b
}

// bubble runs f in a synctest bubble with an in-memory DNS.
func bubble(t *testing.T, f func(t *testing.T, m *memDNS)) {
	t.Helper()
	synctest.Test(t, func(t *testing.T) { f(t, newMemDNS()) })
}

var wantAddrs = []string{"192.0.2.1:8080", "[2001:db8::1]:8080"}

// since is how long after start (the bubble's clock) u came.
func since(start time.Time, u update) time.Duration { return u.at.Sub(start) }

func TestAddressesAndConfigArriveTogether(t *testing.T) {
	bubble(t, func(t *testing.T, m *memDNS) {
		m.dns.SetConfig("svc.test", 60, oneChoice(cfgA))
		cc, _ := buildFake(t, m.builder(fastOptions()), m.target)
		u := cc.waitN(t, 1, 5*time.Second)
		if !slices.Equal(u[0].addrs, wantAddrs) || u[0].config != cfgA {
			t.Fatalf("%s; want %v with the published config first", cc, wantAddrs)
		}
		time.Sleep(time.Second)
		if n := len(cc.all()); n != 1 {
			t.Errorf("%d updates, want 1: %s", n, cc)
		}
	})
}

func TestLookupsRunInParallel(t *testing.T) {
	bubble(t, func(t *testing.T, m *memDNS) {
		m.dns.SetConfig("svc.test", 60, oneChoice(cfgA))
		const delay = 300 * time.Millisecond
		for _, qt := range []uint16{dns.TypeA, dns.TypeAAAA, dns.TypeTXT} {
			m.dns.SetDelay(qt, delay)
		}
		o := fastOptions()
		o.TXTBudget = time.Second
		start := time.Now()
		cc, _ := buildFake(t, m.builder(o), m.target)
		u := cc.waitN(t, 1, 5*time.Second)
		if u[0].config != cfgA || since(start, u[0]) != delay {
			t.Fatalf("config %s after %v; three lookups of %v each in parallel take %v", u[0].config, since(start, u[0]), delay, delay)
		}
	})
}

func TestTXTSlowerThanBudgetDoesNotDelayAddresses(t *testing.T) {
	bubble(t, func(t *testing.T, m *memDNS) {
		m.dns.SetConfig("svc.test", 60, oneChoice(cfgA))
		m.dns.SetDelay(dns.TypeTXT, 800*time.Millisecond)
		o := fastOptions()
		o.TXTBudget = 100 * time.Millisecond
		start := time.Now()
		cc, _ := buildFake(t, m.builder(o), m.target)
		u := cc.waitN(t, 2, 5*time.Second)
		if el := since(start, u[0]); el != o.TXTBudget || !slices.Equal(u[0].addrs, wantAddrs) || u[0].config != "<nil>" {
			t.Errorf("first update after %v: %v %s; want the addresses with no config after the 100ms budget", el, u[0].addrs, u[0].config)
		}
		if el := since(start, u[1]); el != 800*time.Millisecond || u[1].config != cfgA || !slices.Equal(u[1].addrs, wantAddrs) {
			t.Errorf("second update after %v: %s; want the config once the TXT answer is in, at 800ms", el, u[1].config)
		}
	})
}

func TestTXTWithinBudgetIsWaitedFor(t *testing.T) {
	bubble(t, func(t *testing.T, m *memDNS) {
		m.dns.SetConfig("svc.test", 60, oneChoice(cfgA))
		m.dns.SetDelay(dns.TypeTXT, 100*time.Millisecond)
		o := fastOptions()
		o.TXTBudget = 400 * time.Millisecond
		start := time.Now()
		cc, _ := buildFake(t, m.builder(o), m.target)
		u := cc.waitN(t, 1, 5*time.Second)
		time.Sleep(time.Second)
		if u[0].config != cfgA || since(start, u[0]) != 100*time.Millisecond || len(cc.all()) != 1 {
			t.Fatalf("want one update carrying the config, at 100ms: %s", cc)
		}
	})
}

func TestOneSlowAddressFamilyDoesNotHoldTheOther(t *testing.T) {
	bubble(t, func(t *testing.T, m *memDNS) {
		m.dns.SetFault(dns.TypeAAAA, dnstest.Drop)
		o := fastOptions()
		o.TXTBudget = 100 * time.Millisecond
		o.QueryTimeout = 3 * time.Second
		start := time.Now()
		cc, _ := buildFake(t, m.builder(o), m.target)
		u := cc.waitN(t, 1, 5*time.Second)
		if el := since(start, u[0]); el != o.TXTBudget || !slices.Equal(u[0].addrs, wantAddrs[:1]) {
			t.Fatalf("first update after %v with %v; want the A address after the budget, not after the AAAA timeout", el, u[0].addrs)
		}
	})
}

func TestTXTFailureNeverFailsTheChannel(t *testing.T) {
	for _, f := range []dnstest.Fault{dnstest.ServFail, dnstest.Drop} {
		bubble(t, func(t *testing.T, m *memDNS) {
			m.dns.SetFault(dns.TypeTXT, f)
			o := fastOptions()
			o.QueryTimeout = 200 * time.Millisecond
			o.Backoff = backoff.Config{BaseDelay: 100 * time.Millisecond, Multiplier: 1, MaxDelay: 100 * time.Millisecond}
			cc, _ := buildFake(t, m.builder(o), m.target)
			u := cc.waitN(t, 1, 5*time.Second)
			if u[0].err != nil || !slices.Equal(u[0].addrs, wantAddrs) || u[0].config != "<nil>" {
				t.Fatalf("fault %v: %s; want the addresses with no config", f, cc)
			}
			// The TXT lookup is retried with backoff, and when it recovers
			// the config arrives.
			m.dns.SetFault(dns.TypeTXT, dnstest.NoFault)
			m.dns.SetConfig("svc.test", 60, oneChoice(cfgA))
			cc.waitFor(t, 3*time.Second, "with the config", func(u update) bool { return u.config == cfgA })
			for _, u := range cc.all() {
				if u.err != nil {
					t.Errorf("fault %v: ReportError(%v)", f, u.err)
				}
			}
		})
	}
}

func TestNoAddressesReportsErrorAndBacksOff(t *testing.T) {
	bubble(t, func(t *testing.T, m *memDNS) {
		m.dns.SetFault(dns.TypeA, dnstest.ServFail)
		m.dns.SetFault(dns.TypeAAAA, dnstest.ServFail)
		o := fastOptions()
		o.Backoff = backoff.Config{BaseDelay: 50 * time.Millisecond, Multiplier: 2, Jitter: 0, MaxDelay: 400 * time.Millisecond}
		cc, _ := buildFake(t, m.builder(o), m.target)
		u := cc.waitN(t, 6, 5*time.Second)
		for _, x := range u {
			if x.err == nil || !strings.Contains(x.err.Error(), "SERVFAIL") {
				t.Fatalf("want ReportError naming SERVFAIL each time: %s", cc)
			}
		}
		// Intervals 50, 100, 200, 400ms (no jitter), then capped at 400.
		for i, want := range []time.Duration{50, 100, 200, 400, 400} {
			if gap := u[i+1].at.Sub(u[i].at); gap != want*time.Millisecond {
				t.Errorf("retry %d after %v, want %vms", i+1, gap, want)
			}
		}
		m.dns.SetFault(dns.TypeA, dnstest.NoFault)
		m.dns.SetAddrs("svc.test", 60, "192.0.2.1")
		cc.waitFor(t, 3*time.Second, "with addresses", func(u update) bool { return len(u.addrs) == 1 })
	})
}

func TestNXDOMAINHostReportsError(t *testing.T) {
	bubble(t, func(t *testing.T, m *memDNS) {
		cc, _ := buildFake(t, m.builder(fastOptions()), "dnsconfig://"+nsAddr+"/missing.test")
		u := cc.waitN(t, 1, 5*time.Second)
		if u[0].err == nil || !strings.Contains(u[0].err.Error(), "does not exist (NXDOMAIN") {
			t.Fatalf("%s", cc)
		}
	})
}

// gRFC A21: what the channel gets for each kind of record.
func TestNoServiceConfigCases(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(s *dnstest.Server)
	}{
		{"no TXT record", func(s *dnstest.Server) {}},
		{"NXDOMAIN", func(s *dnstest.Server) {}}, // _grpc_config.svc.test does not exist
		{"only other TXT records", func(s *dnstest.Server) {
			s.SetTXT("_grpc_config.svc.test", 60, []string{"v=spf1 -all"})
		}},
		{"no matching choice", func(s *dnstest.Server) {
			s.SetConfig("svc.test", 60, `[{"clientLanguage":["java"],"serviceConfig":`+cfgA+`}]`)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bubble(t, func(t *testing.T, m *memDNS) {
				tc.setup(m.dns)
				b := m.builder(fastOptions())
				cc, _ := buildFake(t, b, m.target)
				u := cc.waitN(t, 1, 5*time.Second)
				if u[0].err != nil || u[0].config != "<nil>" || !slices.Equal(u[0].addrs, wantAddrs) {
					t.Fatalf("%s; want addresses and no config", cc)
				}
				st, _ := b.State(m.target)
				if st.Choice != -1 || st.LastError != nil || st.ServiceConfig != "" {
					t.Errorf("state %+v", st)
				}
			})
		})
	}
}

// refreshOptions re-resolve every 100ms.
func refreshOptions() Options {
	o := fastOptions()
	o.MinRefresh, o.MaxRefresh = 100*time.Millisecond, 100*time.Millisecond
	return o
}

func TestConfigWithdrawnFallsBackToDefault(t *testing.T) {
	t.Run("empty config", func(t *testing.T) {
		bubble(t, func(t *testing.T, m *memDNS) {
			m.dns.SetConfig("svc.test", 1, oneChoice(cfgA))
			cc, _ := buildFake(t, m.builder(refreshOptions()), m.target)
			cc.waitFor(t, 5*time.Second, "with config A", func(u update) bool { return u.config == cfgA })
			m.dns.SetConfig("svc.test", 1, "")
			// nil would leave grpc-go on config A: the empty config must be sent.
			cc.waitFor(t, 5*time.Second, "with {}", func(u update) bool { return u.config == "{}" })
		})
	})
	t.Run("Options.DefaultServiceConfig", func(t *testing.T) {
		bubble(t, func(t *testing.T, m *memDNS) {
			m.dns.SetConfig("svc.test", 1, oneChoice(cfgA))
			o := refreshOptions()
			o.DefaultServiceConfig = cfgD
			cc, _ := buildFake(t, m.builder(o), m.target)
			cc.waitFor(t, 5*time.Second, "with config A", func(u update) bool { return u.config == cfgA })
			m.dns.SetConfig("svc.test", 1, `[{"clientHostname":["other"],"serviceConfig":`+cfgA+`}]`)
			cc.waitFor(t, 5*time.Second, "with the default", func(u update) bool { return u.config == cfgD })
		})
	})
}

// TestSplitPrefixIsRead: a record whose grpc_config= is cut across its
// strings holds the config. gRFC A2 joins the strings of a record
// (RFC 4408 §3.1.3), and grpc-go joins them before it looks for the
// prefix; the resolver used to find no config there and withdraw the
// one the channel ran on ({}).
func TestSplitPrefixIsRead(t *testing.T) {
	bubble(t, func(t *testing.T, m *memDNS) {
		m.dns.SetConfig("svc.test", 1, oneChoice(cfgA))
		cc, _ := buildFake(t, m.builder(refreshOptions()), m.target)
		cc.waitFor(t, 5*time.Second, "with config A", func(u update) bool { return u.config == cfgA })
		value := "grpc_config=" + oneChoice(cfgB)
		m.dns.SetTXT("_grpc_config.svc.test", 1, []string{value[:5], value[5:14], value[14:]})
		cc.waitFor(t, 5*time.Second, "with config B", func(u update) bool { return u.config == cfgB })
		for _, u := range cc.all() {
			if u.config == "{}" {
				t.Fatalf("the config was withdrawn: %s", cc)
			}
		}
	})
}

func TestInvalidRecordKeepsPrevious(t *testing.T) {
	for _, tc := range []struct {
		name, first, want, reason string
	}{
		{"after a valid one", oneChoice(cfgA), cfgA, "keeping the previous config: "},
		{"after none", `[{"clientLanguage":["java"],"serviceConfig":{}}]`, "<nil>", "keeping the channel's default config: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bubble(t, func(t *testing.T, m *memDNS) {
				m.dns.SetConfig("svc.test", 1, tc.first)
				logs := &logRecorder{}
				o := refreshOptions()
				o.Logger = slog.New(logs)
				b := m.builder(o)
				cc, _ := buildFake(t, b, m.target)
				cc.waitN(t, 1, 5*time.Second)
				before := m.dns.Count(dns.TypeTXT, "")
				m.dns.SetConfig("svc.test", 1, `[{"serviceConfig":{"methodConfig":[{"name":[{}],"timeout":"soon"}]}}]`)
				time.Sleep(350 * time.Millisecond) // three re-resolutions
				synctest.Wait()
				if n := m.dns.Count(dns.TypeTXT, "") - before; n != 3 {
					t.Errorf("%d resolutions in 350ms, want 3", n)
				}
				if u := cc.all(); len(u) != 1 || u[0].config != tc.want {
					t.Fatalf("the channel was updated after the invalid record: %s", cc)
				}
				st, _ := b.State(m.target)
				if st.LastError == nil || !strings.Contains(st.LastError.Error(), "timeout") || !strings.HasPrefix(st.Reason, tc.reason) {
					t.Errorf("state %+v: want the invalid record in LastError and Reason", st)
				}
				if l := logs.find("ignoring an invalid service config record"); len(l) != 1 || !strings.Contains(l[0], "timeout") {
					t.Errorf("want one warning naming the problem, got %q", l)
				}
			})
		})
	}
}

func TestInvalidRecordOnNewChannel(t *testing.T) {
	bad := `[{"serviceConfig":{"loadBalancingConfig":"round_robin"}}]`
	t.Run("no default: fails, retries with backoff, recovers", func(t *testing.T) {
		bubble(t, func(t *testing.T, m *memDNS) {
			m.dns.SetConfig("svc.test", 60, bad)
			o := fastOptions()
			o.Backoff = backoff.Config{BaseDelay: 50 * time.Millisecond, Multiplier: 1.5, Jitter: 0, MaxDelay: 200 * time.Millisecond}
			b := m.builder(o)
			cc, _ := buildFake(t, b, m.target)
			u := cc.waitN(t, 1, 5*time.Second)
			if !strings.HasPrefix(u[0].config, "<error: dnsconfig: the record at _grpc_config.svc.test is invalid") {
				t.Fatalf("%s; want the parse error given to the channel", cc)
			}
			st, _ := b.State(m.target)
			if st.LastError == nil || st.Choice != -1 {
				t.Errorf("state %+v", st)
			}
			// The channel refused the state: the resolver retries with
			// backoff (50, 75, 112.5, 168.75ms), although the TTL is 60s.
			n := m.dns.Count(dns.TypeTXT, "")
			time.Sleep(500 * time.Millisecond)
			synctest.Wait()
			if got := m.dns.Count(dns.TypeTXT, ""); got != n+4 {
				t.Errorf("%d TXT queries in 500ms after the failure, want 4 retries", got-n)
			}
			m.dns.SetConfig("svc.test", 60, oneChoice(cfgA))
			cc.waitFor(t, 3*time.Second, "with the fixed config", func(u update) bool { return u.config == cfgA })
		})
	})
	t.Run("with default", func(t *testing.T) {
		bubble(t, func(t *testing.T, m *memDNS) {
			m.dns.SetConfig("svc.test", 60, bad)
			o := fastOptions()
			o.DefaultServiceConfig = cfgD
			cc, _ := buildFake(t, m.builder(o), m.target)
			u := cc.waitN(t, 1, 5*time.Second)
			if u[0].config != cfgD {
				t.Fatalf("%s; want the default config", cc)
			}
		})
	})
	t.Run("rejected by grpc-go's parser", func(t *testing.T) {
		bubble(t, func(t *testing.T, m *memDNS) {
			m.dns.SetConfig("svc.test", 60, oneChoice(`{"rejectedByGRPC":true}`))
			cc, _ := buildFake(t, m.builder(fastOptions()), m.target)
			u := cc.waitN(t, 1, 5*time.Second)
			if !strings.Contains(u[0].config, "grpc-go rejects choice 0") {
				t.Fatalf("%s", cc)
			}
		})
	})
}

// gRFC A6 allows status code names in any case; grpc-go's parser only
// takes upper case, so the resolver hands it the upper-case form.
func TestLowerCaseStatusCodesReachGrpcGo(t *testing.T) {
	bubble(t, func(t *testing.T, m *memDNS) {
		m.dns.SetConfig("svc.test", 60, `[{"serviceConfig":{"methodConfig":[{"name":[{}],"retryPolicy":{"maxAttempts":2,"initialBackoff":"1s","maxBackoff":"1s","backoffMultiplier":1,"retryableStatusCodes":["unavailable"]}}]}}]`)
		cc, _ := buildFake(t, m.builder(fastOptions()), m.target)
		u := cc.waitN(t, 1, 5*time.Second)
		if !strings.Contains(u[0].config, `"retryableStatusCodes":["UNAVAILABLE"]`) {
			t.Fatalf("%s; want the status code upper-cased", cc)
		}
	})
}

// Only the chosen choice's service config is validated (gRFC A21).
func TestOnlyChosenConfigIsValidated(t *testing.T) {
	bubble(t, func(t *testing.T, m *memDNS) {
		m.dns.SetConfig("svc.test", 60, `[{"clientLanguage":["java"],"serviceConfig":{"methodConfig":[{"timeout":"never"}]}},{"serviceConfig":`+cfgA+`}]`)
		b := m.builder(fastOptions())
		cc, _ := buildFake(t, b, m.target)
		if u := cc.waitN(t, 1, 5*time.Second); u[0].config != cfgA {
			t.Fatalf("%s", cc)
		}
		if st, _ := b.State(m.target); st.Choice != 1 {
			t.Errorf("choice %d, want 1", st.Choice)
		}
	})
}

func TestSelectionSkipsOtherClients(t *testing.T) {
	bubble(t, func(t *testing.T, m *memDNS) {
		// Bucket 50, hostname client-1, language go.
		m.dns.SetConfig("svc.test", 60, `[
		{"clientLanguage":["java","c++"],"serviceConfig":{"methodConfig":[{"name":[{}],"timeout":"11s"}]}},
		{"percentage":49,"serviceConfig":{"methodConfig":[{"name":[{}],"timeout":"12s"}]}},
		{"clientHostname":["client-2"],"serviceConfig":{"methodConfig":[{"name":[{}],"timeout":"13s"}]}},
		{"clientLanguage":["GO"],"percentage":50,"clientHostname":["client-1"],"serviceConfig":`+cfgA+`},
		{"serviceConfig":`+cfgB+`}]`)
		logs := &logRecorder{}
		o := fastOptions()
		o.Logger = slog.New(logs)
		b := m.builder(o)
		cc, _ := buildFake(t, b, m.target)
		if u := cc.waitN(t, 1, 5*time.Second); u[0].config != cfgA {
			t.Fatalf("%s; want choice 3", cc)
		}
		st, _ := b.State(m.target)
		if st.Choice != 3 || st.Bucket != 50 || !strings.Contains(st.Reason, "bucket 50 <= percentage 50") {
			t.Errorf("state %+v", st)
		}
		l := logs.find("service config changed")
		if len(l) != 1 || !strings.Contains(l[0], "choice=3") || !strings.Contains(l[0], `clientHostname ["client-1"] includes "client-1"`) ||
			!strings.Contains(l[0], "NO: bucket 50 > percentage 49") || !strings.Contains(l[0], `NO: clientLanguage ["java", "c++"] does not include "go"`) {
			t.Errorf("log %q: want the chosen index and why", l)
		}
	})
}

func TestBucketDrawnOncePerProcess(t *testing.T) {
	o := fastOptions()
	o.Bucket = 0
	c1, err := o.resolve()
	if err != nil {
		t.Fatal(err)
	}
	c2, _ := o.resolve()
	if c1.bucket != c2.bucket || c1.bucket < 1 || c1.bucket > 100 || c1.bucket != processBucket() {
		t.Fatalf("buckets %d and %d", c1.bucket, c2.bucket)
	}
	// Re-resolution never redraws it: a record at exactly this bucket
	// keeps matching.
	bubble(t, func(t *testing.T, m *memDNS) {
		m.dns.SetConfig("svc.test", 1, `[{"percentage":`+itoa(c1.bucket)+`,"serviceConfig":`+cfgA+`},{"serviceConfig":`+cfgB+`}]`)
		cc, _ := buildFake(t, m.builder(Options{MinRefresh: 50 * time.Millisecond, MaxRefresh: 50 * time.Millisecond}), m.target)
		time.Sleep(time.Second) // 20 resolutions
		synctest.Wait()
		if n := m.dns.Count(dns.TypeTXT, ""); n != 21 {
			t.Errorf("%d resolutions in 1s, want 21", n)
		}
		for _, u := range cc.all() {
			if u.config != cfgA {
				t.Fatalf("flipped: %s", cc)
			}
		}
	})
}

func itoa(i int) string { return strconv.Itoa(i) }

func TestRefreshFollowsTTLWithinBounds(t *testing.T) {
	for _, tc := range []struct {
		name     string
		ttl      uint32
		min, max time.Duration
		want     time.Duration
	}{
		{"TTL", 1, 100 * time.Millisecond, time.Minute, time.Second},
		{"TTL 0 raised to min", 0, 300 * time.Millisecond, time.Minute, 300 * time.Millisecond},
		{"long TTL lowered to max", 3600, 100 * time.Millisecond, 400 * time.Millisecond, 400 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bubble(t, func(t *testing.T, m *memDNS) {
				m.dns.SetAddrs("svc.test", tc.ttl, "192.0.2.1")
				m.dns.SetConfig("svc.test", tc.ttl, oneChoice(cfgA))
				o := fastOptions()
				o.MinRefresh, o.MaxRefresh = tc.min, tc.max
				b := m.builder(o)
				target := "dnsconfig://" + nsAddr + "/svc.test"
				buildFake(t, b, target)
				time.Sleep(2*tc.want + tc.want/2)
				synctest.Wait()
				var at []time.Time
				for _, q := range m.dns.Queries() {
					if q.Type == dns.TypeA {
						at = append(at, q.At)
					}
				}
				if len(at) != 3 {
					t.Fatalf("%d A queries in %v, want 3", len(at), 2*tc.want+tc.want/2)
				}
				for i := 1; i < 3; i++ {
					if gap := at[i].Sub(at[i-1]); gap != tc.want {
						t.Errorf("re-resolved after %v, want %v", gap, tc.want)
					}
				}
				st, _ := b.State(target)
				// The AAAA answer is negative, cached for the SOA's 30s minimum.
				if want := min(time.Duration(tc.ttl)*time.Second, 30*time.Second); st.TTL != want {
					t.Errorf("state TTL %v, want %v", st.TTL, want)
				}
				if want := at[2].Add(tc.want); !st.NextRefresh.Equal(want) {
					t.Errorf("state NextRefresh %v, want %v", st.NextRefresh, want)
				}
			})
		})
	}
}

func TestResolveNowIsRateLimited(t *testing.T) {
	bubble(t, func(t *testing.T, m *memDNS) {
		o := fastOptions()
		o.MinRefresh, o.MaxRefresh = time.Minute, time.Minute
		o.MinResolveNowInterval = 400 * time.Millisecond
		start := time.Now()
		cc, r := buildFake(t, m.builder(o), m.target)
		cc.waitN(t, 1, 5*time.Second)
		for time.Since(start) < 1100*time.Millisecond {
			r.ResolveNow(grpcresolver.ResolveNowOptions{})
			time.Sleep(5 * time.Millisecond)
		}
		var at []time.Duration
		for _, q := range m.dns.Queries() {
			if q.Type == dns.TypeA {
				at = append(at, q.At.Sub(start))
			}
		}
		// Resolutions at 0, 400 and 800ms; the next one is due at 1200ms.
		if want := []time.Duration{0, 400 * time.Millisecond, 800 * time.Millisecond}; !slices.Equal(at, want) {
			t.Fatalf("resolutions at %v in 1.1s of ResolveNow calls, want %v (one per 400ms)", at, want)
		}
		// Without ResolveNow, the next one waits for the refresh.
		time.Sleep(time.Minute + 200*time.Millisecond)
		synctest.Wait()
		if n := m.dns.Count(dns.TypeA, ""); n != 5 {
			t.Errorf("%d resolutions after a quiet minute, want 5 (at 1.2s and 61.2s)", n)
		}
	})
}

func TestCloseLeavesNoGoroutines(t *testing.T) {
	bubble(t, func(t *testing.T, m *memDNS) {
		m.dns.SetConfig("svc.test", 0, oneChoice(cfgA))
		const silent = "192.0.2.54:53"
		m.net.Silent(silent)
		o := fastOptions()
		o.QueryTimeout = 10 * time.Second
		b := m.builder(o)
		var rs []grpcresolver.Resolver
		for range 5 {
			_, r := buildFake(t, b, m.target)
			rs = append(rs, r)
		}
		// Resolvers stuck in a query to a server that never answers.
		for range 5 {
			_, r := buildFake(t, b, "dnsconfig://"+silent+"/svc.test")
			rs = append(rs, r)
		}
		_, r := buildFake(t, b, "dnsconfig:///192.0.2.5:80")
		rs = append(rs, r)
		time.Sleep(300 * time.Millisecond)
		synctest.Wait()
		start := time.Now()
		for _, r := range rs {
			r.Close()
		}
		if el := time.Since(start); el != 0 {
			t.Errorf("Close took %v with queries in flight", el)
		}
		if _, ok := b.State(m.target); ok {
			t.Error("State still reports a closed resolver")
		}
		// synctest.Test fails if any goroutine of the resolvers is left.
	})
}

func TestIPLiteralNeedsNoDNS(t *testing.T) {
	for _, tc := range []struct{ target, want string }{
		{"dnsconfig:///192.0.2.5", "192.0.2.5:443"},
		{"dnsconfig:///192.0.2.5:80", "192.0.2.5:80"},
		{"dnsconfig:///[2001:db8::5]:80", "[2001:db8::5]:80"},
		{"dnsconfig:///2001:db8::5", "[2001:db8::5]:443"},
	} {
		bubble(t, func(t *testing.T, m *memDNS) {
			o := fastOptions()
			o.Nameservers = []string{"192.0.2.99"} // nothing there
			b := m.builder(o)
			cc, _ := buildFake(t, b, tc.target)
			u := cc.waitN(t, 1, time.Second)
			if len(u[0].addrs) != 1 || u[0].addrs[0] != tc.want || u[0].config != "<nil>" {
				t.Errorf("%s: %s", tc.target, cc)
			}
			if st, ok := b.State(tc.target); !ok || st.Addresses[0] != tc.want {
				t.Errorf("%s: state %+v", tc.target, st)
			}
			if q := m.dns.Queries(); len(q) != 0 {
				t.Errorf("%s: queries %v", tc.target, q)
			}
		})
	}
}

func TestDisableServiceConfigSkipsTXT(t *testing.T) {
	bubble(t, func(t *testing.T, m *memDNS) {
		m.dns.SetConfig("svc.test", 60, oneChoice(cfgA))
		u, _ := urlParse(m.target)
		cc := newFakeCC()
		r, err := m.builder(fastOptions()).Build(grpcresolver.Target{URL: *u}, cc, grpcresolver.BuildOptions{DisableServiceConfig: true})
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		if x := cc.waitN(t, 1, 5*time.Second); x[0].config != "<nil>" {
			t.Fatalf("%s", cc)
		}
		if n := m.dns.Count(dns.TypeTXT, ""); n != 0 {
			t.Errorf("%d TXT queries with service config disabled", n)
		}
	})
}

func TestNameserversFromOptionsAndResolvConf(t *testing.T) {
	bubble(t, func(t *testing.T, m *memDNS) {
		m.dns.SetConfig("svc.test", 60, oneChoice(cfgA))
		o := fastOptions()
		o.Nameservers = []string{"192.0.2.99", nsAddr} // nothing at the first
		cc, _ := buildFake(t, m.builder(o), "dnsconfig:///svc.test:8080")
		if u := cc.waitN(t, 1, 5*time.Second); u[0].config != cfgA || !slices.Equal(u[0].addrs, wantAddrs) {
			t.Fatalf("%s", cc)
		}
	})

	dir := t.TempDir()
	rc := filepath.Join(dir, "resolv.conf")
	os.WriteFile(rc, []byte("# test\nsearch example.com\nnameserver 192.0.2.53\nnameserver 2001:db8::53\noptions ndots:2\n"), 0o644)
	o := fastOptions()
	o.ResolvConf = rc
	c, err := o.resolve()
	if err != nil {
		t.Fatal(err)
	}
	if got, err := c.lookupConf(target{host: "svc.test"}); err != nil || !slices.Equal(got.servers, []string{"192.0.2.53:53", "[2001:db8::53]:53"}) ||
		!slices.Equal(got.names, []string{"svc.test.example.com.", "svc.test."}) {
		t.Errorf("servers and names from resolv.conf: %+v, %v", got, err)
	}
	o.ResolvConf = filepath.Join(dir, "missing")
	u, _ := urlParse("dnsconfig:///svc.test")
	_, err = NewBuilder(o).Build(grpcresolver.Target{URL: *u}, newFakeCC(), grpcresolver.BuildOptions{})
	if err == nil || !strings.Contains(err.Error(), "Options.Nameservers") {
		t.Errorf("missing resolv.conf: %v", err)
	}
	os.WriteFile(rc, []byte("nameserver fe80::1%eth0\n"), 0o644)
	o.ResolvConf = rc
	_, err = NewBuilder(o).Build(grpcresolver.Target{URL: *u}, newFakeCC(), grpcresolver.BuildOptions{})
	if err == nil || !strings.Contains(err.Error(), "skipped fe80::1%eth0 (zoned IPv6") {
		t.Errorf("resolv.conf with a zoned nameserver only: %v", err)
	}
}

func TestDynamicParametersPerAuthority(t *testing.T) {
	o := fastOptions()
	o.DynamicParameters = map[string]string{"env": "prod"}
	o.AuthorityParameters = map[string]map[string]string{"192.0.2.53": {"env": "test"}, "[2001:db8::53]:5353": {"zone": "b"}}
	c, err := o.resolve()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		authority string
		want      map[string]string
	}{
		{"", map[string]string{"env": "prod"}},
		{"192.0.2.53:53", map[string]string{"env": "test"}},
		{"[2001:db8::53]:5353", map[string]string{"zone": "b"}}, // no merging with the global ones
		{"192.0.2.54:53", map[string]string{"env": "prod"}},
	} {
		got := c.client(tc.authority).Params
		if len(got) != len(tc.want) {
			t.Errorf("%q: %v, want %v", tc.authority, got, tc.want)
		}
		for k, v := range tc.want {
			if got[k] != v {
				t.Errorf("%q: %v, want %v", tc.authority, got, tc.want)
			}
		}
	}
}

func TestOptionsValidate(t *testing.T) {
	for _, tc := range []struct {
		o    Options
		want string
	}{
		{Options{Bucket: 101}, "Bucket is 101"},
		{Options{Bucket: -1}, "Bucket is -1"},
		{Options{TXTBudget: -1}, "TXTBudget"},
		{Options{MinRefresh: time.Hour, MaxRefresh: time.Minute}, "MinRefresh"},
		{Options{Nameservers: []string{"ns.example"}}, "Nameservers[0]"},
		{Options{AuthorityParameters: map[string]map[string]string{"x": nil}}, "AuthorityParameters key"},
		{Options{DefaultServiceConfig: "{"}, "not valid JSON"},
		{Options{DefaultServiceConfig: `{"methodConfig":[{"timeout":"x"}]}`}, "DefaultServiceConfig is invalid"},
		{Options{Backoff: backoff.Config{BaseDelay: time.Second, MaxDelay: time.Millisecond, Multiplier: 2}}, "Backoff"},
		{Options{Attempts: -2}, "Attempts"},
	} {
		err := tc.o.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want an error about %s", tc.o, err, tc.want)
		}
		// Build reports it too.
		u, _ := urlParse("dnsconfig:///svc.test")
		if _, err := NewBuilder(tc.o).Build(grpcresolver.Target{URL: *u}, newFakeCC(), grpcresolver.BuildOptions{}); err == nil {
			t.Errorf("%+v: Build accepted it", tc.o)
		}
	}
	if err := (Options{}).Validate(); err != nil {
		t.Errorf("zero Options: %v", err)
	}
}

func TestBackoffGrowsWithJitter(t *testing.T) {
	c, _ := Options{Backoff: backoff.Config{BaseDelay: time.Second, Multiplier: 2, Jitter: 0.2, MaxDelay: 10 * time.Second}}.resolve()
	for retries, want := range []time.Duration{1, 2, 4, 8, 10, 10} {
		seen := map[time.Duration]bool{}
		for range 50 {
			d := c.backoff(retries)
			seen[d] = true
			lo, hi := time.Duration(float64(want*time.Second)*0.8), time.Duration(float64(want*time.Second)*1.2)
			if d < lo || d > hi {
				t.Fatalf("retry %d: %v, want %v ±20%%", retries, d, want*time.Second)
			}
		}
		if len(seen) < 10 {
			t.Errorf("retry %d: only %d distinct delays: no jitter?", retries, len(seen))
		}
	}
}

// After a reported error the channel may be failing calls: when DNS
// recovers, the state is sent again even if it equals the last one.
func TestRecoveryAfterErrorResendsState(t *testing.T) {
	bubble(t, func(t *testing.T, m *memDNS) {
		o := refreshOptions()
		o.Backoff = backoff.Config{BaseDelay: 50 * time.Millisecond, Multiplier: 1, MaxDelay: 50 * time.Millisecond}
		m.dns.SetFault(dns.TypeA, dnstest.ServFail)
		m.dns.SetFault(dns.TypeAAAA, dnstest.ServFail)
		cc, _ := buildFake(t, m.builder(o), m.target)
		i := cc.waitFor(t, 5*time.Second, "ReportError", func(u update) bool { return u.err != nil })
		m.dns.SetFault(dns.TypeA, dnstest.NoFault)
		m.dns.SetFault(dns.TypeAAAA, dnstest.NoFault)
		j := cc.waitFor(t, 5*time.Second, "with the addresses again", func(u update) bool {
			return u.err == nil && slices.Equal(u.addrs, wantAddrs) && u.at.After(cc.all()[i].at)
		})
		if j <= i {
			t.Fatalf("%s", cc)
		}
	})
}

// A running channel keeps its addresses when their lookups fail (a
// failure says nothing about them): no error, no update; State says what
// failed, and the lookups are retried with backoff.
func TestFailedAddressLookupsKeepRunningChannel(t *testing.T) {
	bubble(t, func(t *testing.T, m *memDNS) {
		o := refreshOptions()
		o.Backoff = backoff.Config{BaseDelay: 50 * time.Millisecond, Multiplier: 1, MaxDelay: 50 * time.Millisecond}
		b := m.builder(o)
		cc, _ := buildFake(t, b, m.target)
		cc.waitN(t, 1, 5*time.Second)
		m.dns.SetFault(dns.TypeA, dnstest.ServFail)
		m.dns.SetFault(dns.TypeAAAA, dnstest.ServFail)
		// The next resolution is due at 100ms; then retries every 50ms.
		time.Sleep(325 * time.Millisecond)
		synctest.Wait()
		if u := cc.all(); len(u) != 1 {
			t.Errorf("the channel was told of the failed lookups: %s", cc)
		}
		if st, _ := b.State(m.target); st.LastError == nil || !slices.Equal(st.Addresses, wantAddrs) {
			t.Errorf("state %+v: want the addresses kept and the failure in LastError", st)
		}
		if n := m.dns.Count(dns.TypeA, ""); n != 1+5 {
			t.Errorf("%d A queries, want the first and 5 more (at 100, 150 … 300ms)", n)
		}
	})
}

// On re-resolution an address family slower than TXTBudget (a cache miss
// at TTL expiry) must not drop out of a running channel for a moment: its
// connections would be closed and opened again.
func TestSlowFamilyDoesNotDropOutOfRunningChannel(t *testing.T) {
	bubble(t, func(t *testing.T, m *memDNS) {
		o := refreshOptions()
		o.TXTBudget = 30 * time.Millisecond
		cc, _ := buildFake(t, m.builder(o), m.target)
		cc.waitN(t, 1, 5*time.Second)
		m.dns.SetAddrs("svc.test", 1, "192.0.2.1", "2001:db8::1", "192.0.2.9")
		m.dns.SetDelay(dns.TypeA, 300*time.Millisecond)
		cc.waitFor(t, 5*time.Second, "the new address", func(u update) bool { return slices.Contains(u.addrs, "192.0.2.9:8080") })
		for _, u := range cc.all() {
			if len(u.addrs) < 2 {
				t.Fatalf("an update without one family: %s", cc)
			}
		}
	})
}

// A TXT lookup that keeps failing is retried with backoff, but the
// addresses are still refreshed when their TTL says so.
func TestBackoffNeverExceedsTTL(t *testing.T) {
	bubble(t, func(t *testing.T, m *memDNS) {
		m.dns.SetAddrs("svc.test", 1, "192.0.2.1")
		m.dns.SetFault(dns.TypeTXT, dnstest.Refused)
		o := fastOptions()
		o.MinRefresh = 100 * time.Millisecond
		o.Backoff = backoff.Config{BaseDelay: 10 * time.Second, Multiplier: 1, MaxDelay: 10 * time.Second}
		buildFake(t, m.builder(o), "dnsconfig://"+nsAddr+"/svc.test")
		time.Sleep(2500 * time.Millisecond)
		synctest.Wait()
		if n := m.dns.Count(dns.TypeA, ""); n != 3 {
			t.Errorf("%d A queries in 2.5s with TTL 1s and a 10s backoff, want 3", n)
		}
	})
}

// The budget starts when the addresses arrive: when a slow nameserver
// delays every answer alike, the config still comes with the addresses.
func TestBudgetCountsFromAddresses(t *testing.T) {
	bubble(t, func(t *testing.T, m *memDNS) {
		m.dns.SetConfig("svc.test", 60, oneChoice(cfgA))
		m.dns.SetDelay(dns.TypeA, 300*time.Millisecond)
		m.dns.SetDelay(dns.TypeAAAA, 300*time.Millisecond)
		m.dns.SetDelay(dns.TypeTXT, 400*time.Millisecond)
		o := fastOptions()
		o.TXTBudget = 200 * time.Millisecond
		start := time.Now()
		cc, _ := buildFake(t, m.builder(o), m.target)
		u := cc.waitN(t, 1, 5*time.Second)
		time.Sleep(time.Second)
		if u[0].config != cfgA || since(start, u[0]) != 400*time.Millisecond || len(cc.all()) != 1 {
			t.Fatalf("%s; want one update with the addresses and the config at 400ms", cc)
		}
	})
}

// When another choice with the same config is chosen, the channel is left
// alone, but State and the logs follow.
func TestSameConfigOtherChoice(t *testing.T) {
	bubble(t, func(t *testing.T, m *memDNS) {
		m.dns.SetConfig("svc.test", 1, oneChoice(cfgA))
		logs := &logRecorder{}
		o := refreshOptions()
		o.Logger = slog.New(logs)
		b := m.builder(o)
		cc, _ := buildFake(t, b, m.target)
		cc.waitFor(t, 5*time.Second, "config A", func(u update) bool { return u.config == cfgA })
		m.dns.SetConfig("svc.test", 1, `[{"clientHostname":["elsewhere"],"serviceConfig":`+cfgA+`},{"percentage":60,"serviceConfig":`+cfgA+`},{"serviceConfig":`+cfgA+`}]`)
		time.Sleep(150 * time.Millisecond)
		synctest.Wait()
		if st, _ := b.State(m.target); st.Choice != 1 {
			t.Errorf("State.Choice = %d, want 1 (bucket 50, percentage 60)", st.Choice)
		}
		if l := logs.find("service config choice changed"); len(l) != 1 || !strings.Contains(l[0], "choice=1") {
			t.Errorf("logs %q", l)
		}
		if u := cc.all(); len(u) != 1 {
			t.Errorf("the channel was updated for the same config: %s", cc)
		}
	})
}

func TestMaxRefreshAloneBelowDefaultMin(t *testing.T) {
	if err := (Options{MaxRefresh: 3 * time.Second}).Validate(); err != nil {
		t.Errorf("MaxRefresh 3s alone: %v", err)
	}
	if err := (Options{MinRefresh: 4 * time.Second, MaxRefresh: 3 * time.Second}).Validate(); err == nil {
		t.Error("MinRefresh above MaxRefresh, both set: accepted")
	}
}

// TestTruncatedTCPAnswerKeepsConfig: a channel with a published config
// keeps it when the TXT answer comes back truncated over TCP too: that is
// a failed lookup (gRFC A21: keep the last config), not "no record".
func TestTruncatedTCPAnswerKeepsConfig(t *testing.T) {
	bubble(t, func(t *testing.T, m *memDNS) {
		m.dns.SetConfig("svc.test", 1, oneChoice(cfgA))
		cc, _ := buildFake(t, m.builder(refreshOptions()), m.target)
		cc.waitFor(t, 5*time.Second, "with config A", func(u update) bool { return u.config == cfgA })
		before := m.dns.Count(dns.TypeTXT, "tcp")
		m.dns.SetFault(dns.TypeTXT, dnstest.TruncateAll)
		time.Sleep(time.Second)
		synctest.Wait()
		if m.dns.Count(dns.TypeTXT, "tcp") < before+3 {
			t.Fatalf("the resolver did not ask again over TCP")
		}
		for _, u := range cc.all() {
			if u.config != cfgA {
				t.Fatalf("the config changed after truncated TCP answers: %s", cc)
			}
		}
	})
}
