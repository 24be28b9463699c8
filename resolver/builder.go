package resolver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	grpcresolver "google.golang.org/grpc/resolver"
	"google.golang.org/grpc/status"

	"github.com/grpc-config-dns/grpc-config-dns/resolver/extract"
)

// Scheme is the target scheme the Builder resolves: dnsconfig:///HOST[:PORT]
// or dnsconfig://NS_IP[:PORT]/HOST[:PORT].
const Scheme = "dnsconfig"

// Builder builds resolvers for dnsconfig targets. It is a grpc-go
// resolver.Builder; pass it to channels with DialOptions, or register it
// globally with Register. One Builder serves any number of channels.
type Builder struct {
	cfg *config
	err error // from Options, reported by Build
	// net carries the resolvers' DNS queries; nil is the network. Tests
	// set an in-memory one.
	net transport

	mu        sync.Mutex
	resolvers map[string][]*dnsResolver // by target, for State

	// headers holds, per target, the headerExtraction rules of the config
	// its channels use, for the interceptors. Keyed both by the canonical
	// target and by the string channels were created with.
	headers sync.Map // string -> *ruleHolder
}

// ruleHolder is the current header rules of one target. It outlives the
// target's resolvers, which a channel rebuilds when it leaves idleness.
type ruleHolder struct {
	rules atomic.Pointer[extract.Rules]
	// ready is closed once a first resolution has finished (a state
	// delivered, an error reported, or the resolver failed to build).
	ready chan struct{}
	once  sync.Once
}

func (h *ruleHolder) markReady() { h.once.Do(func() { close(h.ready) }) }

// holder returns the rule holder of a canonical target key.
func (b *Builder) holder(key string) *ruleHolder {
	if h, ok := b.headers.Load(key); ok {
		return h.(*ruleHolder)
	}
	h, _ := b.headers.LoadOrStore(key, &ruleHolder{ready: make(chan struct{})})
	return h.(*ruleHolder)
}

// headerRules is the interceptors' Source: the rules of the config the
// channel's resolver delivered last. Before the channel's first resolution
// has finished it starts the channel (a new channel is idle until its
// first call, which comes after the interceptors) and waits for it, so that
// the first call carries the published headers too.
func (b *Builder) headerRules(ctx context.Context, cc *grpc.ClientConn) (*extract.Rules, error) {
	t := cc.Target()
	var h *ruleHolder
	if v, ok := b.headers.Load(t); ok {
		h = v.(*ruleHolder)
	} else {
		key := t
		if u, err := url.Parse(t); err == nil {
			key = u.String()
		}
		h = b.holder(key)
		b.headers.Store(t, h)
	}
	select {
	case <-h.ready:
		return h.rules.Load(), nil
	default:
	}
	cc.Connect()
	select {
	case <-h.ready:
		return h.rules.Load(), nil
	case <-ctx.Done():
		return nil, status.FromContextError(ctx.Err()).Err()
	}
}

// NewBuilder returns a Builder configured by o. Problems with o (see
// Options.Validate) are reported when a channel builds a resolver.
func NewBuilder(o Options) *Builder {
	b := &Builder{resolvers: map[string][]*dnsResolver{}}
	b.cfg, b.err = o.resolve()
	return b
}

// Register creates a Builder and registers it with grpc-go for the
// dnsconfig scheme, for every channel of the process. Like
// resolver.Register, call it at initialisation time only.
//
// Registration gives channels the resolver and the service config, not the
// headerExtraction interceptors: grpc-go has no public way to add
// interceptors to every channel. A channel whose published config has
// headerExtraction rules needs them: create it with
// grpc.NewClient(target, b.DialOptions()...) using the Builder returned.
// A channel created without them (grpc.NewClient("dnsconfig:///…") through
// the registration) that gets a config with such rules logs an error and
// sets State.LastError, naming this fix, whatever other channels of the
// Builder do.
func Register(o Options) *Builder {
	b := NewBuilder(o)
	grpcresolver.Register(b)
	return b
}

// Scheme returns "dnsconfig".
func (b *Builder) Scheme() string { return Scheme }

// DialOptions returns the options a channel needs to use this Builder: the
// resolver itself; when Options.DefaultServiceConfig is set, that config as
// the channel's default; and the interceptors that add the headers the
// config's headerExtraction rules take from each request (see package
// extract), following config changes live.
func (b *Builder) DialOptions() []grpc.DialOption {
	// The resolver given is a view of b whose resolvers know that their
	// channel has the interceptors: b itself, registered globally or
	// passed with grpc.WithResolvers, builds resolvers for channels
	// without them.
	opts := []grpc.DialOption{grpc.WithResolvers(interceptedBuilder{b})}
	var fallback *extract.Rules
	if b.cfg != nil {
		if b.cfg.defaultConfig != "" {
			opts = append(opts, grpc.WithDefaultServiceConfig(b.cfg.defaultConfig))
		}
		fallback = b.cfg.HeaderRules
	}
	unary, stream := extract.Interceptors(b.headerRules, fallback)
	return append(opts, grpc.WithChainUnaryInterceptor(unary), grpc.WithChainStreamInterceptor(stream))
}

// interceptedBuilder is the Builder as DialOptions gives it to a channel
// along with the header interceptors.
type interceptedBuilder struct{ b *Builder }

func (ib interceptedBuilder) Scheme() string { return Scheme }

func (ib interceptedBuilder) Build(t grpcresolver.Target, cc grpcresolver.ClientConn, opts grpcresolver.BuildOptions) (grpcresolver.Resolver, error) {
	return ib.b.build(t, cc, opts, true)
}

// Build starts resolving target for cc. It is called by grpc-go for a
// channel that uses the Builder without its DialOptions (through Register,
// or grpc.WithResolvers), which therefore has no header interceptors.
func (b *Builder) Build(t grpcresolver.Target, cc grpcresolver.ClientConn, opts grpcresolver.BuildOptions) (grpcresolver.Resolver, error) {
	return b.build(t, cc, opts, false)
}

// build starts resolving target for cc; intercepted says whether the
// channel has the header interceptors of DialOptions.
func (b *Builder) build(t grpcresolver.Target, cc grpcresolver.ClientConn, opts grpcresolver.BuildOptions, intercepted bool) (_ grpcresolver.Resolver, err error) {
	headers := b.holder(t.URL.String())
	defer func() {
		if err != nil {
			headers.markReady() // calls waiting for the first resolution go on
		}
	}()
	if b.err != nil {
		return nil, b.err
	}
	if t.URL.User != nil {
		return nil, fmt.Errorf("dnsconfig target %q has user information (%s@): write dnsconfig://NS_IP[:PORT]/HOST[:PORT]", t.URL.String(), t.URL.User.Username())
	}
	tg, err := parseTarget(t.URL.Host, t.Endpoint())
	if err != nil {
		return nil, err
	}
	d := b.newResolver(t.URL.String(), tg, cc, opts, headers)
	d.intercepted = intercepted
	if d.defaultPR != nil && d.defaultPR.Err != nil {
		return nil, fmt.Errorf("resolver.Options.DefaultServiceConfig is rejected by grpc-go: %v", d.defaultPR.Err)
	}
	if tg.ip.IsValid() {
		// An IP literal needs no DNS, and has no name to hold a config.
		b.add(d)
		d.deliver([]string{tg.addr(tg.ip)}, outcome{ev: event{kind: evNone}, reason: "the target is an IP address: no DNS lookup, no published config"})
		d.setState(func(s *State) { s.Resolved = time.Now() })
		return staticResolver{d}, nil
	}
	lc, err := b.cfg.lookupConf(tg)
	if err != nil {
		return nil, err
	}
	d.names, d.name, d.hostsFile = lc.names, lc.names[0], lc.hostsFile
	d.client = dnsClient{servers: lc.servers, timeout: lc.timeout, attempts: lc.attempts, rotate: lc.rotate, next: new(atomic.Uint32), net: b.net, val: b.cfg.Validator, ad: b.cfg.RequireAuthenticatedData}
	d.ctx, d.cancel = context.WithCancel(context.Background())
	b.add(d)
	d.wg.Add(1)
	go d.watch()
	return d, nil
}

// newResolver makes the resolver of one channel, not started.
func (b *Builder) newResolver(key string, tg target, cc grpcresolver.ClientConn, opts grpcresolver.BuildOptions, headers *ruleHolder) *dnsResolver {
	cfg := b.cfg
	d := &dnsResolver{
		b:          b,
		cfg:        cfg,
		key:        key,
		t:          tg,
		cc:         cc,
		sel:        cfg.client(tg.nameserver),
		wantConfig: !opts.DisableServiceConfig,
		rn:         make(chan struct{}, 1),
		headers:    headers,
		conf:       newChannel,
	}
	d.log = cfg.Logger.With(slog.String("target", d.key))
	if cfg.hostnameErr != nil {
		d.log.Warn("cannot read this machine's hostname: choices with clientHostname will not match; set Options.Hostname", slog.Any("error", cfg.hostnameErr))
	}
	if cfg.defaultConfig != "" {
		d.defaultPR = cc.ParseServiceConfig(cfg.defaultConfig)
	}
	d.state = State{Target: d.key, Choice: -1, Config: configUnset.String(), Bucket: cfg.bucket, Reason: "not resolved yet"}
	return d
}

// ErrNoNameservers is the error (wrapped) of a target that names no
// nameserver when Options.Nameservers is empty and the resolv.conf file
// gives no usable one.
var ErrNoNameservers = errors.New("dnsconfig: no nameservers")

// lookupConf is how a target's names are looked up.
type lookupConf struct {
	servers []string
	// names are the names to ask, in order, fully qualified: the host
	// through the search list, or the host alone.
	names []string
	// hostsFile is the hosts file asked for addresses before DNS, or "".
	hostsFile string
	timeout   time.Duration
	attempts  int
	rotate    bool
}

// lookupConf says how a target is looked up: with its authority, else
// with Options.Nameservers (the host as written, no hosts file), else the
// system's way, as glibc and Go's resolver do: the hosts file, then the
// nameservers of the resolv.conf file through its search list and ndots,
// with its timeout, attempts and rotate options where Options leave them
// unset.
func (c *config) lookupConf(tg target) (*lookupConf, error) {
	lc, err := c.lookupServers(tg)
	if err != nil || !c.RequireAuthenticatedData {
		return lc, err
	}
	for _, ns := range lc.servers {
		if ap, err := netip.ParseAddrPort(ns); err != nil || !ap.Addr().IsLoopback() {
			return nil, fmt.Errorf("dnsconfig: resolver.Options.RequireAuthenticatedData trusts the AD bit of a resolver on this machine only: nameserver %s is not a loopback address", ns)
		}
	}
	return lc, nil
}

// lookupServers is lookupConf without the check of the servers' trust.
func (c *config) lookupServers(tg target) (*lookupConf, error) {
	lc := &lookupConf{names: []string{fqdn(tg.host)}, timeout: c.QueryTimeout, attempts: c.Attempts}
	if tg.nameserver != "" {
		lc.servers = []string{tg.nameserver}
		return lc, nil
	}
	if len(c.nameservers) > 0 {
		lc.servers = c.nameservers
		return lc, nil
	}
	rc, err := readResolvConf(c.ResolvConf)
	if err != nil {
		return nil, fmt.Errorf("%w: Options.Nameservers is empty and %s cannot be read (%v); set Options.Nameservers or use dnsconfig://NS_IP/HOST", ErrNoNameservers, c.ResolvConf, err)
	}
	if len(rc.servers) == 0 {
		why := ""
		if len(rc.skipped) > 0 {
			why = ": skipped " + strings.Join(rc.skipped, ", ")
		}
		return nil, fmt.Errorf("%w: %s lists no usable nameserver%s; set Options.Nameservers or use dnsconfig://NS_IP/HOST", ErrNoNameservers, c.ResolvConf, why)
	}
	lc.servers, lc.names, lc.hostsFile, lc.rotate = rc.servers, rc.nameList(tg.written()), c.HostsFile, rc.rotate
	if len(lc.names) == 0 {
		return nil, fmt.Errorf("dnsconfig: host %q is too long for DNS with any name of the search list of %s", tg.host, c.ResolvConf)
	}
	if !c.timeoutSet && rc.timeout > 0 {
		lc.timeout = rc.timeout
	}
	if !c.attemptsSet && rc.attempts > 0 {
		lc.attempts = rc.attempts
	}
	return lc, nil
}

func (b *Builder) add(d *dnsResolver) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.resolvers[d.key] = append(b.resolvers[d.key], d)
}

func (b *Builder) remove(d *dnsResolver) {
	b.mu.Lock()
	defer b.mu.Unlock()
	l := slices.DeleteFunc(b.resolvers[d.key], func(x *dnsResolver) bool { return x == d })
	if len(l) == 0 {
		delete(b.resolvers, d.key)
	} else {
		b.resolvers[d.key] = l
	}
}

// State returns what the resolver of a channel for target (as given to
// grpc.NewClient) last learned, and false when no open channel of this
// Builder resolves target. With several channels for one target, the most
// recently updated one answers. A channel builds its resolver when it
// first connects (grpc.NewClient starts idle).
func (b *Builder) State(target string) (State, bool) {
	key := target
	if u, err := url.Parse(target); err == nil {
		key = u.String()
	}
	b.mu.Lock()
	l := slices.Clone(b.resolvers[key])
	b.mu.Unlock()
	return newest(l)
}

// States returns the State of every target an open channel of this
// Builder resolves (as State gives it), in the order of their targets:
// what a metrics collector exports.
func (b *Builder) States() []State {
	b.mu.Lock()
	keys := slices.Sorted(maps.Keys(b.resolvers))
	lists := make([][]*dnsResolver, len(keys))
	for i, k := range keys {
		lists[i] = slices.Clone(b.resolvers[k])
	}
	b.mu.Unlock()
	var out []State
	for _, l := range lists {
		if s, ok := newest(l); ok {
			out = append(out, s)
		}
	}
	return out
}

// newest is the State of the resolver of l updated last.
func newest(l []*dnsResolver) (State, bool) {
	var best State
	found := false
	for _, d := range l {
		s := d.snapshot()
		if !found || s.Updated.After(best.Updated) {
			best, found = s, true
		}
	}
	return best, found
}

// staticResolver serves an IP-literal target: nothing to refresh.
type staticResolver struct{ d *dnsResolver }

func (staticResolver) ResolveNow(grpcresolver.ResolveNowOptions) {}
func (s staticResolver) Close()                                  { s.d.b.remove(s.d) }
