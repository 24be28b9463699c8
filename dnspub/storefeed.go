package dnspub

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/grpc-config-dns/grpc-config-dns/model"
	sc "github.com/grpc-config-dns/grpc-config-dns/serviceconfig"
	"github.com/grpc-config-dns/grpc-config-dns/serviceconfig/policy"
	"github.com/grpc-config-dns/grpc-config-dns/store"
)

// Store mode (serve --store): the zones and services come from a
// versioned store (package store) instead of a config file. The server
// reads a snapshot of the store, then follows its changes; every batch of
// changes becomes the next version of the zones it touches, built
// incrementally like a reload (only the services that changed are made
// again), then NOTIFY goes out and IXFR serves the differences.
//
// SOA serials follow the store's revisions, so that every replica on one
// store serves the same serial for the same data and the serial a
// secondary holds says which writes it has:
//
//	serial(zone) = (base + max(L, E)) mod 2^32
//
// where L is the revision of the last write to the zone or one of its
// services (deletions included: the store keeps a per-zone marker that
// every such write rewrites), E is the revision the server has read up to
// rounded down to a multiple of 2^30, and base is a number the store
// fixes when it is created (its creation time in Unix seconds, so that a
// zone moved from a config file to a store keeps serials above the ones
// the file gave it). A secondary holding serial S has every write to the
// zone up to the revision r with (base + r) mod 2^32 = S nearest below the
// store's.
//
// Serials stay monotonic in RFC 1982 arithmetic past 2^32: two versions
// of a zone that a secondary can compare differ by less than 2^31 as long
// as the server sees the store advance by less than 2^30 revisions at a
// time, because E moves every zone's serial forward every 2^30 revisions
// even when the zone does not change (one NOTIFY per zone per 2^30
// writes). Revisions never decrease in a store (embedded or etcd), and are
// persisted before a write is acknowledged, so serials never go backwards
// across restarts, kill -9 included. Only a store restored from an older
// backup can go back; the server then keeps serving the served serial + 1
// and logs an error.

// storeEpoch is the step by which E moves every zone's serial.
const storeEpoch = 1 << 30

// feed is what the server has read of the store.
type feed struct {
	// nested are the zones not served because they lie inside another
	// (inner → outer), to log each once.
	nested map[string]string
	st     *store.Store
	// specs reads again the specs of services validated before (the
	// store; a test's log of items).
	specs specReader
	keys  []*model.Key
	base  uint32
	rev   int64 // read up to
	// zones by store name; touched only by the server's feed goroutine
	// (and by New, before it starts).
	zones map[string]*feedZone

	up       atomic.Bool // the store answered the last ping
	synced   atomic.Bool // a snapshot of the store is served
	lastErr  atomic.Value
	upGauge  prometheus.Gauge
	revGauge prometheus.Gauge
	invalid  prometheus.Gauge
	resyncs  prometheus.Counter
	resync   chan struct{} // SIGHUP: read the store again
}

type feedZone struct {
	name   string
	spec   []byte
	rev    int64
	marker int64
	// base is the zone's validated spec (nil: absent or invalid), cfg the
	// config last built (with services); nil when dirty.
	base     *model.Zone
	cfg      *model.Zone
	respec   bool // base must be validated again, and every service
	services map[string]*feedService
	// policies of the zone; repolicy says they changed since base was
	// made, and replaced holds the versions they replaced (nil for a new
	// one): the services either version selects are validated again.
	policies map[string]*feedPolicy
	repolicy bool
	replaced []*policy.Policy
	// free are services allocated together for a snapshot (reserve).
	free []feedService

	// What is served of the zone, kept up to date change by change so
	// that a write to one service of 100 000 validates that service:
	// last is the config built last, served its valid services (in no
	// order), index their places in served by store name, pending the
	// services changed since last was built. The services that did not
	// change are the same objects in the next config, which is how
	// zone.Update tells them.
	last    *model.Zone
	served  []*model.Service
	names   []string // the store names of served
	index   map[string]int
	pending map[string]bool
}

// feedService is a service of the store. Its spec is kept only until it
// is validated: at 100 000 services the specs were a third of the
// server's memory. When the zone or a policy changes and the service must
// be validated again, its spec is read again from the store at the
// feed's revision (specReader), where it is the version of rev.
type feedService struct {
	spec   []byte
	labels map[string]string // its metadata's
	// selectBy is what policies select it by: labels, or for a service
	// stored before labels moved to metadata, its spec's. It is read
	// from the spec as the spec is validated (validate), on the
	// validating cores, where the spec is read anyway: reading it as a
	// snapshot is applied, on one core, was half of applying it. Until
	// then the service is not validated, and a change of policies has
	// nothing to select it for (rebase).
	selectBy map[string]string
	rev      int64
	svc      *model.Service // nil: not validated yet, or invalid (bad)
	bad      bool
}

// specReader reads the services of a store zone as they were at a
// revision: *store.Store.
type specReader interface {
	ServicesAt(ctx context.Context, zone string, names []string, rev int64) ([]store.Item, error)
}

// errSpecs is the error of a build that could not read again the specs
// it had let go of (the revision was compacted, the store went away): the
// feed reads the store whole again.
var errSpecs = errors.New("cannot read again the specs of the services to validate")

type feedPolicy struct {
	spec []byte
	rev  int64
	p    *policy.Policy // nil: not read yet, or invalid
}

func newFeed(st *store.Store, keys []*model.Key) *feed {
	f := &feed{st: st, keys: keys, zones: map[string]*feedZone{}, resync: make(chan struct{}, 1),
		upGauge: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "store_up",
			Help: "1 while the store answers; 0 while it does not (the last snapshot keeps being served)."}),
		revGauge: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "store_revision",
			Help: "The store revision the served zones are built from."}),
		invalid: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "store_invalid_objects",
			Help: "Zones and services in the store that this server cannot serve (invalid with its TSIG keys or rules); each is logged."}),
		resyncs: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "store_resyncs_total",
			Help: "Times the whole store was read again (start, a watch that fell behind compaction, SIGHUP)."}),
	}
	if st != nil {
		f.specs = st
	}
	f.lastErr.Store("")
	return f
}

func (f *feed) collectors() []prometheus.Collector {
	return []prometheus.Collector{f.upGauge, f.revGauge, f.invalid, f.resyncs}
}

// setUp records whether the store answered a ping (err nil).
func (f *feed) setUp(err error) {
	f.up.Store(err == nil)
	if err == nil {
		f.upGauge.Set(1)
	} else {
		f.lastErr.Store(err.Error())
		f.upGauge.Set(0)
	}
}

func (f *feed) zone(name string) *feedZone {
	z := f.zones[name]
	if z == nil {
		z = &feedZone{name: name, services: map[string]*feedService{}, policies: map[string]*feedPolicy{}}
		f.zones[name] = z
	}
	return z
}

// apply records one item; it is a no-op for an item already known.
func (f *feed) apply(it store.Item) {
	z := f.zone(it.Zone)
	switch it.Kind {
	case store.KindZone:
		if it.Deleted {
			z.spec, z.rev = nil, 0
		} else if z.spec != nil && z.rev == it.Rev {
			return
		} else {
			z.spec, z.rev = it.Spec, it.Rev
		}
		z.respec, z.cfg = true, nil
	case store.KindService:
		if it.Deleted {
			if _, ok := z.services[it.Name]; !ok {
				return
			}
			delete(z.services, it.Name)
		} else {
			if old := z.services[it.Name]; old != nil && old.rev == it.Rev {
				if old.svc == nil && !old.bad && old.spec == nil {
					old.spec = it.Spec // to validate: no need to read it again
				}
				return
			}
			fs := &feedService{}
			if len(z.free) > 0 {
				fs, z.free = &z.free[0], z.free[1:]
			}
			*fs = feedService{spec: it.Spec, labels: it.Labels, rev: it.Rev}
			z.services[it.Name] = fs
		}
		if z.last != nil { // else the next build is whole
			if z.pending == nil {
				z.pending = map[string]bool{}
			}
			z.pending[it.Name] = true
		}
		z.cfg = nil
	case store.KindPolicy:
		old := z.policies[it.Name]
		if it.Deleted {
			if old == nil {
				return
			}
			delete(z.policies, it.Name)
		} else {
			if old != nil && old.rev == it.Rev {
				return
			}
			z.policies[it.Name] = &feedPolicy{spec: it.Spec, rev: it.Rev}
		}
		// nil for a new policy, or one not read yet (whose own
		// replaced version is already listed).
		var was *policy.Policy
		if old != nil {
			was = old.p
		}
		z.replaced = append(z.replaced, was)
		z.repolicy, z.cfg = true, nil
	case store.KindMarker:
		rev := it.Rev
		if it.Deleted {
			rev = 0
		}
		if z.marker != rev {
			z.marker, z.cfg = rev, nil
		}
	}
}

// replace makes the feed hold exactly items (a snapshot at rev), keeping
// what did not change.
func (f *feed) replace(items []store.Item, rev int64) {
	type key struct {
		zone, name string
		kind       store.Kind
	}
	if len(f.zones) == 0 {
		// The first read: nothing to take out, and the maps sized at
		// once (at 100 000 services, what was seen and growing the maps
		// were most of the 100 ms this took).
		f.reserve(items)
		for _, it := range items {
			f.apply(it)
		}
		f.rev = rev
		return
	}
	seen := make(map[key]bool, len(items))
	for _, it := range items {
		f.apply(it)
		seen[key{it.Zone, it.Name, it.Kind}] = true
	}
	for name, z := range f.zones {
		if z.spec != nil && !seen[key{name, "", store.KindZone}] {
			f.apply(store.Item{Kind: store.KindZone, Zone: name, Deleted: true})
		}
		if z.marker != 0 && !seen[key{name, "", store.KindMarker}] {
			f.apply(store.Item{Kind: store.KindMarker, Zone: name, Deleted: true})
		}
		for svc := range z.services {
			if !seen[key{name, svc, store.KindService}] {
				f.apply(store.Item{Kind: store.KindService, Zone: name, Name: svc, Deleted: true})
			}
		}
		for p := range z.policies {
			if !seen[key{name, p, store.KindPolicy}] {
				f.apply(store.Item{Kind: store.KindPolicy, Zone: name, Name: p, Deleted: true})
			}
		}
	}
	f.rev = rev
}

// reserve makes room in empty zones for the services of items (a
// snapshot, in key order: a zone's services are together).
func (f *feed) reserve(items []store.Item) {
	for i := 0; i < len(items); {
		j := i
		for j < len(items) && items[j].Kind == store.KindService && items[j].Zone == items[i].Zone {
			j++
		}
		if n := j - i; n > 0 {
			if z := f.zone(items[i].Zone); len(z.services) == 0 {
				z.services = make(map[string]*feedService, n)
				z.free = make([]feedService, n)
			}
			i = j
		} else {
			i++
		}
	}
}

// serial is the SOA serial of zone origin (see the top of this file).
func (f *feed) serial(origin string) uint32 {
	name, _ := model.ZoneName(origin)
	z := f.zones[name]
	l := int64(0)
	if z != nil {
		l = max(z.marker, z.rev)
	}
	e := f.rev / storeEpoch * storeEpoch
	return uint32(uint64(f.base) + uint64(max(l, e)))
}

// config returns the config to serve: every zone whose spec is valid,
// with its valid services. A zone that did not change keeps its config
// object, which build recognises.
func (f *feed) config(ctx context.Context, settings model.Server, log func(msg string, args ...any)) (*model.Config, error) {
	cfg := &model.Config{Server: settings, Keys: f.keys}
	invalid := 0
	for name, z := range f.zones {
		if z.spec == nil && len(z.services) == 0 && len(z.policies) == 0 && z.marker == 0 {
			delete(f.zones, name)
			continue
		}
		f.rebase(z, log)
		if z.base == nil {
			invalid++
			continue
		}
		if z.cfg == nil {
			zc, err := f.build(ctx, z, log)
			if err != nil {
				return nil, err
			}
			z.cfg = zc
		}
		invalid += len(z.services) - len(z.served) // every service is validated by build
		cfg.Zones = append(cfg.Zones, z.cfg)
	}
	invalid += f.dropNested(cfg, log)
	f.invalid.Set(float64(invalid))
	return cfg, nil
}

// dropNested takes out of cfg every zone that lies inside another of its
// zones, and returns how many it took. The store refuses to create such a
// zone, but one written before it did, or by an older replica, may be
// there; served beside its parent, a query for one of its names would be
// answered from one zone and a name below it from the other. The outer
// zone is served, as a config would have it (its services may hold the
// inner zone's names); the inner one is logged, once, until it is gone.
func (f *feed) dropNested(cfg *model.Config, log func(msg string, args ...any)) int {
	origins := make(map[string]bool, len(cfg.Zones))
	for _, zc := range cfg.Zones {
		origins[zc.Origin] = true
	}
	nested := map[string]string{}
	kept := cfg.Zones[:0]
	for _, zc := range cfg.Zones {
		outer := ""
		for a := zc.Origin; a != "."; {
			_, a, _ = strings.Cut(a, ".")
			if a == "" {
				a = "."
			}
			if origins[a] {
				outer = a
				break
			}
		}
		if outer == "" {
			kept = append(kept, zc)
			continue
		}
		nested[zc.Origin] = outer
		if f.nested[zc.Origin] != outer {
			log("zone in the store lies inside another zone of the store (written before nesting was refused, or by an older replica): not serving it; delete it, or move its services into the outer zone", "zone", zc.Origin, "outer", outer)
		}
	}
	clear(cfg.Zones[len(kept):])
	cfg.Zones = kept
	f.nested = nested
	return len(nested)
}

// rebase makes the zone's base again when its spec or its policies
// changed: after a change of spec every service is validated again, after
// a change of policies those that the old or the new versions select.
func (f *feed) rebase(z *feedZone, log func(msg string, args ...any)) {
	if !z.respec && !z.repolicy {
		return
	}
	whole := z.respec || z.base == nil
	replaced := z.replaced
	z.respec, z.repolicy, z.replaced, z.base = false, false, nil, nil
	var fresh []*policy.Policy
	if z.spec != nil {
		zc, ds := model.ValidateZone(z.name, z.spec, f.keys)
		if zc == nil {
			log("zone in the store is invalid here: not serving it", "zone", z.name, "version", z.rev, "errors", summary(ds))
		} else {
			z.base, fresh = f.withPolicies(z, zc, log)
			if z.base != nil {
				z.base.ResourceVersion = z.rev
			}
		}
	}
	if whole || z.base == nil {
		for _, s := range z.services {
			s.svc, s.bad = nil, false
		}
		z.last = nil // build it whole
		return
	}
	changed := append(slices.Clip(replaced), fresh...)
	if z.pending == nil {
		z.pending = map[string]bool{}
	}
	for name, s := range z.services {
		t := z.base.ServiceTarget(name, s.selectBy, nil)
		for _, p := range changed {
			if p != nil && p.Selects(t) {
				s.svc, s.bad = nil, false
				z.pending[name] = true
				break
			}
		}
	}
}

// withPolicies reads the zone's policies into base and returns it with
// the policies read now (those that changed). A policy invalid here makes
// the zone invalid here: serving its services without it would publish
// configs nobody wrote.
func (f *feed) withPolicies(z *feedZone, base *model.Zone, log func(msg string, args ...any)) (*model.Zone, []*policy.Policy) {
	ps := make([]*policy.Policy, 0, len(z.policies))
	var fresh []*policy.Policy
	for name, fp := range z.policies {
		if fp.p == nil {
			p, ds := model.ValidatePolicy(base, name, fp.spec)
			if p == nil {
				log("policy in the store is invalid here: not serving its zone", "zone", z.name, "policy", name, "version", fp.rev, "errors", summary(ds))
				return nil, nil
			}
			fp.p = p
			fresh = append(fresh, p)
		}
		ps = append(ps, fp.p)
	}
	zc, err := base.WithPolicies(ps)
	if err != nil {
		log("the zone's policies cannot be used: not serving it", "zone", z.name, "err", err)
		return nil, nil
	}
	return zc, fresh
}

// build validates the zone's new services (in parallel: a store of
// 100 000 is read at start) and makes its config: from the changed
// services alone when only a few changed since the last build, else
// whole.
func (f *feed) build(ctx context.Context, z *feedZone, log func(msg string, args ...any)) (*model.Zone, error) {
	whole := z.last == nil || len(z.pending) > len(z.services)/4
	var names []string
	if whole {
		names = slices.Collect(maps.Keys(z.services))
	} else {
		names = slices.Collect(maps.Keys(z.pending))
	}
	if err := f.validate(ctx, z, names, log); err != nil {
		return nil, err
	}
	if whole {
		z.served, z.names, z.index = z.served[:0], z.names[:0], make(map[string]int, len(z.services))
		for name, s := range z.services {
			if s.svc != nil {
				z.index[name] = len(z.served)
				z.served = append(z.served, s.svc)
				z.names = append(z.names, name)
			}
		}
	} else {
		for _, name := range names {
			if i, ok := z.index[name]; ok {
				last := len(z.served) - 1
				if i != last {
					z.served[i], z.names[i] = z.served[last], z.names[last]
					z.index[z.names[i]] = i
				}
				z.served[last] = nil
				z.served, z.names = z.served[:last], z.names[:last]
				delete(z.index, name)
			}
			if s := z.services[name]; s != nil && s.svc != nil {
				z.index[name] = len(z.served)
				z.served = append(z.served, s.svc)
				z.names = append(z.names, name)
			}
		}
	}
	clear(z.pending)
	zc := *z.base
	zc.Services = slices.Clone(z.served)
	z.last = &zc
	return &zc, nil
}

// validate validates the services of z named (those not validated yet),
// and lets go of their specs.
func (f *feed) validate(ctx context.Context, z *feedZone, names []string, log func(msg string, args ...any)) error {
	var todo []*feedService
	var todoNames []string
	var unread map[string]*feedService
	for _, name := range names {
		if s := z.services[name]; s != nil && s.svc == nil && !s.bad {
			todo = append(todo, s)
			todoNames = append(todoNames, name)
			if s.spec == nil {
				if unread == nil {
					unread = map[string]*feedService{}
				}
				unread[name] = s
			}
		}
	}
	if err := f.readSpecs(ctx, z.name, unread); err != nil {
		return err
	}
	workers := 1
	if len(todo) >= 256 {
		workers = runtime.GOMAXPROCS(0)
	}
	diags := make([]sc.Diagnostics, len(todo))
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v := model.ServiceValidator{Compact: len(todo) >= compactServices}
			for i := w; i < len(todo); i += workers {
				s := todo[i]
				s.svc, diags[i] = v.Validate(z.base, todoNames[i], s.labels, s.spec, f.keys)
				if s.bad = s.svc == nil; s.bad {
					s.selectBy = model.ServiceLabels(s.labels, s.spec)
				} else {
					// The labels the validation read: a search of every
					// spec for labels was 5 % of a store's start.
					s.selectBy = s.svc.Labels
					s.svc.ResourceVersion = s.rev
				}
				s.spec = nil
			}
		}()
	}
	wg.Wait()
	for i, s := range todo {
		if s.bad {
			log("service in the store is invalid here: not serving it", "zone", z.name, "service", todoNames[i], "version", s.rev, "errors", summary(diags[i]))
		}
	}
	return nil
}

// readSpecs reads again from the store the specs of the services of zone
// that are to be validated again, each the version the feed holds: the
// one at the feed's revision.
func (f *feed) readSpecs(ctx context.Context, zone string, unread map[string]*feedService) error {
	if len(unread) == 0 {
		return nil
	}
	if f.specs == nil {
		return fmt.Errorf("%w of zone %s: no store to read them from", errSpecs, zone)
	}
	names := slices.Collect(maps.Keys(unread))
	items, err := f.specs.ServicesAt(ctx, zone, names, f.rev)
	if err != nil {
		return fmt.Errorf("%w of zone %s at revision %d: %w", errSpecs, zone, f.rev, err)
	}
	for _, it := range items {
		if s := unread[it.Name]; s != nil && s.rev == it.Rev {
			s.spec = it.Spec
			delete(unread, it.Name)
		}
	}
	for name, s := range unread {
		return fmt.Errorf("%w of zone %s: the store at revision %d does not hold version %d of service %s", errSpecs, zone, f.rev, s.rev, name)
	}
	return nil
}

// compactServices is how many services validated at once make the
// validators compact what they keep (model.ServiceValidator.Compact): a
// start, a resync or a zone's services validated again, not a write.
const compactServices = 256

func summary(ds sc.Diagnostics) string {
	out := ""
	for _, d := range ds {
		if d.Severity == sc.Error {
			if out != "" {
				out += "; "
			}
			out += fmt.Sprintf("%s: %s [%s]", d.Path, d.Message, d.Code)
		}
	}
	return out
}

// Ready reports whether the server serves what it should: in store mode,
// a snapshot of the store has been served and the store answers (while it
// does not, the last snapshot keeps being served).
func (s *Server) Ready() error {
	if s.snap.Load() == nil {
		return errors.New("no version is served yet")
	}
	if s.feed == nil {
		return nil
	}
	if !s.feed.synced.Load() {
		return fmt.Errorf("the store has not been read yet: %s", s.feed.lastErr.Load())
	}
	if !s.feed.up.Load() {
		return fmt.Errorf("the store does not answer (%s): serving its revision %d", s.feed.lastErr.Load(), s.StoreRevision())
	}
	return nil
}

// StoreRevision is the store revision the served zones are built from (0
// outside store mode).
func (s *Server) StoreRevision() int64 {
	if snap := s.snap.Load(); snap != nil {
		return snap.storeRev
	}
	return 0
}

// syncStore reads the whole store and publishes it.
func (s *Server) syncStore(ctx context.Context) error {
	f := s.feed
	if f.base == 0 {
		base, err := f.st.SerialBase(ctx)
		if err != nil {
			return err
		}
		f.base = base
	}
	items, rev, err := f.st.Snapshot(ctx)
	if err != nil {
		return err
	}
	f.resyncs.Inc()
	f.replace(items, rev)
	if err := s.publishStore(ctx, "store snapshot", len(items)); err != nil {
		return err
	}
	f.synced.Store(true)
	return nil
}

// publishStore builds and serves the feed's state, read from items
// items of the store.
func (s *Server) publishStore(ctx context.Context, why string, items int) error {
	s.reloadMu.Lock()
	defer s.reloadMu.Unlock()
	start := time.Now()
	cfg, err := s.feed.config(ctx, s.settings(), func(msg string, args ...any) { s.log.Error(msg, args...) })
	if err != nil {
		return err
	}
	s.building = s.feed.rev
	_, err = s.publish(cfg, "the store", why, items >= returnMemoryItems, start)
	if err == nil {
		s.feed.revGauge.Set(float64(s.feed.rev))
	}
	return err
}

func (s *Server) settings() model.Server {
	if s.opts.Settings != nil {
		return *s.opts.Settings
	}
	return model.Server{
		MaxUDPSize: model.DefaultMaxUDPSize, TCPIdleTimeout: model.DefaultTCPIdleTimeout,
		MaxTCPConnections: model.DefaultMaxTCPConnections, MaxTCPConnectionsPerAddress: model.DefaultMaxTCPConnectionsPerAddress,
		IXFRHistory: model.DefaultIXFRHistory,
	}
}

// followStore keeps the served zones in line with the store: a snapshot,
// then its changes, and a new snapshot when the changes cannot be
// followed (compacted while behind) or on SIGHUP.
func (s *Server) followStore(ctx context.Context) {
	f := s.feed
	// read says the store must be read whole: at start, after a watch
	// that failed, and on SIGHUP. Only a failure makes the server unready
	// meanwhile: a SIGHUP's read happens while the snapshot served is
	// still the store's (found by TestStoreSourceMatchesScratch).
	read := !f.synced.Load()
	for {
		if read || len(f.resync) > 0 {
			select {
			case <-f.resync:
			default:
			}
			if err := s.syncStore(ctx); err != nil {
				f.lastErr.Store(err.Error())
				s.log.Error("cannot read the store; serving what was read before, retrying", "err", err, "revision", f.rev)
				select {
				case <-ctx.Done():
					return
				case <-time.After(time.Second):
				}
				continue
			}
			read = false
		}
		err := s.followChanges(ctx)
		if ctx.Err() != nil {
			return
		}
		read = true
		switch {
		case errors.Is(err, errSpecs):
			// The snapshot served is still the store's, as for a SIGHUP:
			// the read that gives the specs back keeps the server ready.
			s.log.Info("reading the store whole again, for the specs of services to validate again", "err", err, "revision", f.rev)
		case err != nil:
			f.synced.Store(false)
			f.lastErr.Store(err.Error())
			s.log.Warn("following the store failed; reading it whole again", "err", err, "revision", f.rev)
		}
	}
}

// maxBatches is how many batches of changes one version takes at most.
const maxBatches = 256

func (s *Server) followChanges(ctx context.Context) error {
	f := s.feed
	fctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ch := f.st.Follow(fctx, f.rev)
	for {
		var b store.Changes
		var ok bool
		select {
		case b, ok = <-ch:
		case <-f.resync:
			return nil
		case <-ctx.Done():
			return nil
		}
		if !ok {
			return errors.New("the store's watch ended")
		}
		n, items, changed := 0, 0, false
		for {
			if b.Err != nil {
				if errors.Is(b.Err, store.ErrCompacted) {
					return fmt.Errorf("the changes after revision %d were compacted before they were read", f.rev)
				}
				return b.Err
			}
			for _, it := range b.Items {
				f.apply(it)
				changed = true
			}
			items += len(b.Items)
			if b.Rev > f.rev {
				// An epoch boundary changes every serial.
				changed = changed || b.Rev/storeEpoch != f.rev/storeEpoch
				f.rev = b.Rev
			}
			n++
			if n == maxBatches {
				break
			}
			select {
			case b, ok = <-ch:
				if !ok {
					return errors.New("the store's watch ended")
				}
				continue
			default:
			}
			break
		}
		if changed {
			if err := s.publishStore(ctx, "store change", items); err != nil {
				if errors.Is(err, errSpecs) {
					return err // read the store whole, which holds them
				}
				s.log.Error("a store change is not served", "err", err, "revision", f.rev)
			}
		} else {
			f.revGauge.Set(float64(f.rev))
		}
	}
}

// pingStore checks every interval that the store answers. It runs beside
// the feed's goroutine, so it reads the revision served, not f.rev.
func (s *Server) pingStore(ctx context.Context, every time.Duration) {
	f := s.feed
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		pctx, cancel := context.WithTimeout(ctx, every)
		err := f.st.Ping(pctx)
		cancel()
		if ctx.Err() != nil {
			return
		}
		was := f.up.Load()
		f.setUp(err)
		switch {
		case err == nil && !was:
			s.log.Info("the store answers", "revision", s.StoreRevision())
		case err != nil && was:
			s.log.Error("the store does not answer; serving the last snapshot", "err", err, "revision", s.StoreRevision())
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
