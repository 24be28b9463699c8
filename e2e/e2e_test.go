package e2e

import (
	"context"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/grpc-config-dns/grpc-config-dns/dnspub"
	"github.com/grpc-config-dns/grpc-config-dns/internal/testpb"
	"github.com/grpc-config-dns/grpc-config-dns/resolver"
)

// world is a publisher serving a config file, and an Echo backend.
type world struct {
	file    string
	pub     *dnspub.Server
	port    int // the backend's port
	conns   atomic.Int32
	backend *testpb.Server
}

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

func newWorld(t *testing.T) *world {
	t.Helper()
	w := &world{file: filepath.Join(t.TempDir(), "publisher.yaml")}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	w.port = lis.Addr().(*net.TCPAddr).Port
	w.backend = testpb.NewServer("echo-1")
	s := grpc.NewServer()
	testpb.RegisterEchoServer(s, w.backend)
	go s.Serve(countingListener{lis, &w.conns})
	t.Cleanup(s.Stop)
	return w
}

// zoneHead is the publisher config up to the echo service's config.
const zoneHead = `zones:
  - origin: e2e.test.
    ttl: 1
    nameservers: [{name: ns1, addresses: [127.0.0.1]}]
    services:
      - name: echo
        addresses: [127.0.0.1]
`

// publish publishes serviceConfig (YAML flow style) for the echo service.
func (w *world) publish(t *testing.T, serviceConfig string) {
	t.Helper()
	w.publishRaw(t, zoneHead+"        serviceConfig: "+serviceConfig+"\n")
}

// publishRaw writes a whole publisher config and (re)loads it.
func (w *world) publishRaw(t *testing.T, cfg string) {
	t.Helper()
	if err := os.WriteFile(w.file, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	if w.pub != nil {
		if err := w.pub.Reload(); err != nil {
			t.Fatal(err)
		}
		return
	}
	pub, err := dnspub.New(dnspub.Options{ConfigFile: w.file, StateFile: "-", Listen: "127.0.0.1:0",
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), WatchInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	if err := pub.Start(); err != nil {
		t.Fatal(err)
	}
	w.pub = pub
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		pub.Shutdown(ctx)
	})
}

func (w *world) target() string {
	return "dnsconfig://" + w.pub.Addr().String() + "/echo.e2e.test:" + strconv.Itoa(w.port)
}

func (w *world) client(t *testing.T) (testpb.EchoClient, *resolver.Builder) {
	t.Helper()
	b := resolver.NewBuilder(resolver.Options{Bucket: 50, MinRefresh: 200 * time.Millisecond})
	cc, err := grpc.NewClient(w.target(), append(b.DialOptions(), grpc.WithTransportCredentials(insecure.NewCredentials()))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return testpb.NewEchoClient(cc), b
}

func ctxT(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// The header-extraction design's example, end to end: the rules are
// published by dnspub, read by our resolver and applied by the interceptors
// of Builder.DialOptions, and a real grpc-go server sees the headers, on a
// unary and on a streaming call.
func TestHeaderExtractionThroughThePublisher(t *testing.T) {
	w := newWorld(t)
	w.publish(t, `{methodConfig: [{name: [{service: grpcconfigdns.test.v1.Echo}], headerExtraction: [
          {payloadFieldName: resource.id, delimiterCharacter: "/", numElementsToKeep: 2, headerName: resource_affinity_key},
          {payloadFieldName: user, delimiterCharacter: "@", numElementsToKeep: 3, headerName: user_affinity_key}]}]}`)
	c, _ := w.client(t)
	req := &testpb.EchoRequest{Resource: &testpb.Resource{Id: "//foo/bar/baz"}, User: "roth@quux@mumble@frotz"}
	check := func(what string, h map[string]string) {
		t.Helper()
		if h["resource_affinity_key"] != "foo/bar" || h["user_affinity_key"] != "roth@quux@mumble" {
			t.Errorf("%s: the server saw %v", what, h)
		}
	}
	resp, err := c.Echo(ctxT(t, 5*time.Second), req)
	if err != nil {
		t.Fatal(err)
	}
	check("unary", resp.Headers)
	chat, err := c.Chat(ctxT(t, 5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if err := chat.Send(req); err != nil {
		t.Fatal(err)
	}
	r, err := chat.Recv()
	if err != nil {
		t.Fatal(err)
	}
	check("bidi stream", r.Headers)
	chat.CloseSend()
}

// A config change made at the publisher (reload) reaches a running channel
// within TTL + 1 s, without a new connection: here, a methodConfig timeout
// that starts failing a slow call.
func TestPublishedChangeReachesRunningChannel(t *testing.T) {
	w := newWorld(t)
	w.publish(t, `{methodConfig: [{name: [{service: grpcconfigdns.test.v1.Echo}], timeout: 10s}]}`)
	c, b := w.client(t)
	slow := func() error {
		_, err := c.Slow(ctxT(t, 5*time.Second), &testpb.EchoRequest{SleepMs: 300})
		return err
	}
	if err := slow(); err != nil {
		t.Fatalf("before the change: %v", err)
	}
	w.publish(t, `{methodConfig: [{name: [{service: grpcconfigdns.test.v1.Echo}], timeout: 0.05s}]}`)
	changed := time.Now()
	for status.Code(slow()) != codes.DeadlineExceeded {
		if time.Since(changed) > 2*time.Second {
			st, _ := b.State(w.target())
			t.Fatalf("the new timeout did not reach the channel within TTL (1s) + 1s; resolver state: %+v", st)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("the change took effect after %v", time.Since(changed).Round(10*time.Millisecond))
	if n := w.conns.Load(); n != 1 {
		t.Errorf("the channel opened %d connections, want 1", n)
	}
}

// A canary published by dnspub: clients whose bucket is within the
// percentage get the canary config, the others the catch-all.
func TestCanaryByBucket(t *testing.T) {
	w := newWorld(t)
	w.publishRaw(t, zoneHead+`        choices:
          - percentage: 30
            serviceConfig: {methodConfig: [{name: [{}], timeout: 0.001s}]}
          - serviceConfig: {}
`)
	for _, tc := range []struct {
		bucket int
		canary bool
	}{{1, true}, {30, true}, {31, false}, {100, false}} {
		b := resolver.NewBuilder(resolver.Options{Bucket: tc.bucket})
		cc, err := grpc.NewClient(w.target(), append(b.DialOptions(), grpc.WithTransportCredentials(insecure.NewCredentials()))...)
		if err != nil {
			t.Fatal(err)
		}
		_, err = testpb.NewEchoClient(cc).Slow(ctxT(t, 5*time.Second), &testpb.EchoRequest{SleepMs: 100})
		cc.Close()
		if got := status.Code(err) == codes.DeadlineExceeded; got != tc.canary {
			t.Errorf("bucket %d: canary %v, want %v (err %v)", tc.bucket, got, tc.canary, err)
		}
	}
}
