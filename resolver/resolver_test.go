package resolver

import (
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	"google.golang.org/grpc/backoff"
	grpcresolver "google.golang.org/grpc/resolver"

	"github.com/grpc-config-dns/grpc-config-dns/internal/dnstest"
)

const (
	cfgA = `{"methodConfig":[{"name":[{}],"timeout":"1s"}]}`
	cfgB = `{"methodConfig":[{"name":[{}],"timeout":"2s"}]}`
	cfgD = `{"methodConfig":[{"name":[{}],"timeout":"9s"}]}`
)

func oneChoice(cfg string) string { return `[{"serviceConfig":` + cfg + `}]` }

// zone starts a DNS server with svc.test at 192.0.2.1 and 2001:db8::1.
func zone(t *testing.T) (*dnstest.Server, string) {
	s := dnstest.Start(t)
	s.SetAddrs("svc.test", 60, "192.0.2.1", "2001:db8::1")
	return s, "dnsconfig://" + s.Addr + "/svc.test:8080"
}

var wantAddrs = []string{"192.0.2.1:8080", "[2001:db8::1]:8080"}

func TestAddressesAndConfigArriveTogether(t *testing.T) {
	s, target := zone(t)
	s.SetConfig("svc.test", 60, oneChoice(cfgA))
	cc, _ := buildFake(t, NewBuilder(fastOptions()), target)
	u := cc.waitN(t, 1, 5*time.Second)
	if !slices.Equal(u[0].addrs, wantAddrs) || u[0].config != cfgA {
		t.Fatalf("%s; want %v with the published config first", cc, wantAddrs)
	}
	time.Sleep(200 * time.Millisecond)
	if n := len(cc.all()); n != 1 {
		t.Errorf("%d updates, want 1: %s", n, cc)
	}
}

func TestLookupsRunInParallel(t *testing.T) {
	s, target := zone(t)
	s.SetConfig("svc.test", 60, oneChoice(cfgA))
	const delay = 300 * time.Millisecond
	for _, qt := range []uint16{dns.TypeA, dns.TypeAAAA, dns.TypeTXT} {
		s.SetDelay(qt, delay)
	}
	o := fastOptions()
	o.TXTBudget = time.Second
	start := time.Now()
	cc, _ := buildFake(t, NewBuilder(o), target)
	u := cc.waitN(t, 1, 5*time.Second)
	el := u[0].at.Sub(start)
	if u[0].config != cfgA || el > 2*delay {
		t.Fatalf("config %s after %v; three lookups of %v each in parallel take about %v", u[0].config, el, delay, delay)
	}
}

func TestTXTSlowerThanBudgetDoesNotDelayAddresses(t *testing.T) {
	s, target := zone(t)
	s.SetConfig("svc.test", 60, oneChoice(cfgA))
	s.SetDelay(dns.TypeTXT, 800*time.Millisecond)
	o := fastOptions()
	o.TXTBudget = 100 * time.Millisecond
	o.QueryTimeout = 2 * time.Second
	start := time.Now()
	cc, _ := buildFake(t, NewBuilder(o), target)
	u := cc.waitN(t, 2, 5*time.Second)
	if el := u[0].at.Sub(start); el > 500*time.Millisecond || !slices.Equal(u[0].addrs, wantAddrs) || u[0].config != "<nil>" {
		t.Errorf("first update after %v: %v %s; want the addresses with no config after the 100ms budget", el, u[0].addrs, u[0].config)
	}
	if el := u[1].at.Sub(start); el < 800*time.Millisecond || u[1].config != cfgA || !slices.Equal(u[1].addrs, wantAddrs) {
		t.Errorf("second update after %v: %s; want the config once the TXT answer is in", el, u[1].config)
	}
}

func TestTXTWithinBudgetIsWaitedFor(t *testing.T) {
	s, target := zone(t)
	s.SetConfig("svc.test", 60, oneChoice(cfgA))
	s.SetDelay(dns.TypeTXT, 100*time.Millisecond)
	o := fastOptions()
	o.TXTBudget = 400 * time.Millisecond
	cc, _ := buildFake(t, NewBuilder(o), target)
	u := cc.waitN(t, 1, 5*time.Second)
	time.Sleep(100 * time.Millisecond)
	if u[0].config != cfgA || len(cc.all()) != 1 {
		t.Fatalf("want one update carrying the config: %s", cc)
	}
}

func TestOneSlowAddressFamilyDoesNotHoldTheOther(t *testing.T) {
	s, target := zone(t)
	s.SetFault(dns.TypeAAAA, dnstest.Drop)
	o := fastOptions()
	o.TXTBudget = 100 * time.Millisecond
	o.QueryTimeout = 3 * time.Second
	start := time.Now()
	cc, _ := buildFake(t, NewBuilder(o), target)
	u := cc.waitN(t, 1, 5*time.Second)
	if el := u[0].at.Sub(start); el > time.Second || !slices.Equal(u[0].addrs, wantAddrs[:1]) {
		t.Fatalf("first update after %v with %v; want the A address after the budget, not after the AAAA timeout", el, u[0].addrs)
	}
}

func TestTXTFailureNeverFailsTheChannel(t *testing.T) {
	for _, f := range []dnstest.Fault{dnstest.ServFail, dnstest.Drop} {
		s, target := zone(t)
		s.SetFault(dns.TypeTXT, f)
		o := fastOptions()
		o.QueryTimeout = 200 * time.Millisecond
		o.Backoff = backoff.Config{BaseDelay: 100 * time.Millisecond, Multiplier: 1, MaxDelay: 100 * time.Millisecond}
		b := NewBuilder(o)
		cc, _ := buildFake(t, b, target)
		u := cc.waitN(t, 1, 5*time.Second)
		if u[0].err != nil || !slices.Equal(u[0].addrs, wantAddrs) || u[0].config != "<nil>" {
			t.Fatalf("fault %v: %s; want the addresses with no config", f, cc)
		}
		// The TXT lookup is retried with backoff, and when it recovers the
		// config arrives.
		s.SetFault(dns.TypeTXT, dnstest.NoFault)
		s.SetConfig("svc.test", 60, oneChoice(cfgA))
		cc.waitFor(t, 3*time.Second, "with the config", func(u update) bool { return u.config == cfgA })
		for _, u := range cc.all() {
			if u.err != nil {
				t.Errorf("fault %v: ReportError(%v)", f, u.err)
			}
		}
	}
}

func TestNoAddressesReportsErrorAndBacksOff(t *testing.T) {
	s := dnstest.Start(t)
	s.SetFault(dns.TypeA, dnstest.ServFail)
	s.SetFault(dns.TypeAAAA, dnstest.ServFail)
	o := fastOptions()
	o.Backoff = backoff.Config{BaseDelay: 50 * time.Millisecond, Multiplier: 2, Jitter: 0, MaxDelay: 400 * time.Millisecond}
	cc, _ := buildFake(t, NewBuilder(o), "dnsconfig://"+s.Addr+"/svc.test:8080")
	u := cc.waitN(t, 5, 5*time.Second)
	for _, x := range u {
		if x.err == nil || !strings.Contains(x.err.Error(), "SERVFAIL") {
			t.Fatalf("want ReportError naming SERVFAIL each time: %s", cc)
		}
	}
	// Intervals 50, 100, 200, 400ms (no jitter), plus query time.
	for i, want := range []time.Duration{50, 100, 200, 400} {
		gap := u[i+1].at.Sub(u[i].at)
		if gap < want*time.Millisecond || gap > want*time.Millisecond+150*time.Millisecond {
			t.Errorf("retry %d after %v, want about %vms", i+1, gap, want)
		}
	}
	s.SetFault(dns.TypeA, dnstest.NoFault)
	s.SetAddrs("svc.test", 60, "192.0.2.1")
	cc.waitFor(t, 3*time.Second, "with addresses", func(u update) bool { return len(u.addrs) == 1 })
}

func TestNXDOMAINHostReportsError(t *testing.T) {
	s := dnstest.Start(t)
	cc, _ := buildFake(t, NewBuilder(fastOptions()), "dnsconfig://"+s.Addr+"/missing.test")
	u := cc.waitN(t, 1, 5*time.Second)
	if u[0].err == nil || !strings.Contains(u[0].err.Error(), "does not exist (NXDOMAIN") {
		t.Fatalf("%s", cc)
	}
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
			s, target := zone(t)
			tc.setup(s)
			b := NewBuilder(fastOptions())
			cc, _ := buildFake(t, b, target)
			u := cc.waitN(t, 1, 5*time.Second)
			if u[0].err != nil || u[0].config != "<nil>" || !slices.Equal(u[0].addrs, wantAddrs) {
				t.Fatalf("%s; want addresses and no config", cc)
			}
			st, _ := b.State(target)
			if st.Choice != -1 || st.LastError != nil || st.ServiceConfig != "" {
				t.Errorf("state %+v", st)
			}
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
		s, target := zone(t)
		s.SetConfig("svc.test", 1, oneChoice(cfgA))
		cc, _ := buildFake(t, NewBuilder(refreshOptions()), target)
		cc.waitFor(t, 5*time.Second, "with config A", func(u update) bool { return u.config == cfgA })
		s.SetConfig("svc.test", 1, "")
		// nil would leave grpc-go on config A: the empty config must be sent.
		cc.waitFor(t, 5*time.Second, "with {}", func(u update) bool { return u.config == "{}" })
	})
	t.Run("Options.DefaultServiceConfig", func(t *testing.T) {
		s, target := zone(t)
		s.SetConfig("svc.test", 1, oneChoice(cfgA))
		o := refreshOptions()
		o.DefaultServiceConfig = cfgD
		cc, _ := buildFake(t, NewBuilder(o), target)
		cc.waitFor(t, 5*time.Second, "with config A", func(u update) bool { return u.config == cfgA })
		s.SetConfig("svc.test", 1, `[{"clientHostname":["other"],"serviceConfig":`+cfgA+`}]`)
		cc.waitFor(t, 5*time.Second, "with the default", func(u update) bool { return u.config == cfgD })
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
			s, target := zone(t)
			s.SetConfig("svc.test", 1, tc.first)
			logs := &logRecorder{}
			o := refreshOptions()
			o.Logger = slog.New(logs)
			b := NewBuilder(o)
			cc, _ := buildFake(t, b, target)
			cc.waitN(t, 1, 5*time.Second)
			aQueries := s.Count(dns.TypeTXT, "")
			s.SetConfig("svc.test", 1, `[{"serviceConfig":{"methodConfig":[{"name":[{}],"timeout":"soon"}]}}]`)
			// Wait for several re-resolutions.
			deadline := time.Now().Add(3 * time.Second)
			for s.Count(dns.TypeTXT, "") < aQueries+3 && time.Now().Before(deadline) {
				time.Sleep(20 * time.Millisecond)
			}
			if u := cc.all(); len(u) != 1 || u[0].config != tc.want {
				t.Fatalf("the channel was updated after the invalid record: %s", cc)
			}
			st, _ := b.State(target)
			if st.LastError == nil || !strings.Contains(st.LastError.Error(), "timeout") || !strings.HasPrefix(st.Reason, tc.reason) {
				t.Errorf("state %+v: want the invalid record in LastError and Reason", st)
			}
			if l := logs.find("ignoring an invalid service config record"); len(l) != 1 || !strings.Contains(l[0], "timeout") {
				t.Errorf("want one warning naming the problem, got %q", l)
			}
		})
	}
}

func TestInvalidRecordOnNewChannel(t *testing.T) {
	bad := `[{"serviceConfig":{"loadBalancingConfig":"round_robin"}}]`
	t.Run("no default: fails, retries with backoff, recovers", func(t *testing.T) {
		s, target := zone(t)
		s.SetConfig("svc.test", 60, bad)
		o := fastOptions()
		o.Backoff = backoff.Config{BaseDelay: 50 * time.Millisecond, Multiplier: 1.5, Jitter: 0.1, MaxDelay: 200 * time.Millisecond}
		b := NewBuilder(o)
		cc, _ := buildFake(t, b, target)
		u := cc.waitN(t, 1, 5*time.Second)
		if !strings.HasPrefix(u[0].config, "<error: dnsconfig: the record at _grpc_config.svc.test is invalid") {
			t.Fatalf("%s; want the parse error given to the channel", cc)
		}
		st, _ := b.State(target)
		if st.LastError == nil || st.Choice != -1 {
			t.Errorf("state %+v", st)
		}
		// The channel refused the state: the resolver retries with backoff,
		// although the TTL is 60s.
		n := s.Count(dns.TypeTXT, "")
		time.Sleep(500 * time.Millisecond)
		if got := s.Count(dns.TypeTXT, ""); got < n+2 {
			t.Errorf("%d TXT queries in 500ms after the failure, want retries", got-n)
		}
		s.SetConfig("svc.test", 60, oneChoice(cfgA))
		cc.waitFor(t, 3*time.Second, "with the fixed config", func(u update) bool { return u.config == cfgA })
	})
	t.Run("with default", func(t *testing.T) {
		s, target := zone(t)
		s.SetConfig("svc.test", 60, bad)
		o := fastOptions()
		o.DefaultServiceConfig = cfgD
		cc, _ := buildFake(t, NewBuilder(o), target)
		u := cc.waitN(t, 1, 5*time.Second)
		if u[0].config != cfgD {
			t.Fatalf("%s; want the default config", cc)
		}
	})
	t.Run("rejected by grpc-go's parser", func(t *testing.T) {
		s, target := zone(t)
		s.SetConfig("svc.test", 60, oneChoice(`{"rejectedByGRPC":true}`))
		cc, _ := buildFake(t, NewBuilder(fastOptions()), target)
		u := cc.waitN(t, 1, 5*time.Second)
		if !strings.Contains(u[0].config, "grpc-go rejects choice 0") {
			t.Fatalf("%s", cc)
		}
	})
}

// gRFC A6 allows status code names in any case; grpc-go's parser only
// takes upper case, so the resolver hands it the upper-case form.
func TestLowerCaseStatusCodesReachGrpcGo(t *testing.T) {
	s, target := zone(t)
	s.SetConfig("svc.test", 60, `[{"serviceConfig":{"methodConfig":[{"name":[{}],"retryPolicy":{"maxAttempts":2,"initialBackoff":"1s","maxBackoff":"1s","backoffMultiplier":1,"retryableStatusCodes":["unavailable"]}}]}}]`)
	cc, _ := buildFake(t, NewBuilder(fastOptions()), target)
	u := cc.waitN(t, 1, 5*time.Second)
	if !strings.Contains(u[0].config, `"retryableStatusCodes":["UNAVAILABLE"]`) {
		t.Fatalf("%s; want the status code upper-cased", cc)
	}
}

// Only the chosen choice's service config is validated (gRFC A21).
func TestOnlyChosenConfigIsValidated(t *testing.T) {
	s, target := zone(t)
	s.SetConfig("svc.test", 60, `[{"clientLanguage":["java"],"serviceConfig":{"methodConfig":[{"timeout":"never"}]}},{"serviceConfig":`+cfgA+`}]`)
	b := NewBuilder(fastOptions())
	cc, _ := buildFake(t, b, target)
	if u := cc.waitN(t, 1, 5*time.Second); u[0].config != cfgA {
		t.Fatalf("%s", cc)
	}
	if st, _ := b.State(target); st.Choice != 1 {
		t.Errorf("choice %d, want 1", st.Choice)
	}
}

func TestSelectionSkipsOtherClients(t *testing.T) {
	s, target := zone(t)
	// Bucket 50, hostname client-1, language go.
	s.SetConfig("svc.test", 60, `[
		{"clientLanguage":["java","c++"],"serviceConfig":{"methodConfig":[{"name":[{}],"timeout":"11s"}]}},
		{"percentage":49,"serviceConfig":{"methodConfig":[{"name":[{}],"timeout":"12s"}]}},
		{"clientHostname":["client-2"],"serviceConfig":{"methodConfig":[{"name":[{}],"timeout":"13s"}]}},
		{"clientLanguage":["GO"],"percentage":50,"clientHostname":["client-1"],"serviceConfig":`+cfgA+`},
		{"serviceConfig":`+cfgB+`}]`)
	logs := &logRecorder{}
	o := fastOptions()
	o.Logger = slog.New(logs)
	b := NewBuilder(o)
	cc, _ := buildFake(t, b, target)
	if u := cc.waitN(t, 1, 5*time.Second); u[0].config != cfgA {
		t.Fatalf("%s; want choice 3", cc)
	}
	st, _ := b.State(target)
	if st.Choice != 3 || st.Bucket != 50 || !strings.Contains(st.Reason, "bucket 50 <= percentage 50") {
		t.Errorf("state %+v", st)
	}
	l := logs.find("service config changed")
	if len(l) != 1 || !strings.Contains(l[0], "choice=3") || !strings.Contains(l[0], `clientHostname ["client-1"] includes "client-1"`) ||
		!strings.Contains(l[0], "NO: bucket 50 > percentage 49") || !strings.Contains(l[0], `NO: clientLanguage ["java", "c++"] does not include "go"`) {
		t.Errorf("log %q: want the chosen index and why", l)
	}
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
	s, target := zone(t)
	s.SetConfig("svc.test", 1, `[{"percentage":`+itoa(c1.bucket)+`,"serviceConfig":`+cfgA+`},{"serviceConfig":`+cfgB+`}]`)
	cc, _ := buildFake(t, NewBuilder(Options{MinRefresh: 50 * time.Millisecond, MaxRefresh: 50 * time.Millisecond}), target)
	n := s.Count(dns.TypeTXT, "")
	for s.Count(dns.TypeTXT, "") < n+10 {
		time.Sleep(20 * time.Millisecond)
	}
	for _, u := range cc.all() {
		if u.config != cfgA {
			t.Fatalf("flipped: %s", cc)
		}
	}
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
			s := dnstest.Start(t)
			s.SetAddrs("svc.test", tc.ttl, "192.0.2.1")
			s.SetConfig("svc.test", tc.ttl, oneChoice(cfgA))
			o := fastOptions()
			o.MinRefresh, o.MaxRefresh = tc.min, tc.max
			b := NewBuilder(o)
			target := "dnsconfig://" + s.Addr + "/svc.test"
			buildFake(t, b, target)
			deadline := time.Now().Add(5 * time.Second)
			for s.Count(dns.TypeA, "") < 3 && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			q := s.Queries()
			var at []time.Time
			for _, x := range q {
				if x.Type == dns.TypeA {
					at = append(at, x.At)
				}
			}
			if len(at) < 3 {
				t.Fatalf("%d A queries", len(at))
			}
			for i := 1; i < 3; i++ {
				if gap := at[i].Sub(at[i-1]); gap < tc.want || gap > tc.want+400*time.Millisecond {
					t.Errorf("re-resolved after %v, want %v", gap, tc.want)
				}
			}
			st, _ := b.State(target)
			// The AAAA answer is negative, cached for the SOA's 30s minimum.
			if want := min(time.Duration(tc.ttl)*time.Second, 30*time.Second); st.TTL != want {
				t.Errorf("state TTL %v, want %v", st.TTL, want)
			}
		})
	}
}

func TestResolveNowIsRateLimited(t *testing.T) {
	s, target := zone(t)
	o := fastOptions()
	o.MinRefresh, o.MaxRefresh = time.Minute, time.Minute
	o.MinResolveNowInterval = 400 * time.Millisecond
	cc, r := buildFake(t, NewBuilder(o), target)
	cc.waitN(t, 1, 5*time.Second)
	stop := time.Now().Add(1100 * time.Millisecond)
	for time.Now().Before(stop) {
		r.ResolveNow(grpcresolver.ResolveNowOptions{})
		time.Sleep(5 * time.Millisecond)
	}
	var at []time.Time
	for _, q := range s.Queries() {
		if q.Type == dns.TypeA {
			at = append(at, q.At)
		}
	}
	// Resolutions at 0, 400 and 800ms; the one due at 1200ms may not have
	// started yet.
	if len(at) < 3 || len(at) > 4 {
		t.Fatalf("%d resolutions in 1.1s of ResolveNow calls, want 3 (one per 400ms)", len(at))
	}
	for i := 1; i < len(at); i++ {
		// Measured at the server, a few µs after each resolution started.
		if gap := at[i].Sub(at[i-1]); gap < 390*time.Millisecond {
			t.Errorf("resolution %d only %v after the previous", i, gap)
		}
	}
}

func TestCloseLeavesNoGoroutines(t *testing.T) {
	s, target := zone(t)
	s.SetConfig("svc.test", 0, oneChoice(cfgA))
	silent := dnstest.SilentUDP(t)
	before := goroutines()
	o := fastOptions()
	o.QueryTimeout = 10 * time.Second
	b := NewBuilder(o)
	var rs []grpcresolver.Resolver
	for range 5 {
		_, r := buildFake(t, b, target)
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
	if goroutines() <= before {
		t.Fatal("resolvers started no goroutines?")
	}
	start := time.Now()
	for _, r := range rs {
		r.Close()
	}
	if el := time.Since(start); el > time.Second {
		t.Errorf("Close took %v with queries in flight", el)
	}
	waitGoroutines(t, before, 2*time.Second)
	if _, ok := b.State(target); ok {
		t.Error("State still reports a closed resolver")
	}
}

func TestIPLiteralNeedsNoDNS(t *testing.T) {
	for _, tc := range []struct{ target, want string }{
		{"dnsconfig:///192.0.2.5", "192.0.2.5:443"},
		{"dnsconfig:///192.0.2.5:80", "192.0.2.5:80"},
		{"dnsconfig:///[2001:db8::5]:80", "[2001:db8::5]:80"},
		{"dnsconfig:///2001:db8::5", "[2001:db8::5]:443"},
	} {
		o := fastOptions()
		o.Nameservers = []string{dnstest.DeadUDP(t)}
		b := NewBuilder(o)
		cc, _ := buildFake(t, b, tc.target)
		u := cc.waitN(t, 1, time.Second)
		if len(u[0].addrs) != 1 || u[0].addrs[0] != tc.want || u[0].config != "<nil>" {
			t.Errorf("%s: %s", tc.target, cc)
		}
		if st, ok := b.State(tc.target); !ok || st.Addresses[0] != tc.want {
			t.Errorf("%s: state %+v", tc.target, st)
		}
	}
}

func TestDisableServiceConfigSkipsTXT(t *testing.T) {
	s, target := zone(t)
	s.SetConfig("svc.test", 60, oneChoice(cfgA))
	u, _ := urlParse(target)
	cc := newFakeCC()
	r, err := NewBuilder(fastOptions()).Build(grpcresolver.Target{URL: *u}, cc, grpcresolver.BuildOptions{DisableServiceConfig: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if x := cc.waitN(t, 1, 5*time.Second); x[0].config != "<nil>" {
		t.Fatalf("%s", cc)
	}
	if n := s.Count(dns.TypeTXT, ""); n != 0 {
		t.Errorf("%d TXT queries with service config disabled", n)
	}
}

func TestNameserversFromOptionsAndResolvConf(t *testing.T) {
	s, _ := zone(t)
	s.SetConfig("svc.test", 60, oneChoice(cfgA))
	o := fastOptions()
	o.Nameservers = []string{dnstest.DeadUDP(t), s.Addr}
	cc, _ := buildFake(t, NewBuilder(o), "dnsconfig:///svc.test:8080")
	if u := cc.waitN(t, 1, 5*time.Second); u[0].config != cfgA || !slices.Equal(u[0].addrs, wantAddrs) {
		t.Fatalf("%s", cc)
	}

	dir := t.TempDir()
	rc := filepath.Join(dir, "resolv.conf")
	os.WriteFile(rc, []byte("# test\nsearch example.com\nnameserver 192.0.2.53\nnameserver 2001:db8::53\noptions ndots:2\n"), 0o644)
	o = fastOptions()
	o.ResolvConf = rc
	_, r := buildFake(t, NewBuilder(o), "dnsconfig:///svc.test:8080")
	if got := r.(*dnsResolver).client.servers; !slices.Equal(got, []string{"192.0.2.53:53", "[2001:db8::53]:53"}) {
		t.Errorf("servers from resolv.conf: %v", got)
	}
	o.ResolvConf = filepath.Join(dir, "missing")
	u, _ := urlParse("dnsconfig:///svc.test")
	_, err := NewBuilder(o).Build(grpcresolver.Target{URL: *u}, newFakeCC(), grpcresolver.BuildOptions{})
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
	s, target := zone(t)
	o := refreshOptions()
	o.Backoff = backoff.Config{BaseDelay: 50 * time.Millisecond, Multiplier: 1, MaxDelay: 50 * time.Millisecond}
	s.SetFault(dns.TypeA, dnstest.ServFail)
	s.SetFault(dns.TypeAAAA, dnstest.ServFail)
	cc, _ := buildFake(t, NewBuilder(o), target)
	i := cc.waitFor(t, 5*time.Second, "ReportError", func(u update) bool { return u.err != nil })
	s.SetFault(dns.TypeA, dnstest.NoFault)
	s.SetFault(dns.TypeAAAA, dnstest.NoFault)
	j := cc.waitFor(t, 5*time.Second, "with the addresses", func(u update) bool { return u.err == nil && len(u.addrs) == 2 && u.at.After(cc.all()[i].at) })
	if j <= i {
		t.Fatalf("%s", cc)
	}
}

// A running channel keeps its addresses when their lookups fail (a
// failure says nothing about them): no error, no update; State says what
// failed, and the lookups are retried with backoff.
func TestFailedAddressLookupsKeepRunningChannel(t *testing.T) {
	s, target := zone(t)
	o := refreshOptions()
	o.Backoff = backoff.Config{BaseDelay: 50 * time.Millisecond, Multiplier: 1, MaxDelay: 50 * time.Millisecond}
	b := NewBuilder(o)
	cc, _ := buildFake(t, b, target)
	cc.waitN(t, 1, 5*time.Second)
	s.SetFault(dns.TypeA, dnstest.ServFail)
	s.SetFault(dns.TypeAAAA, dnstest.ServFail)
	before := s.Count(dns.TypeA, "")
	time.Sleep(600 * time.Millisecond)
	if u := cc.all(); len(u) != 1 {
		t.Errorf("the channel was told of the failed lookups: %s", cc)
	}
	if st, _ := b.State(target); st.LastError == nil || !slices.Equal(st.Addresses, wantAddrs) {
		t.Errorf("state %+v: want the addresses kept and the failure in LastError", st)
	}
	if n := s.Count(dns.TypeA, "") - before; n < 4 {
		t.Errorf("%d A queries in 600ms with a 50ms backoff", n)
	}
}

// On re-resolution an address family slower than TXTBudget (a cache miss
// at TTL expiry) must not drop out of a running channel for a moment: its
// connections would be closed and opened again.
func TestSlowFamilyDoesNotDropOutOfRunningChannel(t *testing.T) {
	s, target := zone(t)
	o := refreshOptions()
	o.TXTBudget = 30 * time.Millisecond
	cc, _ := buildFake(t, NewBuilder(o), target)
	cc.waitN(t, 1, 5*time.Second)
	s.SetAddrs("svc.test", 1, "192.0.2.1", "2001:db8::1", "192.0.2.9")
	s.SetDelay(dns.TypeA, 300*time.Millisecond)
	cc.waitFor(t, 5*time.Second, "the new address", func(u update) bool { return slices.Contains(u.addrs, "192.0.2.9:8080") })
	for _, u := range cc.all() {
		if len(u.addrs) < 2 {
			t.Fatalf("an update without one family: %s", cc)
		}
	}
}

// A TXT lookup that keeps failing is retried with backoff, but the
// addresses are still refreshed when their TTL says so.
func TestBackoffNeverExceedsTTL(t *testing.T) {
	s := dnstest.Start(t)
	s.SetAddrs("svc.test", 1, "192.0.2.1")
	s.SetFault(dns.TypeTXT, dnstest.Refused)
	o := fastOptions()
	o.MinRefresh = 100 * time.Millisecond
	o.Backoff = backoff.Config{BaseDelay: 10 * time.Second, Multiplier: 1, MaxDelay: 10 * time.Second}
	buildFake(t, NewBuilder(o), "dnsconfig://"+s.Addr+"/svc.test")
	time.Sleep(2500 * time.Millisecond)
	if n := s.Count(dns.TypeA, ""); n < 3 {
		t.Errorf("%d A queries in 2.5s with TTL 1s and a 10s backoff, want 3", n)
	}
}

// The budget starts when the addresses arrive: when a slow nameserver
// delays every answer alike, the config still comes with the addresses.
func TestBudgetCountsFromAddresses(t *testing.T) {
	s, target := zone(t)
	s.SetConfig("svc.test", 60, oneChoice(cfgA))
	s.SetDelay(dns.TypeA, 300*time.Millisecond)
	s.SetDelay(dns.TypeAAAA, 300*time.Millisecond)
	s.SetDelay(dns.TypeTXT, 400*time.Millisecond)
	o := fastOptions()
	o.TXTBudget = 200 * time.Millisecond
	cc, _ := buildFake(t, NewBuilder(o), target)
	u := cc.waitN(t, 1, 5*time.Second)
	time.Sleep(300 * time.Millisecond)
	if u[0].config != cfgA || len(cc.all()) != 1 {
		t.Fatalf("%s; want one update with the addresses and the config", cc)
	}
}

// When another choice with the same config is chosen, the channel is left
// alone, but State and the logs follow.
func TestSameConfigOtherChoice(t *testing.T) {
	s, target := zone(t)
	s.SetConfig("svc.test", 1, oneChoice(cfgA))
	logs := &logRecorder{}
	o := refreshOptions()
	o.Logger = slog.New(logs)
	b := NewBuilder(o)
	cc, _ := buildFake(t, b, target)
	cc.waitFor(t, 5*time.Second, "config A", func(u update) bool { return u.config == cfgA })
	s.SetConfig("svc.test", 1, `[{"clientHostname":["elsewhere"],"serviceConfig":`+cfgA+`},{"percentage":60,"serviceConfig":`+cfgA+`},{"serviceConfig":`+cfgA+`}]`)
	waitFor := time.Now().Add(5 * time.Second)
	for len(logs.find("service config choice changed")) == 0 && time.Now().Before(waitFor) {
		time.Sleep(20 * time.Millisecond)
	}
	if st, _ := b.State(target); st.Choice != 1 {
		t.Errorf("State.Choice = %d, want 1 (bucket 50, percentage 60)", st.Choice)
	}
	if l := logs.find("service config choice changed"); len(l) != 1 || !strings.Contains(l[0], "choice=1") {
		t.Errorf("logs %q", l)
	}
	if u := cc.all(); len(u) != 1 {
		t.Errorf("the channel was updated for the same config: %s", cc)
	}
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
	s, target := zone(t)
	s.SetConfig("svc.test", 1, oneChoice(cfgA))
	cc, _ := buildFake(t, NewBuilder(refreshOptions()), target)
	cc.waitFor(t, 5*time.Second, "with config A", func(u update) bool { return u.config == cfgA })
	before := s.Count(dns.TypeTXT, "tcp")
	s.SetFault(dns.TypeTXT, dnstest.TruncateAll)
	deadline := time.Now().Add(5 * time.Second)
	for s.Count(dns.TypeTXT, "tcp") < before+3 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if s.Count(dns.TypeTXT, "tcp") < before+3 {
		t.Fatalf("the resolver did not ask again over TCP")
	}
	for _, u := range cc.all() {
		if u.config != cfgA {
			t.Fatalf("the config changed after truncated TCP answers: %s", cc)
		}
	}
}
