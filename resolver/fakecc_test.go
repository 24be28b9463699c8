package resolver

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/url"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/balancer"
	grpcresolver "google.golang.org/grpc/resolver"
	grpcsc "google.golang.org/grpc/serviceconfig"
)

// fakeConfig is what fakeCC.ParseServiceConfig returns: the JSON itself.
type fakeConfig struct {
	grpcsc.Config
	json string
}

// update is one call the resolver made on the ClientConn.
type update struct {
	at    time.Time
	addrs []string
	// config is "<nil>" for no config, "<error: …>" for a parse error, or
	// the JSON.
	config string
	err    error // ReportError
}

// fakeCC is a resolver.ClientConn that records what it is given. Like
// grpc-go, it refuses a state whose service config failed to parse
// (balancer.ErrBadResolverState), so the resolver backs off.
type fakeCC struct {
	mu      sync.Mutex
	updates []update
	notify  chan struct{}
	// parse, when set, replaces the fake parser (with grpc-go's own).
	parse func(string) *grpcsc.ParseResult
}

func newFakeCC() *fakeCC { return &fakeCC{notify: make(chan struct{}, 1000)} }

func (f *fakeCC) record(u update) {
	f.mu.Lock()
	u.at = time.Now()
	f.updates = append(f.updates, u)
	f.mu.Unlock()
	f.notify <- struct{}{}
}

func (f *fakeCC) UpdateState(s grpcresolver.State) error {
	u := update{config: "<nil>"}
	for _, a := range s.Addresses {
		u.addrs = append(u.addrs, a.Addr)
	}
	var err error
	if s.ServiceConfig != nil {
		if s.ServiceConfig.Err != nil {
			u.config = "<error: " + s.ServiceConfig.Err.Error() + ">"
			err = balancer.ErrBadResolverState
		} else {
			u.config = s.ServiceConfig.Config.(fakeConfig).json
		}
	}
	f.record(u)
	return err
}

func (f *fakeCC) ReportError(err error) { f.record(update{err: err}) }

func (f *fakeCC) NewAddress([]grpcresolver.Address) { panic("deprecated NewAddress called") }

func (f *fakeCC) ParseServiceConfig(js string) *grpcsc.ParseResult {
	if f.parse != nil {
		return f.parse(js)
	}
	if !json.Valid([]byte(js)) {
		return &grpcsc.ParseResult{Err: fmt.Errorf("fake parser: invalid JSON")}
	}
	if strings.Contains(js, "rejectedByGRPC") {
		return &grpcsc.ParseResult{Err: fmt.Errorf("fake parser: rejectedByGRPC")}
	}
	return &grpcsc.ParseResult{Config: fakeConfig{json: js}}
}

func (f *fakeCC) all() []update {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]update(nil), f.updates...)
}

// waitN waits until the resolver has made n calls and returns them.
func (f *fakeCC) waitN(t *testing.T, n int, timeout time.Duration) []update {
	t.Helper()
	deadline := time.After(timeout)
	for {
		if u := f.all(); len(u) >= n {
			return u
		}
		select {
		case <-f.notify:
		case <-deadline:
			t.Fatalf("after %v: %d calls, want %d: %s", timeout, len(f.all()), n, f.String())
		}
	}
}

// waitFor waits until a call satisfies ok and returns its index.
func (f *fakeCC) waitFor(t *testing.T, timeout time.Duration, what string, ok func(update) bool) int {
	t.Helper()
	deadline := time.After(timeout)
	for {
		for i, u := range f.all() {
			if ok(u) {
				return i
			}
		}
		select {
		case <-f.notify:
		case <-deadline:
			t.Fatalf("after %v, no call %s: %s", timeout, what, f.String())
		}
	}
}

func (f *fakeCC) String() string {
	var b strings.Builder
	for i, u := range f.all() {
		if u.err != nil {
			fmt.Fprintf(&b, "\n  %d: ReportError(%v)", i, u.err)
		} else {
			fmt.Fprintf(&b, "\n  %d: UpdateState(%v, %s)", i, u.addrs, u.config)
		}
	}
	return b.String()
}

// buildFake builds a resolver for target with a fake ClientConn.
func buildFake(t *testing.T, b *Builder, target string) (*fakeCC, grpcresolver.Resolver) {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	cc := newFakeCC()
	r, err := b.Build(grpcresolver.Target{URL: *u}, cc, grpcresolver.BuildOptions{})
	if err != nil {
		t.Fatalf("Build(%s): %v", target, err)
	}
	t.Cleanup(r.Close)
	return cc, r
}

// fastOptions are Options with short timers for tests.
func fastOptions() Options {
	return Options{
		Bucket:                50,
		Hostname:              "client-1",
		QueryTimeout:          2 * time.Second,
		Attempts:              1,
		MinRefresh:            100 * time.Millisecond,
		MaxRefresh:            time.Minute,
		MinResolveNowInterval: time.Second,
	}
}

// logRecorder is a slog handler that keeps the records.
type logRecorder struct {
	mu      sync.Mutex
	records []slog.Record
}

func (h *logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (h *logRecorder) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.records = append(h.records, r.Clone())
	return nil
}
func (h *logRecorder) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *logRecorder) WithGroup(string) slog.Handler      { return h }

// find returns the records whose message contains msg, as
// "level message key=value…" lines.
func (h *logRecorder) find(msg string) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, r := range h.records {
		if !strings.Contains(r.Message, msg) {
			continue
		}
		s := r.Level.String() + " " + r.Message
		r.Attrs(func(a slog.Attr) bool {
			s += " " + a.Key + "=" + a.Value.String()
			return true
		})
		out = append(out, s)
	}
	return out
}

// checkNoLeak fails the test if goroutines started after before are still
// running once f returns, allowing a short while for them to exit.
func goroutines() int { return runtime.NumGoroutine() }

func waitGoroutines(t *testing.T, want int, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		n := runtime.NumGoroutine()
		if n <= want {
			return
		}
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			buf = buf[:runtime.Stack(buf, true)]
			t.Fatalf("%d goroutines, want at most %d:\n%s", n, want, buf)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func urlParse(s string) (*url.URL, error) { return url.Parse(s) }
