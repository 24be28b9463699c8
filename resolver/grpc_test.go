package resolver

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/status"

	"github.com/grpc-config-dns/grpc-config-dns/internal/dnstest"
)

// These tests run real grpc-go channels and servers against the test DNS
// server, and assert what the published config does to calls.

func TestGRPCMethodTimeoutFires(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 1)
	e.dns.SetConfig("svc.test", 60, oneChoice(timeoutConfig("0.05s")))
	cc, _ := e.dial(t, fastOptions())
	start := time.Now()
	_, _, err := call(cc, 2*time.Second)
	if status.Code(err) != codes.DeadlineExceeded {
		t.Fatalf("slow call: %v, want DEADLINE_EXCEEDED from the published 0.05s timeout", err)
	}
	if el := time.Since(start); el > time.Second {
		t.Errorf("the call took %v", el)
	}
	// Control: without the record the same call succeeds.
	e.dns.SetConfig("svc.test", 60, "")
	cc2, _ := e.dial(t, fastOptions())
	if _, _, err := call(cc2, 100*time.Millisecond); err != nil {
		t.Errorf("without a config: %v", err)
	}
}

func TestGRPCRetryPolicyMakesFlakyCallSucceed(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 1)
	e.dns.SetConfig("svc.test", 60, oneChoice(`{"methodConfig":[{"name":[{"service":"`+testService+`"}],
		"retryPolicy":{"maxAttempts":3,"initialBackoff":"0.01s","maxBackoff":"0.01s","backoffMultiplier":1,"retryableStatusCodes":["UNAVAILABLE"]}}]}`))
	cc, _ := e.dial(t, fastOptions())
	waitForState(t, cc, connectivity.Ready, 5*time.Second)
	e.backends[0].failNext.Store(2)
	if _, _, err := call(cc, 0); err != nil {
		t.Fatalf("flaky call with the published retryPolicy: %v", err)
	}
	if n := e.backends[0].calls.Load(); n != 3 {
		t.Errorf("server saw %d attempts, want 3", n)
	}
	// Control: without the record the first failure is final.
	e.dns.SetConfig("svc.test", 60, "")
	cc2, _ := e.dial(t, fastOptions())
	waitForState(t, cc2, connectivity.Ready, 5*time.Second)
	e.backends[0].failNext.Store(2)
	if _, _, err := call(cc2, 0); status.Code(err) != codes.Unavailable {
		t.Errorf("without a config: %v, want UNAVAILABLE", err)
	}
}

// A default written as the spec allows, with a lower-case status code that
// grpc-go's own parser refuses, works as a published config would.
func TestGRPCDefaultServiceConfigInSpecForm(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 1)
	o := fastOptions()
	o.DefaultServiceConfig = `{"methodConfig":[{"name":[{"service":"` + testService + `"}],
		"retryPolicy":{"maxAttempts":3,"initialBackoff":"0.01s","maxBackoff":"0.01s","backoffMultiplier":1,"retryableStatusCodes":["unavailable"]}}]}`
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	cc, _ := e.dial(t, o)
	waitForState(t, cc, connectivity.Ready, 5*time.Second)
	e.backends[0].failNext.Store(2)
	if _, _, err := call(cc, 0); err != nil {
		t.Fatalf("flaky call with the default's retryPolicy: %v", err)
	}
	if n := e.backends[0].calls.Load(); n != 3 {
		t.Errorf("server saw %d attempts, want 3", n)
	}
}

func TestGRPCRoundRobinSpreadsCalls(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 2)
	e.dns.SetConfig("svc.test", 60, oneChoice(`{"loadBalancingConfig":[{"round_robin":{}}]}`))
	cc, _ := e.dial(t, fastOptions())
	waitForState(t, cc, connectivity.Ready, 5*time.Second)
	// round_robin reports READY when the first backend is; wait for both.
	deadline := time.Now().Add(5 * time.Second)
	seen := map[string]int{}
	for len(seen) < 2 && time.Now().Before(deadline) {
		name, _, err := call(cc, 0)
		if err != nil {
			t.Fatal(err)
		}
		seen[name]++
	}
	clear(seen)
	for range 20 {
		name, _, err := call(cc, 0)
		if err != nil {
			t.Fatal(err)
		}
		seen[name]++
	}
	if seen["backend-1"] != 10 || seen["backend-2"] != 10 {
		t.Errorf("calls per backend %v, want 10 each", seen)
	}
	// Control: pick_first, the default, sends everything to one backend.
	e.dns.SetConfig("svc.test", 60, "")
	cc2, _ := e.dial(t, fastOptions())
	clear(seen)
	for range 10 {
		name, _, err := call(cc2, 0)
		if err != nil {
			t.Fatal(err)
		}
		seen[name]++
	}
	if len(seen) != 1 {
		t.Errorf("without a config, calls went to %v", seen)
	}
}

func TestGRPCSkipsChoicesForOtherClients(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 1)
	// The client: language go, bucket 50, hostname client-1.
	e.dns.SetConfig("svc.test", 60, `[
		{"clientLanguage":["java"],"serviceConfig":`+timeoutConfig("11s")+`},
		{"percentage":49,"serviceConfig":`+timeoutConfig("12s")+`},
		{"clientHostname":["client-2","CLIENT-1"],"serviceConfig":`+timeoutConfig("13s")+`},
		{"clientLanguage":["Go"],"percentage":50,"clientHostname":["client-1"],"serviceConfig":`+timeoutConfig("14s")+`}]`)
	cc, b := e.dial(t, fastOptions())
	if d := callNoDeadline(t, cc); !about(d, 14*time.Second) {
		t.Fatalf("server saw deadline %v, want about 14s (choice 3)", d)
	}
	if st, _ := b.State(e.target()); st.Choice != 3 {
		t.Errorf("state %+v", st)
	}
}

func TestGRPCPublishedChangeReachesRunningChannel(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 1)
	// TTL 0: the resolver re-resolves every MinRefresh (refresh bounds
	// and TTLs are tested in resolver_test.go, on the bubble's clock).
	const ttl = 0
	e.dns.SetAddrs("svc.test", ttl, "192.0.2.1")
	e.dns.SetConfig("svc.test", ttl, oneChoice(timeoutConfig("11s")))
	o := fastOptions()
	o.MinRefresh = 100 * time.Millisecond
	cc, _ := e.dial(t, o)
	if d := callNoDeadline(t, cc); !about(d, 11*time.Second) {
		t.Fatalf("deadline %v, want about 11s", d)
	}
	e.dns.SetConfig("svc.test", ttl, oneChoice(timeoutConfig("22s")))
	published := time.Now()
	for {
		if d := callNoDeadline(t, cc); about(d, 22*time.Second) {
			break
		}
		if time.Since(published) > o.MinRefresh+time.Second {
			t.Fatalf("the change did not reach the channel within the refresh interval + 1s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("the change reached the channel %v after it was published (refresh every %v)", time.Since(published).Round(time.Millisecond), o.MinRefresh)
	if n := e.connections(); n != 1 {
		t.Errorf("%d connections to the backend, want 1: the change must not reconnect", n)
	}
	if st := settledState(cc); st != connectivity.Ready {
		t.Errorf("channel %v", st)
	}
}

func TestGRPCInvalidRecordAfterValidChangesNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 1)
	e.dns.SetAddrs("svc.test", 1, "192.0.2.1")
	e.dns.SetConfig("svc.test", 1, oneChoice(timeoutConfig("11s")))
	o := fastOptions()
	o.MinRefresh, o.MaxRefresh = 20*time.Millisecond, 20*time.Millisecond
	cc, b := e.dial(t, o)
	if d := callNoDeadline(t, cc); !about(d, 11*time.Second) {
		t.Fatalf("deadline %v", d)
	}
	for _, bad := range []string{
		`[{"serviceConfig":{"methodConfig":[{"name":[{}],"timeout":"1m"}]}}]`, // invalid config
		`[{"serviceConfig":{}, "clientHostName":["x"]}]`,                      // unknown key
		`[{"serviceConfig":`, // not JSON
	} {
		e.dns.SetConfig("svc.test", 1, bad)
		n := e.dns.Count(dns.TypeTXT, "")
		for e.dns.Count(dns.TypeTXT, "") < n+3 {
			time.Sleep(20 * time.Millisecond)
		}
		if d := callNoDeadline(t, cc); !about(d, 11*time.Second) {
			t.Fatalf("after %s: deadline %v, want the previous 11s", bad, d)
		}
		if st, _ := b.State(e.target()); st.LastError == nil || st.Choice != 0 {
			t.Errorf("after %s: state %+v", bad, st)
		}
	}
	if st := settledState(cc); st != connectivity.Ready || e.connections() != 1 {
		t.Errorf("channel %v with %d connections", st, e.connections())
	}
}

func TestGRPCNoServiceConfigKeepsChannelReady(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		record string
	}{
		{"no matching choice", `[{"clientLanguage":["java"],"serviceConfig":` + timeoutConfig("11s") + `}]`},
		{"no record", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, 1)
			e.dns.SetConfig("svc.test", 60, tc.record)
			cc, b := e.dial(t, fastOptions())
			waitForState(t, cc, connectivity.Ready, 5*time.Second)
			if d := callNoDeadline(t, cc); d != -1 {
				t.Errorf("deadline %v, want none: no config applies", d)
			}
			if st, _ := b.State(e.target()); st.Choice != -1 || st.LastError != nil {
				t.Errorf("state %+v", st)
			}
		})
	}
	t.Run("grpc.WithDefaultServiceConfig applies", func(t *testing.T) {
		e := newEnv(t, 1)
		e.dns.SetConfig("svc.test", 60, `[{"clientLanguage":["java"],"serviceConfig":{}}]`)
		cc, _ := e.dial(t, fastOptions(), grpc.WithDefaultServiceConfig(timeoutConfig("15s")))
		if d := callNoDeadline(t, cc); !about(d, 15*time.Second) {
			t.Errorf("deadline %v, want the channel's default 15s", d)
		}
	})
}

// The case is a record that is invalid when a new channel first hears of
// it: its addresses must wait for the TXT answer. With the default budget
// (200ms) a loaded machine answered later, the addresses went out first,
// the record came after them and was rightly ignored (the next test), and
// the channel ran where this test wanted it failed: the flake of issue 18.
// The TXT answer is slowed past the default budget on purpose, and the
// budget set above it, so the test asks for what it checks.
const (
	slowTXT          = 300 * time.Millisecond
	newChannelBudget = 10 * time.Second
)

func TestGRPCInvalidRecordOnNewChannel(t *testing.T) {
	t.Parallel()
	bad := `[{"serviceConfig":{"loadBalancingConfig":[{"no_such_policy":{}}]}}]`
	t.Run("without a default the channel fails until the record is fixed", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, 1)
		e.dns.SetConfig("svc.test", 60, bad)
		e.dns.SetDelay(dns.TypeTXT, slowTXT)
		o := fastOptions()
		o.TXTBudget = newChannelBudget
		o.Backoff = backoff.Config{BaseDelay: 50 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: 200 * time.Millisecond}
		cc, b := e.dial(t, o)
		waitForState(t, cc, connectivity.TransientFailure, 5*time.Second)
		_, _, err := call(cc, 0)
		if status.Code(err) != codes.Unavailable || !strings.Contains(err.Error(), "_grpc_config.svc.test") {
			t.Errorf("call on the failed channel: %v; want UNAVAILABLE naming the record", err)
		}
		if st, _ := b.State(e.target()); st.LastError == nil || !strings.Contains(st.LastError.Error(), "the record at _grpc_config.svc.test is invalid") {
			t.Errorf("state %+v: want the record's problem in LastError", st)
		}
		e.dns.SetConfig("svc.test", 60, oneChoice(timeoutConfig("11s")))
		waitForState(t, cc, connectivity.Ready, 5*time.Second)
		if d := callNoDeadline(t, cc); !about(d, 11*time.Second) {
			t.Errorf("after the fix: deadline %v", d)
		}
	})
	t.Run("with Options.DefaultServiceConfig the default applies", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, 1)
		e.dns.SetConfig("svc.test", 60, bad)
		e.dns.SetDelay(dns.TypeTXT, slowTXT)
		o := fastOptions()
		o.TXTBudget = newChannelBudget
		o.DefaultServiceConfig = timeoutConfig("16s")
		cc, _ := e.dial(t, o)
		if d := callNoDeadline(t, cc); !about(d, 16*time.Second) {
			t.Errorf("deadline %v, want the default's 16s", d)
		}
		if st := settledState(cc); st != connectivity.Ready {
			t.Errorf("channel %v", st)
		}
	})
}

// An invalid record that arrives after the TXT budget, when the channel
// already runs on its default with the addresses it got first, is ignored
// as after no config (gRFC A21): failing the channel then would break calls
// that work, and only when the answer happened to be slow.
func TestGRPCInvalidRecordAfterTheBudgetKeepsTheChannel(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 1)
	e.dns.SetConfig("svc.test", 60, `[{"serviceConfig":{"loadBalancingConfig":[{"no_such_policy":{}}]}}]`)
	release := make(chan struct{})
	e.dns.SetHold(dns.TypeTXT, release) // the TXT answer comes once the channel runs
	logs := &logRecorder{}
	o := fastOptions()
	o.TXTBudget = 50 * time.Millisecond
	o.Logger = slog.New(logs)
	cc, b := e.dial(t, o)
	waitForState(t, cc, connectivity.Ready, 5*time.Second)
	close(release)
	deadline := time.Now().Add(5 * time.Second)
	for len(logs.find("ignoring an invalid service config record")) == 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if _, _, err := call(cc, 0); err != nil || settledState(cc) != connectivity.Ready {
		t.Errorf("after the invalid record: call %v, channel %v; want it working on its default", err, cc.GetState())
	}
	st, _ := b.State(e.target())
	if st.LastError == nil || !strings.HasPrefix(st.Reason, "keeping the channel's default config: ") {
		t.Errorf("state %+v: want the invalid record in LastError and Reason", st)
	}
	if l := logs.find("ignoring an invalid service config record"); len(l) != 1 || !strings.Contains(l[0], "TXT budget") {
		t.Errorf("want one warning saying why, got %q", l)
	}
}

func TestGRPCLargeRecordArrivesOverTCP(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 1)
	value := bigConfig(4096)
	value = strings.Replace(value, `[{"serviceConfig":{"methodConfig":[`, `[{"serviceConfig":{"methodConfig":[{"name":[{"service":"`+testService+`"}],"timeout":"17s"},`, 1)
	if len(value) < 4096 {
		t.Fatalf("record of %d bytes", len(value))
	}
	e.dns.SetConfig("svc.test", 60, value)
	cc, _ := e.dial(t, fastOptions())
	if d := callNoDeadline(t, cc); !about(d, 17*time.Second) {
		t.Fatalf("deadline %v, want 17s from the %d-byte record", d, len(value))
	}
	if n := e.dns.Count(dns.TypeTXT, "tcp"); n != 1 {
		t.Errorf("%d TXT queries over TCP, want 1", n)
	}
}

func TestGRPCDeadFirstNameserverFailsOver(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 1)
	e.dns.SetConfig("svc.test", 60, oneChoice(timeoutConfig("11s")))
	o := fastOptions()
	o.QueryTimeout = 100 * time.Millisecond
	for _, first := range []string{dnstest.DeadUDP(t), dnstest.SilentUDP(t)} {
		o.Nameservers = []string{first, e.dns.Addr}
		b := NewBuilder(o)
		cc, err := grpc.NewClient("dnsconfig:///svc.test:50051", append(b.DialOptions(), e.dialer(), grpcInsecure())...)
		if err != nil {
			t.Fatal(err)
		}
		if d := callNoDeadline(t, cc); !about(d, 11*time.Second) {
			t.Errorf("first nameserver %s: deadline %v", first, d)
		}
		cc.Close()
	}
}

func TestGRPCSlowTXTDoesNotDelayAddresses(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 1)
	e.dns.SetConfig("svc.test", 60, oneChoice(timeoutConfig("11s")))
	release := make(chan struct{})
	e.dns.SetHold(dns.TypeTXT, release) // the TXT answer comes when the test says
	o := fastOptions()
	o.TXTBudget = 50 * time.Millisecond
	cc, _ := e.dial(t, o)
	if d := callNoDeadline(t, cc); d != -1 {
		t.Fatalf("first call with deadline %v; want it on the addresses alone, with no config, before the TXT answer", d)
	}
	close(release)
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if d := callNoDeadline(t, cc); about(d, 11*time.Second) {
			if e.connections() != 1 {
				t.Errorf("%d connections: the config must not reconnect", e.connections())
			}
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("the config never followed")
}

func TestGRPCCloseLeavesNoGoroutines(t *testing.T) {
	e := newEnv(t, 1)
	e.dns.SetConfig("svc.test", 0, oneChoice(timeoutConfig("11s")))
	o := fastOptions()
	// Warm up grpc-go's process-wide goroutines.
	cc, _ := e.dial(t, o)
	callNoDeadline(t, cc)
	cc.Close()
	time.Sleep(100 * time.Millisecond)
	before := goroutines()
	for range 3 {
		b := NewBuilder(o)
		cc, err := grpc.NewClient(e.target(), append(b.DialOptions(), e.dialer(), grpcInsecure())...)
		if err != nil {
			t.Fatal(err)
		}
		callNoDeadline(t, cc)
		cc.Close()
		if _, ok := b.State(e.target()); ok {
			t.Error("State reports a closed channel's resolver")
		}
	}
	waitGoroutines(t, before, 3*time.Second)
}

// Bad Options surface as the channel's error, naming the field.
func TestGRPCInvalidOptionsFailCalls(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 1)
	cc, _ := e.dial(t, Options{Bucket: 101})
	_, _, err := call(cc, 0)
	if err == nil || !strings.Contains(err.Error(), "Options.Bucket is 101") {
		t.Fatalf("call: %v; want the options error", err)
	}
}

// TestStateCountsProblems: State says where the channel's config comes
// from (gRFC A21) and counts the resolutions that had a problem, by kind;
// States lists every target (what a metrics collector exports).
func TestStateCountsProblems(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 1)
	e.dns.SetAddrs("svc.test", 0, "192.0.2.1")
	e.dns.SetConfig("svc.test", 0, oneChoice(timeoutConfig("11s")))
	o := fastOptions()
	o.MinRefresh, o.MaxRefresh = 20*time.Millisecond, 20*time.Millisecond
	cc, b := e.dial(t, o)
	if d := callNoDeadline(t, cc); !about(d, 11*time.Second) {
		t.Fatalf("deadline %v", d)
	}
	st, _ := b.State(e.target())
	if st.Config != "published" || st.Choice != 0 || st.Problems["invalid_record"] != 0 {
		t.Fatalf("with a valid record: config %q choice %d problems %v", st.Config, st.Choice, st.Problems)
	}
	e.dns.SetConfig("svc.test", 0, `[{"serviceConfig":{}, "clientHostName":["x"]}]`)
	deadline := time.Now().Add(5 * time.Second)
	for st, _ = b.State(e.target()); st.Problems["invalid_record"] < 2; st, _ = b.State(e.target()) {
		if time.Now().After(deadline) {
			t.Fatalf("invalid records not counted: %+v", st)
		}
		time.Sleep(10 * time.Millisecond)
	}
	// A21: the channel keeps the config it had.
	if st.Config != "published" || !strings.Contains(st.ServiceConfig, `"11s"`) {
		t.Errorf("after invalid records: config %q %s", st.Config, st.ServiceConfig)
	}
	all := b.States()
	if len(all) != 1 || all[0].Target != st.Target || all[0].Problems["invalid_record"] < 2 {
		t.Errorf("States: %+v", all)
	}
}
