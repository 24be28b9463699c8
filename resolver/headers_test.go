package resolver

import (
	"context"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	grpcresolver "google.golang.org/grpc/resolver"

	"github.com/grpc-config-dns/grpc-config-dns/internal/dnstest"
	"github.com/grpc-config-dns/grpc-config-dns/internal/testpb"
	"github.com/grpc-config-dns/grpc-config-dns/resolver/extract"
	"github.com/grpc-config-dns/grpc-config-dns/serviceconfig"
)

// seedHeaderConfig is the header-extraction design's example, published
// for the Echo service.
const seedHeaderConfig = `{"methodConfig":[{"name":[{"service":"grpcconfigdns.test.v1.Echo"}],"headerExtraction":[
 {"payloadFieldName":"resource.id","delimiterCharacter":"/","numElementsToKeep":2,"headerName":"resource_affinity_key"},
 {"payloadFieldName":"user","delimiterCharacter":"@","numElementsToKeep":3,"headerName":"user_affinity_key"}]}]}`

var seedRequest = &testpb.EchoRequest{Resource: &testpb.Resource{Id: "//foo/bar/baz"}, User: "roth@quux@mumble@frotz"}

// echoEnv is a DNS server publishing echo.test and an Echo backend on
// loopback.
type echoEnv struct {
	dns    *dnstest.Server
	target string
	conns  *atomic.Int32
}

func newEchoEnv(t *testing.T, config string) *echoEnv {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	counted := countingListener{Listener: lis, n: new(atomic.Int32)}
	s := grpc.NewServer()
	testpb.RegisterEchoServer(s, testpb.NewServer("echo-1"))
	go s.Serve(counted)
	t.Cleanup(s.Stop)
	d := dnstest.Start(t)
	d.SetAddrs("echo.test", 60, "127.0.0.1")
	d.SetConfig("echo.test", 0, oneChoice(config)) // re-resolved every MinRefresh
	port := strconv.Itoa(lis.Addr().(*net.TCPAddr).Port)
	return &echoEnv{dns: d, target: "dnsconfig://" + d.Addr + "/echo.test:" + port, conns: counted.n}
}

func (e *echoEnv) client(t *testing.T, o Options) testpb.EchoClient {
	t.Helper()
	if o.TXTBudget == 0 {
		o.TXTBudget = newChannelBudget // the first call needs the published rules (see env.dial)
	}
	b := NewBuilder(o)
	cc, err := grpc.NewClient(e.target, append(b.DialOptions(), grpc.WithTransportCredentials(insecure.NewCredentials()))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return testpb.NewEchoClient(cc)
}

func ctx5s(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// The design's example end to end: rules published in DNS, read by the
// resolver, applied by the interceptors of Builder.DialOptions, and seen by
// a real grpc-go server, for a unary and a streaming call.
func TestHeaderExtractionFromPublishedConfig(t *testing.T) {
	t.Parallel()
	e := newEchoEnv(t, seedHeaderConfig)
	c := e.client(t, fastOptions())
	want := func(what string, h map[string]string) {
		t.Helper()
		if h["resource_affinity_key"] != "foo/bar" || h["user_affinity_key"] != "roth@quux@mumble" {
			t.Errorf("%s: server saw %v", what, h)
		}
	}
	resp, err := c.Echo(ctx5s(t), seedRequest, grpc.WaitForReady(true))
	if err != nil {
		t.Fatal(err)
	}
	want("unary", resp.Headers)
	chat, err := c.Chat(ctx5s(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := chat.Send(seedRequest); err != nil {
		t.Fatal(err)
	}
	r, err := chat.Recv()
	if err != nil {
		t.Fatal(err)
	}
	want("streaming", r.Headers)
	chat.CloseSend()
}

// A change of the published rules reaches a running channel with the next
// refresh, and the code's rules apply where the published config says
// nothing about headers.
func TestHeaderRulesFollowThePublishedConfig(t *testing.T) {
	t.Parallel()
	e := newEchoEnv(t, `{"loadBalancingConfig":[{"round_robin":{}}]}`)
	code, err := extract.New(map[string][]serviceconfig.HeaderRule{"": {{PayloadFieldName: "user", Delimiter: '@', NumElementsToKeep: 1, HeaderName: "from_code"}}})
	if err != nil {
		t.Fatal(err)
	}
	o := fastOptions()
	o.HeaderRules = code
	c := e.client(t, o)
	get := func() map[string]string {
		resp, err := c.Echo(ctx5s(t), seedRequest, grpc.WaitForReady(true))
		if err != nil {
			t.Fatal(err)
		}
		return resp.Headers
	}
	if h := get(); h["from_code"] != "roth" || h["user_affinity_key"] != "" {
		t.Fatalf("before: server saw %v", h)
	}
	// Keep the load-balancing policy: changing it would, legitimately, make
	// new connections.
	e.dns.SetConfig("echo.test", 0, oneChoice(strings.Replace(seedHeaderConfig, "{", `{"loadBalancingConfig":[{"round_robin":{}}],`, 1)))
	deadline := time.Now().Add(3 * time.Second)
	for {
		h := get()
		if h["user_affinity_key"] == "roth@quux@mumble" {
			if h["from_code"] != "" {
				t.Errorf("published rules should replace the code's for this method: %v", h)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the published rules did not reach the channel within 3s: %v", h)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if n := e.conns.Load(); n != 1 {
		t.Errorf("the channel made %d connections, want 1: the change must not reconnect", n)
	}
}

// resolver.Register cannot give channels the header interceptors (grpc-go
// has no public global interceptors): a channel that uses the global
// registration and gets a config with headerExtraction rules says so, in
// the log at error level and in State.LastError, naming the fix.
func TestHeaderRulesThroughRegisterAreReported(t *testing.T) {
	e := newEchoEnv(t, seedHeaderConfig)
	logs := &logRecorder{}
	o := fastOptions()
	o.Logger = slog.New(logs)
	o.TXTBudget = newChannelBudget // the first call must come after the config
	b := Register(o)
	t.Cleanup(func() { grpcresolver.Register(NewBuilder(Options{})) })
	cc, err := grpc.NewClient(e.target, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	resp, err := testpb.NewEchoClient(cc).Echo(ctx5s(t), seedRequest, grpc.WaitForReady(true))
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Headers["resource_affinity_key"]) != 0 {
		t.Fatalf("server saw %v: the global registration has no interceptors", resp.Headers)
	}
	// The resolver reports it as it gives the channel the config, which
	// may come just after the call on a loaded machine: wait a little.
	var st State
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if st, _ = b.State(e.target); st.LastError != nil && len(logs.find("headerExtraction rules cannot be applied")) > 0 {
			break
		}
	}
	if st.LastError == nil || !strings.Contains(st.LastError.Error(), "DialOptions") {
		t.Errorf("State.LastError = %v: want it to say the headers are not added and name DialOptions", st.LastError)
	}
	if l := logs.find("headerExtraction rules cannot be applied"); len(l) != 1 || !strings.HasPrefix(l[0], "ERROR") {
		t.Errorf("log %v: want one error record", l)
	}
	// With the Builder's DialOptions, the same Builder applies them.
	cc2, err := grpc.NewClient(e.target, append(b.DialOptions(), grpc.WithTransportCredentials(insecure.NewCredentials()))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc2.Close() })
	resp, err = testpb.NewEchoClient(cc2).Echo(ctx5s(t), seedRequest, grpc.WaitForReady(true))
	if err != nil || resp.Headers["resource_affinity_key"] != "foo/bar" {
		t.Errorf("with DialOptions: %v %v", resp, err)
	}
}

// TestHeaderRulesPerChannel: whether a channel has the header interceptors
// is a property of that channel, not of the Builder: a channel created
// through the global registration after another got the Builder's
// DialOptions has none, and says so; one created with them after a plain
// one has them, and reports no gap. Both orders, both channels open.
func TestHeaderRulesPerChannel(t *testing.T) {
	for _, dialFirst := range []bool{true, false} {
		name := "plain channel first"
		if dialFirst {
			name = "DialOptions channel first"
		}
		t.Run(name, func(t *testing.T) {
			e := newEchoEnv(t, seedHeaderConfig)
			logs := &logRecorder{}
			o := fastOptions()
			o.Logger = slog.New(logs)
			o.TXTBudget = newChannelBudget // the first call must come after the config
			b := Register(o)
			t.Cleanup(func() { grpcresolver.Register(NewBuilder(Options{})) })
			const gap = "headerExtraction rules cannot be applied"
			dial := func(opts ...grpc.DialOption) *grpc.ClientConn {
				t.Helper()
				cc, err := grpc.NewClient(e.target, append(opts, grpc.WithTransportCredentials(insecure.NewCredentials()))...)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { cc.Close() })
				return cc
			}
			echo := func(cc *grpc.ClientConn) map[string]string {
				t.Helper()
				resp, err := testpb.NewEchoClient(cc).Echo(ctx5s(t), seedRequest, grpc.WaitForReady(true))
				if err != nil {
					t.Fatal(err)
				}
				return resp.Headers
			}
			withInterceptors := func() *grpc.ClientConn {
				t.Helper()
				cc := dial(b.DialOptions()...)
				if h := echo(cc); h["resource_affinity_key"] != "foo/bar" {
					t.Errorf("the channel with DialOptions sent %v, want resource_affinity_key foo/bar", h)
				}
				return cc
			}
			plain := func() *grpc.ClientConn {
				t.Helper()
				cc := dial()
				if h := echo(cc); len(h["resource_affinity_key"]) != 0 {
					t.Errorf("the plain channel sent %v: it has no interceptors", h)
				}
				// The resolver reports the gap as it gives the channel the
				// config, which may come just after the call: wait a little.
				for deadline := time.Now().Add(5 * time.Second); len(logs.find(gap)) == 0 && time.Now().Before(deadline); {
					time.Sleep(10 * time.Millisecond)
				}
				return cc
			}
			var ccPlain, ccDial *grpc.ClientConn
			if dialFirst {
				ccDial = withInterceptors()
				ccPlain = plain()
			} else {
				ccPlain = plain()
				ccDial = withInterceptors()
			}
			// Only the plain channel reports the gap, once.
			if l := logs.find(gap); len(l) != 1 || !strings.HasPrefix(l[0], "ERROR") {
				t.Errorf("log %v: want one error record, from the plain channel", l)
			}
			// Each channel alone: the plain one's state names the fix, the
			// other's has no error. (State answers for the most recently
			// updated channel of a target: close the other first.)
			stateAlone := func(other *grpc.ClientConn) State {
				t.Helper()
				other.Close() // Close waits for its resolver to close
				b.mu.Lock()
				n := len(b.resolvers[e.target])
				b.mu.Unlock()
				if n != 1 {
					t.Fatalf("%d resolvers for %s after closing one of two channels", n, e.target)
				}
				st, _ := b.State(e.target)
				return st
			}
			if dialFirst {
				if st := stateAlone(ccDial); st.LastError == nil || !strings.Contains(st.LastError.Error(), "DialOptions") {
					t.Errorf("plain channel: State.LastError = %v: want it to say the headers are not added and name DialOptions", st.LastError)
				}
			} else {
				if st := stateAlone(ccPlain); st.LastError != nil {
					t.Errorf("channel with DialOptions: State.LastError = %v, want none", st.LastError)
				}
			}
		})
	}
}
