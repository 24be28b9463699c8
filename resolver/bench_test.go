package resolver

import (
	"context"
	"flag"
	"fmt"
	"net"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
	"google.golang.org/grpc"
	grpcresolver "google.golang.org/grpc/resolver"

	"github.com/grpc-config-dns/grpc-config-dns/internal/dnstest"
)

// The comparison with grpc-go's own dns resolver. Both resolvers ask the
// same test DNS server for the same records; the server holds every answer
// back by a latency, as a recursive resolver on the network would. grpc-go
// (1.85) looks TXT service configs up by default
// (GRPC_ENABLE_TXT_SERVICE_CONFIG); the benchmark fails if its channel
// never runs under the config.

var compareGRPCGo = flag.Bool("grpcgo-change", false, "run TestCompareChangePropagation: how long a published change takes to reach a running channel, ours and grpc-go's (takes about 45s)")

// benchEnv is a backend on 127.0.0.1 published as svc.test with a config
// whose timeout tells the server that the client runs under it.
type benchEnv struct {
	dns  *dnstest.Server
	be   *backend
	port string
}

const benchTimeout = 7 * time.Second

var benchConfig = timeoutConfig(fmt.Sprint(benchTimeout.Seconds()) + "s")

func newBenchEnv(tb testing.TB, latency time.Duration, ttl uint32) *benchEnv {
	e := &benchEnv{dns: dnstest.Start(tb), be: startBackend(tb, "backend")}
	_, e.port, _ = net.SplitHostPort(e.be.addr)
	e.dns.SetAddrs("svc.test", ttl, "127.0.0.1")
	e.dns.SetConfig("svc.test", ttl, oneChoice(benchConfig))
	for _, qt := range []uint16{dns.TypeA, dns.TypeAAAA, dns.TypeTXT} {
		e.dns.SetDelay(qt, latency)
	}
	return e
}

func (e *benchEnv) ours() string   { return "dnsconfig://" + e.dns.Addr + "/svc.test:" + e.port }
func (e *benchEnv) grpcGo() string { return "dns://" + e.dns.Addr + "/svc.test:" + e.port }

// firstConfiguredRPC creates a channel whose resolver is built by rb and
// makes calls until one runs under the published config. It returns the
// time from grpc.NewClient to the end of that call, and to the moment the
// resolver first gave the channel a state with a service config (the
// resolution's share).
func firstConfiguredRPC(tb testing.TB, target string, rb grpcresolver.Builder) (rpc, resolved time.Duration) {
	u, err := url.Parse(target)
	if err != nil {
		tb.Fatal(err)
	}
	tim := &timingBuilder{Builder: rb, configured: make(chan time.Time, 1)}
	u.Scheme = tim.Scheme()
	start := time.Now()
	cc, err := grpc.NewClient(u.String(), grpc.WithResolvers(tim), grpcInsecure())
	if err != nil {
		tb.Fatal(err)
	}
	defer cc.Close()
	for {
		if d := callNoDeadline(tb, cc); about(d, benchTimeout) {
			rpc = time.Since(start)
			break
		}
		if time.Since(start) > 10*time.Second {
			tb.Fatalf("%s: no call ran under the published config within 10s", target)
		}
	}
	return rpc, (<-tim.configured).Sub(start)
}

// timingBuilder wraps a resolver builder (ours or grpc-go's dns, which read
// only the target's authority and endpoint) under the scheme "timed", and
// notes when its resolver first gives the channel a service config.
type timingBuilder struct {
	grpcresolver.Builder
	configured chan time.Time
}

func (b *timingBuilder) Scheme() string { return "timed" }

func (b *timingBuilder) Build(t grpcresolver.Target, cc grpcresolver.ClientConn, o grpcresolver.BuildOptions) (grpcresolver.Resolver, error) {
	return b.Builder.Build(t, &timingCC{ClientConn: cc, configured: b.configured}, o)
}

type timingCC struct {
	grpcresolver.ClientConn
	configured chan time.Time
	once       sync.Once
}

func (c *timingCC) UpdateState(s grpcresolver.State) error {
	if s.ServiceConfig != nil && s.ServiceConfig.Err == nil {
		c.once.Do(func() { c.configured <- time.Now() })
	}
	return c.ClientConn.UpdateState(s)
}

var benchLatencies = []time.Duration{0, 5 * time.Millisecond, 20 * time.Millisecond}

// BenchmarkFirstConfiguredRPC measures, per resolver, the time from
// grpc.NewClient to the first call that runs under the published config.
func BenchmarkFirstConfiguredRPC(b *testing.B) {
	for _, lat := range benchLatencies {
		e := newBenchEnv(b, lat, 60)
		b.Run(fmt.Sprintf("latency=%v/resolver=dnsconfig", lat), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				firstConfiguredRPC(b, e.ours(), NewBuilder(Options{}))
			}
		})
		b.Run(fmt.Sprintf("latency=%v/resolver=grpc-go-dns", lat), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				firstConfiguredRPC(b, e.grpcGo(), grpcresolver.Get("dns"))
			}
		})
	}
}

// BenchmarkFirstConfiguredRPCRatio runs three resolvers alternately in one
// loop, so drift on a shared machine hits them alike: ours, grpc-go's, and
// the floor, a resolver that does no DNS at all and hands the channel its
// addresses and an already parsed config exactly one latency after it is
// built — the best any resolver that needs one DNS round trip can do. It
// reports ours / grpc-go's (lower is better; the target is at most 0.5),
// floor / grpc-go's (no one-round-trip resolver can beat it), and ours /
// floor (what our lookups, parsing and selection cost).
func BenchmarkFirstConfiguredRPCRatio(b *testing.B) {
	for _, lat := range append(benchLatencies, 50*time.Millisecond) {
		e := newBenchEnv(b, lat, 60)
		floor := &floorBuilder{latency: lat, addr: e.be.addr, config: benchConfig}
		b.Run(fmt.Sprintf("latency=%v", lat), func(b *testing.B) {
			var ours, theirs, best, oursRes, theirsRes time.Duration
			for b.Loop() {
				rpc, res := firstConfiguredRPC(b, e.ours(), NewBuilder(Options{}))
				ours, oursRes = ours+rpc, oursRes+res
				rpc, res = firstConfiguredRPC(b, e.grpcGo(), grpcresolver.Get("dns"))
				theirs, theirsRes = theirs+rpc, theirsRes+res
				rpc, _ = firstConfiguredRPC(b, "floor:///svc.test", floor)
				best += rpc
			}
			n := float64(b.N)
			b.ReportMetric(float64(ours.Microseconds())/n/1000, "dnsconfig-ms")
			b.ReportMetric(float64(theirs.Microseconds())/n/1000, "grpc-go-ms")
			b.ReportMetric(float64(ours)/float64(theirs), "ratio")
			b.ReportMetric(float64(best)/float64(theirs), "floor-ratio")
			b.ReportMetric(float64(ours)/float64(best), "ours/floor")
			// The resolution's share: from grpc.NewClient to the first state
			// carrying the config, without the connection and the call that
			// both pay alike.
			b.ReportMetric(float64(oursRes)/float64(theirsRes), "resolve-ratio")
		})
	}
}

// floorBuilder builds resolvers that ask no DNS server: each parses config
// when it is built and gives the channel addr and that config one latency
// later, as a resolver whose lookups took a single round trip and no time
// of their own would.
type floorBuilder struct {
	latency time.Duration
	addr    string
	config  string
}

func (b *floorBuilder) Scheme() string { return "floor" }

func (b *floorBuilder) Build(_ grpcresolver.Target, cc grpcresolver.ClientConn, _ grpcresolver.BuildOptions) (grpcresolver.Resolver, error) {
	st := grpcresolver.State{
		Addresses:     []grpcresolver.Address{{Addr: b.addr}},
		ServiceConfig: cc.ParseServiceConfig(b.config),
	}
	r := &floorResolver{timer: time.AfterFunc(b.latency, func() { cc.UpdateState(st) })}
	return r, nil
}

type floorResolver struct{ timer *time.Timer }

func (r *floorResolver) ResolveNow(grpcresolver.ResolveNowOptions) {}
func (r *floorResolver) Close()                                    { r.timer.Stop() }

// TestCompareChangePropagation publishes a change and waits for it to reach
// a running channel of each resolver: ours must see it within TTL + 1s;
// grpc-go's re-resolves only on connection trouble, so its time is
// reported as observed (at most 40s). Run with -grpcgo-change.
func TestCompareChangePropagation(t *testing.T) {
	if !*compareGRPCGo {
		t.Skip("slow (about 45s): run with -grpcgo-change")
	}
	const ttl = 1
	e := newBenchEnv(t, 0, ttl)
	o := Options{MinRefresh: 500 * time.Millisecond}
	ours, err := grpc.NewClient(e.ours(), append(NewBuilder(o).DialOptions(), grpcInsecure())...)
	if err != nil {
		t.Fatal(err)
	}
	defer ours.Close()
	theirs, err := grpc.NewClient(e.grpcGo(), grpcInsecure())
	if err != nil {
		t.Fatal(err)
	}
	defer theirs.Close()
	for _, cc := range []*grpc.ClientConn{ours, theirs} {
		if d := callNoDeadline(t, cc); !about(d, benchTimeout) {
			t.Fatalf("%s: deadline %v before the change", cc.Target(), d)
		}
	}
	e.dns.SetConfig("svc.test", ttl, oneChoice(timeoutConfig("22s")))
	published := time.Now()
	seen := map[*grpc.ClientConn]time.Duration{}
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	for len(seen) < 2 && ctx.Err() == nil {
		for _, cc := range []*grpc.ClientConn{ours, theirs} {
			if _, ok := seen[cc]; ok {
				continue
			}
			if d := callNoDeadline(t, cc); about(d, 22*time.Second) {
				seen[cc] = time.Since(published)
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	report := func(name string, cc *grpc.ClientConn) string {
		if d, ok := seen[cc]; ok {
			return fmt.Sprintf("%s: %v", name, d.Round(10*time.Millisecond))
		}
		return fmt.Sprintf("%s: not within %v", name, time.Since(published).Round(time.Second))
	}
	t.Logf("a published change reached the running channel (TTL %ds) — %s; %s", ttl, report("dnsconfig", ours), report("grpc-go dns", theirs))
	if d, ok := seen[ours]; !ok || d > ttl*time.Second+time.Second {
		t.Errorf("ours took longer than TTL + 1s")
	}
}
