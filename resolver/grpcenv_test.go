package resolver

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials/insecure"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/status"

	"github.com/grpc-config-dns/grpc-config-dns/internal/dnstest"
)

// The method the published configs talk about.
const testService = "grpc.testing.TestService"

// backend is a gRPC test server on 127.0.0.1. Its UnaryCall sleeps for
// ResponseSize milliseconds (or until the call ends) and answers with its
// name and the deadline it saw, so a test can tell which config the client
// used.
type backend struct {
	testpb.UnimplementedTestServiceServer
	name  string
	addr  string
	srv   *grpc.Server
	conns atomic.Int32 // connections accepted
	calls atomic.Int32
	// failNext makes the next calls fail with UNAVAILABLE.
	failNext atomic.Int32
}

// countingListener counts accepted connections.
type countingListener struct {
	net.Listener
	n *atomic.Int32
}

func (l countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.n.Add(1)
	}
	return c, err
}

func startBackend(t testing.TB, name string) *backend {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &backend{name: name, addr: l.Addr().String(), srv: grpc.NewServer()}
	testpb.RegisterTestServiceServer(b.srv, b)
	go b.srv.Serve(countingListener{l, &b.conns})
	t.Cleanup(b.srv.Stop)
	return b
}

func (b *backend) UnaryCall(ctx context.Context, req *testpb.SimpleRequest) (*testpb.SimpleResponse, error) {
	b.calls.Add(1)
	if n := b.failNext.Load(); n > 0 && b.failNext.CompareAndSwap(n, n-1) {
		return nil, status.Error(codes.Unavailable, "failing on purpose")
	}
	if ms := req.GetResponseSize(); ms > 0 {
		select {
		case <-time.After(time.Duration(ms) * time.Millisecond):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	seen := "none"
	if d, ok := ctx.Deadline(); ok {
		seen = strconv.FormatInt(time.Until(d).Milliseconds(), 10)
	}
	return &testpb.SimpleResponse{Hostname: b.name, Username: seen}, nil
}

// env is a DNS server publishing svc.test with one address per backend
// (192.0.2.1, 192.0.2.2, …), and the backends. Channels dial through a
// dialer that maps those addresses to the backends on 127.0.0.1, so two
// backends share the target's port as real ones would on two hosts.
type env struct {
	dns      *dnstest.Server
	backends []*backend
}

func newEnv(t testing.TB, n int) *env {
	e := &env{dns: dnstest.Start(t)}
	var ips []string
	for i := range n {
		e.backends = append(e.backends, startBackend(t, fmt.Sprintf("backend-%d", i+1)))
		ips = append(ips, fmt.Sprintf("192.0.2.%d", i+1))
	}
	e.dns.SetAddrs("svc.test", 60, ips...)
	return e
}

func (e *env) target() string { return "dnsconfig://" + e.dns.Addr + "/svc.test:50051" }

func (e *env) dialer() grpc.DialOption {
	return grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		i, err := strconv.Atoi(strings.TrimPrefix(host, "192.0.2."))
		if err != nil || i < 1 || i > len(e.backends) {
			return nil, fmt.Errorf("test dialer: no backend for %s", addr)
		}
		var d net.Dialer
		return d.DialContext(ctx, "tcp", e.backends[i-1].addr)
	})
}

// dial opens a channel to the env's target with a Builder for o.
//
// Unless o sets TXTBudget, a new channel waits for the TXT answer however
// slow the machine: the tests of a published config would otherwise see
// its first calls made without it whenever the answer took longer than
// the default budget (issue 18's flake).
func (e *env) dial(t testing.TB, o Options, extra ...grpc.DialOption) (*grpc.ClientConn, *Builder) {
	t.Helper()
	if o.TXTBudget == 0 {
		o.TXTBudget = newChannelBudget
	}
	b := NewBuilder(o)
	opts := append(b.DialOptions(), grpc.WithTransportCredentials(insecure.NewCredentials()), e.dialer())
	cc, err := grpc.NewClient(e.target(), append(opts, extra...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return cc, b
}

func (e *env) connections() int {
	n := 0
	for _, b := range e.backends {
		n += int(b.conns.Load())
	}
	return n
}

// call makes one UnaryCall asking the server to take sleep; it returns the
// server's name and the deadline the server saw (-1 for none).
func call(cc *grpc.ClientConn, sleep time.Duration, opts ...grpc.CallOption) (string, time.Duration, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return callCtx(ctx, cc, sleep, opts...)
}

// callCtx is call with the caller's context (no deadline of its own).
func callCtx(ctx context.Context, cc *grpc.ClientConn, sleep time.Duration, opts ...grpc.CallOption) (string, time.Duration, error) {
	resp, err := testpb.NewTestServiceClient(cc).UnaryCall(ctx, &testpb.SimpleRequest{ResponseSize: int32(sleep.Milliseconds())}, opts...)
	if err != nil {
		return "", 0, err
	}
	if resp.Username == "none" {
		return resp.Hostname, -1, nil
	}
	ms, _ := strconv.Atoi(resp.Username)
	return resp.Hostname, time.Duration(ms) * time.Millisecond, nil
}

// callNoDeadline makes a call without a deadline of the caller's, so the
// deadline the server sees is the service config's timeout (or none).
func callNoDeadline(t testing.TB, cc *grpc.ClientConn) time.Duration {
	t.Helper()
	// A deadline of our own would hide the config's; a timer bounds the
	// wait instead.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	timer := time.AfterFunc(20*time.Second, cancel)
	defer timer.Stop()
	_, d, err := callCtx(ctx, cc, 0, grpc.WaitForReady(true))
	if err != nil {
		t.Fatalf("call: %v", err)
	}
	return d
}

// about reports whether a deadline the server saw is the timeout want (it
// sees a little less).
func about(seen, want time.Duration) bool {
	return seen <= want && seen > want-2*time.Second
}

// timeoutConfig is a service config whose only effect is a timeout on the
// test service's methods.
func timeoutConfig(d string) string {
	return `{"methodConfig":[{"name":[{"service":"` + testService + `"}],"timeout":"` + d + `"}]}`
}

func waitForState(t testing.TB, cc *grpc.ClientConn, want connectivity.State, within time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	cc.Connect()
	for s := cc.GetState(); s != want; s = cc.GetState() {
		if !cc.WaitForStateChange(ctx, s) {
			t.Fatalf("channel is %v after %v, want %v", cc.GetState(), within, want)
		}
	}
}

func grpcInsecure() grpc.DialOption { return grpc.WithTransportCredentials(insecure.NewCredentials()) }

// settledState is the channel's state once it has settled, waiting up to
// 5s for READY. grpc-go gives calls the balancer's new picker before it
// records the channel's new state, so on a loaded machine a call can
// succeed on a fresh connection while GetState still says CONNECTING: the
// flake of TestGRPCInvalidRecordOnNewChannel in issue 18 ("channel
// CONNECTING" right after a successful call).
func settledState(cc *grpc.ClientConn) connectivity.State {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for s := cc.GetState(); ; s = cc.GetState() {
		if s == connectivity.Ready || !cc.WaitForStateChange(ctx, s) {
			return cc.GetState()
		}
	}
}
