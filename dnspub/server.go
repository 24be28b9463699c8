package dnspub

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/netip"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/grpc-config-dns/grpc-config-dns/dnspub/dnssec"
	"github.com/grpc-config-dns/grpc-config-dns/dnspub/internal/wire"
	"github.com/grpc-config-dns/grpc-config-dns/dnspub/zone"
	"github.com/grpc-config-dns/grpc-config-dns/model"
	sc "github.com/grpc-config-dns/grpc-config-dns/serviceconfig"
	"github.com/grpc-config-dns/grpc-config-dns/store"
)

// Options configure a Server.
type Options struct {
	// ConfigFile is the publisher config. Empty serves model.Example.
	ConfigFile string
	// StateFile keeps the SOA serials across restarts. Empty means
	// ConfigFile + ".serial" (none for the built-in example); "-" means
	// none.
	StateFile string
	// Listen is the UDP and TCP address, like 127.0.0.1:1053.
	Listen string
	// Logger receives structured logs; nil means slog.Default().
	Logger *slog.Logger
	// Registerer receives the metrics; nil registers none.
	Registerer prometheus.Registerer
	// QueryLog, when set, receives one Info record per query answered
	// (CoreDNS's log plugin): client, transport, name, type, rcode, zone,
	// response size and duration. It costs a log record per query: for
	// debugging, not for a busy server.
	QueryLog *slog.Logger
	// WatchInterval is how often the config file is checked for changes;
	// 0 means 1s, negative disables watching (SIGHUP still reloads).
	WatchInterval time.Duration
	// Debounce is how long a changed file must stay unchanged before it
	// is loaded; 0 means 500ms.
	Debounce time.Duration
	// Settle is how long a file must stay unchanged before the watcher
	// loads a change that could be a half-written file: one written in
	// place that removes zones or services, one written in place by
	// several opens in a row, or any change where the operating system
	// cannot tell that the writer closed the file. 0 means 30s. See
	// watch.go.
	Settle time.Duration
	// UDPWorkers is the number of UDP sockets and read loops; 0 means
	// GOMAXPROCS.
	UDPWorkers int
	// PortableUDP disables recvmmsg/sendmmsg batching (for comparison).
	PortableUDP bool
	// Now replaces the clock for serials (tests).
	Now func() time.Time

	// Store, when set, is where the zones and services come from (serve
	// --store; see storefeed.go): ConfigFile and StateFile are not used,
	// and the SOA serials follow the store's revisions.
	Store *store.Store
	// Settings are the server: settings in store mode; nil means the
	// defaults.
	Settings *model.Server
	// Keys are the TSIG keys the zones of the store may name.
	Keys []*model.Key
	// StorePing is how often the store's health is checked; 0 means 1s.
	StorePing time.Duration

	// KeyDir holds the DNSSEC keys of signed zones (docs/dnssec.md), in
	// the files dnssec-keygen writes; keys a signed zone lacks are made
	// there. Empty means ConfigFile + ".keys"; in store mode it must be
	// given for a store with signed zones, and be the same keys for every
	// publisher of the store.
	KeyDir string
}

// ConfigError is returned when the config is invalid. Diagnostics holds
// every problem, positioned in the file.
type ConfigError struct {
	File        string
	Diagnostics sc.Diagnostics
}

func (e *ConfigError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s is invalid:", e.File)
	for _, d := range e.Diagnostics {
		if d.Severity == sc.Error {
			loc := e.File
			if d.Line > 0 {
				loc = fmt.Sprintf("%s:%d:%d", e.File, d.Line, d.Column)
			}
			fmt.Fprintf(&b, "\n  %s: %s: %s [%s]", loc, d.Severity, d.Message, d.Code)
		}
	}
	return b.String()
}

// StateError is returned when a valid config is not published because
// what the server keeps on disk for it could not be written or read (a
// full or read-only disk): the SOA serials of its version (serving them
// could let serials go backwards after a crash), or the DNSSEC keys of a
// signed zone. The previous version keeps serving, and the watcher tries
// the config again.
type StateError struct{ Err error }

func (e *StateError) Error() string {
	return fmt.Sprintf("not publishing: %v; free space or fix the permissions of the state file (serve --state) or the key directory (serve --dnssec-keys), then reload (or start again)", e.Err)
}

func (e *StateError) Unwrap() error { return e.Err }

// Server is the authoritative DNS server. Create it with New, start it
// with Start, stop it with Shutdown.
type Server struct {
	opts    Options
	log     *slog.Logger
	metrics *metrics

	snap atomic.Pointer[snapshot]

	reloadMu sync.Mutex // serialises reloads
	// parser remembers what each service's text made of it, so that a
	// reload reads again only the services whose text changed.
	parser   model.Parser
	serials  *serialStore
	lastHash fileSum // of the config text last loaded (or rejected)
	// servedSum is of the config text the version served was read from
	// (ServiceSpecs reads the file again only when it is still that).
	servedSum fileSum
	sums      fileHasher

	notifier *notifier
	// newTracker follows the config file for the watcher; tests replace it.
	newTracker func(path string, log *slog.Logger) fileTracker

	udp      udpListener
	tcp      net.Listener
	wg       sync.WaitGroup
	done     chan struct{}
	stopOnce sync.Once

	connMu   sync.Mutex
	conns    map[*tcpConn]struct{}
	perGroup map[netip.Prefix]int // connections per client address group

	freeing atomic.Bool // a returnMemory is running
	// completeMu serialises completeTable: a second one finds the
	// answers built.
	completeMu sync.Mutex
	watchReads atomic.Int64 // times the watcher read the config file

	// later is what the first load left for once the server answers
	// (afterStart); started is set by Start.
	laterMu sync.Mutex
	started bool
	later   []func()
	// completeGate, when set between New and Start, holds the build of
	// the answers a first start left for later until it is closed: tests
	// ask what is answered before they are built.
	completeGate chan struct{}

	// limiter keeps logs of unauthenticated, spoofable events bounded.
	limiter *logLimiter

	// feed is what was read of the store in store mode (nil otherwise);
	// building is the store revision of the version being built.
	feed     *feed
	building int64
	cancel   context.CancelFunc

	// keys are the DNSSEC keys of signed zones, read (or made) once.
	keys keyCache
	// resign wakes the loop that refreshes signatures when a version
	// with signatures due sooner is published.
	resign chan struct{}
}

// snapshot is one published version of everything: immutable.
type snapshot struct {
	version uint64
	cfg     *model.Config
	table   *wire.Table
	zones   map[string]*zoneEntry // by origin
	keys    map[string]*model.Key
	// storeRev is the store revision the version is built from (store
	// mode).
	storeRev int64
}

// zoneEntry is a zone's current version and the differences from the
// recent ones that IXFR sends.
type zoneEntry struct {
	cfg     *model.Zone
	cur     *zone.Zone
	history []*ixfrStep // oldest first; the last one ends at cur
}

// ixfrStep is the difference between two consecutive versions of a zone.
type ixfrStep struct {
	from, to       *dns.SOA
	deleted, added []dns.RR
	bytes          int // of the records, uncompressed
}

// New loads the config and prepares the server; it binds nothing yet. An
// invalid config returns a *ConfigError.
func New(opts Options) (*Server, error) {
	s, err := newServer(opts)
	if err != nil {
		return nil, err
	}
	if s.feed != nil {
		s.firstStoreSync()
	} else if err := s.loadFirst(); err != nil {
		return nil, err
	}
	return s, nil
}

// firstStoreSync serves an empty version, then the store's zones if it
// answers: a server whose store is down starts, answers REFUSED and is
// not ready until it can read the store.
func (s *Server) firstStoreSync() {
	s.reloadMu.Lock()
	s.publish(&model.Config{Server: s.settings(), Keys: s.opts.Keys}, "the store", "start", false, time.Now())
	s.reloadMu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := s.feed.st.Ping(ctx)
	s.feed.setUp(err)
	if err != nil {
		s.log.Error("the store does not answer at start; serving nothing until it does", "err", err)
		return
	}
	if err = s.syncStore(ctx); err != nil {
		s.feed.lastErr.Store(err.Error())
		s.log.Error("cannot read the store at start; serving nothing until it can be read", "err", err)
	}
}

// newServer is New without the first load, so that tests can inject
// faults first.
func newServer(opts Options) (*Server, error) {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.WatchInterval == 0 {
		opts.WatchInterval = time.Second
	}
	if opts.Debounce == 0 {
		opts.Debounce = 500 * time.Millisecond
	}
	if opts.Settle == 0 {
		opts.Settle = 30 * time.Second
	}
	if opts.UDPWorkers <= 0 {
		opts.UDPWorkers = runtime.GOMAXPROCS(0)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	switch {
	case opts.Store != nil:
		opts.StateFile, opts.ConfigFile = "", ""
	case opts.StateFile == "-":
		opts.StateFile = ""
	case opts.StateFile == "" && opts.ConfigFile != "":
		opts.StateFile = opts.ConfigFile + ".serial"
	}
	s := &Server{opts: opts, log: opts.Logger, sums: newFileHasher(), done: make(chan struct{}), conns: map[*tcpConn]struct{}{}, perGroup: map[netip.Prefix]int{},
		newTracker: newFileTracker, limiter: newLogLimiter(10, time.Second), resign: make(chan struct{}, 1)}
	s.metrics = newMetrics(s.Serials)
	if opts.Store != nil {
		if opts.StorePing <= 0 {
			s.opts.StorePing = time.Second
		}
		s.feed = newFeed(opts.Store, opts.Keys)
	}
	s.notifier = newNotifier(s.log, s.metrics)
	if opts.Registerer != nil {
		if err := s.metrics.register(opts.Registerer); err != nil {
			return nil, err
		}
		if err := opts.Registerer.Register(s.notifier); err != nil {
			return nil, err
		}
		if s.feed != nil {
			for _, c := range s.feed.collectors() {
				if err := opts.Registerer.Register(c); err != nil {
					return nil, err
				}
			}
		}
	}
	var err error
	if s.serials, err = loadSerials(opts.StateFile); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *Server) loadFirst() error {
	start := time.Now()
	text, err := s.readConfig()
	if err != nil {
		return err
	}
	_, err = s.load(text, start, "start", nil)
	return err
}

func (s *Server) configName() string {
	if s.opts.ConfigFile == "" {
		return "<built-in example>"
	}
	return s.opts.ConfigFile
}

func (s *Server) readConfig() ([]byte, error) {
	if s.opts.ConfigFile == "" {
		return model.Example, nil
	}
	b, err := readConfigFile(s.opts.ConfigFile)
	if err != nil {
		return nil, fmt.Errorf("reading config: %w", err)
	}
	return b, nil
}

// readConfigFile reads a config file, refusing one larger than the
// publisher reads before reading it: a huge file would otherwise be held
// in memory whole before model.Parse refused it.
func readConfigFile(path string) ([]byte, error) {
	var b []byte
	err := scanConfigFile(path, func(f *os.File, size int64) error {
		// Sized from Stat, plus one byte to see the end without growing:
		// io.ReadAll would double its way there and leave twice the file
		// as garbage, which a publisher that answers queries without
		// allocating would keep for a long time.
		b = make([]byte, 0, size+1)
		for {
			if len(b) == cap(b) {
				b = append(b, 0)[:len(b)]
			}
			n, err := f.Read(b[len(b):cap(b)])
			b = b[:len(b)+n]
			if len(b) > model.MaxConfigSize {
				return errConfigTooLarge
			}
			if err == io.EOF {
				return nil
			}
			if err != nil {
				return err
			}
		}
	})
	return b, err
}

// hashConfigFile returns the fileSum of the config file without holding
// it in memory: the watcher looks at a file of 30 MB every second.
func (s *Server) hashConfigFile() (sum fileSum, err error) {
	err = scanConfigFile(s.opts.ConfigFile, func(f *os.File, _ int64) error {
		var n int64
		sum, n, err = s.sums.read(io.LimitReader(f, model.MaxConfigSize+1))
		if err == nil && n > model.MaxConfigSize {
			return errConfigTooLarge
		}
		return err
	})
	return sum, err
}

var errConfigTooLarge = errors.New("too large")

// scanConfigFile opens the config file and hands it to read with its size,
// refusing one larger than a config may be before reading it.
func scanConfigFile(path string, read func(f *os.File, size int64) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	tooLarge := fmt.Errorf("%s is larger than the %d bytes (64 MiB) a publisher config may have: split its zones across several publishers", path, model.MaxConfigSize)
	size := int64(512)
	if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
		if fi.Size() > model.MaxConfigSize {
			return tooLarge
		}
		size = fi.Size()
	}
	if err := read(f, size); err != errConfigTooLarge {
		return err
	}
	return tooLarge
}

// Reload reads the config file again and publishes it if it is valid and
// changed. An invalid config returns a *ConfigError and changes nothing.
func (s *Server) Reload() error {
	if s.feed != nil {
		select {
		case s.feed.resync <- struct{}{}:
		default:
		}
		return nil
	}
	start := time.Now()
	text, err := s.readConfig()
	if err != nil {
		s.metrics.rejected()
		s.log.Error("reload failed; still serving the previous config", "config", s.configName(), "err", err)
		return err
	}
	_, err = s.load(text, start, "reload", nil)
	return err
}

// load validates text and, if valid, builds and publishes a new snapshot.
// When hold is given and returns a reason for a valid config, nothing is
// done and a *heldError returned. start is when reading text began.
func (s *Server) load(text []byte, start time.Time, why string, hold func(*model.Config, *snapshot) string) (changed []string, err error) {
	s.reloadMu.Lock()
	defer s.reloadMu.Unlock()
	return s.loadLocked(text, start, why, hold)
}

// loadLocked is load with reloadMu held.
func (s *Server) loadLocked(text []byte, start time.Time, why string, hold func(*model.Config, *snapshot) string) (changed []string, err error) {
	name := s.configName()
	// The watcher's sum of the text is made beside the parse, on the
	// core its serial steps leave idle.
	sums := make(chan fileSum, 1)
	go func() { sums <- s.sums.sum(text) }()
	cfg, ds := s.parser.Parse(text)
	sum := <-sums
	if cfg != nil && hold != nil {
		if reason := hold(cfg, s.snap.Load()); reason != "" {
			s.metrics.reloads.WithLabelValues("held").Inc()
			return nil, &heldError{reason}
		}
	}
	s.lastHash = sum
	errs := 0
	for _, d := range ds {
		level := slog.LevelWarn
		if d.Severity == sc.Error {
			level = slog.LevelError
			errs++
		}
		s.log.Log(context.Background(), level, "config diagnostic", "config", name, "line", d.Line, "column", d.Column,
			"severity", d.Severity.String(), "code", d.Code, "path", d.Path, "message", d.Message)
	}
	if cfg == nil {
		s.metrics.rejected()
		if old := s.snap.Load(); old != nil {
			s.log.Error("config rejected; still serving the previous version", "config", name, "errors", errs, "version", old.version)
		}
		return nil, &ConfigError{File: name, Diagnostics: ds}
	}
	// Even a reload that reads one service again reads the whole file and
	// cuts it (60 MB of garbage for a 30 MB fleet): returned after it,
	// the memory stays the size of what is served, reload after reload.
	changed, err = s.publish(cfg, name, why, len(text) >= returnMemoryAbove, start)
	// Only the text the version served was read from: the view reads
	// its services' own configs from it (ServiceSpecs).
	if snap := s.snap.Load(); err == nil && snap != nil && snap.cfg == cfg {
		s.servedSum = sum
	}
	return changed, err
}

// publish builds the snapshot of a valid config and serves it, once its
// serials are persisted; large says reading it made much garbage (see
// returnMemory). reloadMu is held.
func (s *Server) publish(cfg *model.Config, name, why string, large bool, start time.Time) (changed []string, err error) {
	old := s.snap.Load()
	// Nothing is served yet on a first start (nor by a store's empty
	// first version): a new zone's answers but its apex's are built for
	// each query until the table is complete, which completeTable does
	// once this version is served.
	next, serials, changed, err := s.build(cfg, old, old == nil || len(old.zones) == 0)
	if err != nil {
		var se *StateError
		if errors.As(err, &se) {
			s.lastHash = fileSum{} // try again on the next poll, or change
		}
		s.metrics.rejected()
		s.log.Error("config rejected; still serving the previous version", "config", name, "err", err)
		return nil, err
	}
	s.metrics.lastReload.Set(1)
	if old != nil && len(changed) == 0 && sameServing(old, next) {
		// The same records from another text: the version served is
		// now read from this one (the views read its services' own
		// configs from it, ServiceSpecs), with all else the same.
		cur := *old
		cur.cfg = cfg
		s.snap.Store(&cur)
		s.metrics.reloads.WithLabelValues("unchanged").Inc()
		s.metrics.lastReloadTime.Set(float64(time.Now().UnixNano()) / 1e9)
		s.log.Info("config reloaded; no zone changed", "config", name, "why", why, "took", time.Since(start).Round(time.Microsecond))
		return nil, nil
	}
	// Persist serials before serving them: a version whose serials cannot
	// be kept could be followed, after a crash, by lower ones.
	if err := s.serials.commit(serials); err != nil {
		s.metrics.rejected()
		s.metrics.stateErrors.Inc()
		s.lastHash = fileSum{} // try again on the next change or poll
		if old != nil {
			s.log.Error("cannot persist SOA serials: not publishing this version; the previous one keeps serving", "config", name, "version", old.version, "err", err)
		}
		return nil, &StateError{Err: err}
	}
	s.snap.Store(next)
	if next.table.Deferred() && (old == nil || !old.table.Deferred()) {
		// Once: the next versions, edited from this one, leave the
		// same answers for later (build), and completeTable builds
		// those of the version served when it ends.
		s.afterStart(func() {
			if s.completeGate != nil {
				<-s.completeGate
			}
			s.completeTable()
		})
	}
	s.metrics.reloads.WithLabelValues("accepted").Inc()
	s.metrics.lastReloadTime.Set(float64(time.Now().UnixNano()) / 1e9)
	for _, origin := range changed {
		ze := next.zones[origin]
		s.log.Info("zone published", "zone", origin, "serial", ze.cur.Serial(), "records", ze.cur.Len()+1, "why", why)
	}
	s.log.Info("config loaded", "config", name, "version", next.version, "zones", len(next.zones), "changed", len(changed), "why", why, "took", time.Since(start).Round(time.Microsecond))
	s.notifier.update(next, changed)
	select {
	case s.resign <- struct{}{}: // the signatures due may have changed
	default:
	}
	if large {
		s.returnMemory()
	}
	return changed, nil
}

// afterStart runs f in the background once the server answers (Start), or
// at once when it does. What the first load leaves for later (the answers
// left to build, the parser's base, the memory to give back) so waits
// until the server answers, and then runs one piece after the other,
// each leaving a core to the answers: run at once, on every core, it held
// back the first answer by tens of milliseconds.
func (s *Server) afterStart(f func()) {
	s.laterMu.Lock()
	defer s.laterMu.Unlock()
	if s.started {
		go f()
		return
	}
	s.later = append(s.later, f)
}

// completeTable builds the answers the table served left for later
// (wire.Table.Complete), and serves the table with them: the same answers,
// built once instead of for each query.
//
// They are built without reloadMu, so that a change is not held back by
// them: a write right after a first start of 100 000 services waited
// 0.4 s for the lock. The change's table leaves the same answers for
// later (wire.Editor.SetZone), and its edits are taken into those built
// (wire.Table.Rebase). Should a version differ otherwise (a zone added),
// the build is done again for it, and the last of completeTries builds
// holds the lock, so that changes cannot keep the answers built for
// each query.
func (s *Server) completeTable() {
	s.completeMu.Lock()
	defer s.completeMu.Unlock()
	for try := 1; ; try++ {
		last := try == completeTries
		if last {
			s.reloadMu.Lock()
		}
		snap := s.snap.Load()
		if snap == nil || !snap.table.Deferred() {
			if last {
				s.reloadMu.Unlock()
			}
			return
		}
		start := time.Now()
		// In the background: a core is left to the answers.
		t, err := snap.table.Complete(max(runtime.GOMAXPROCS(0)-1, 1))
		if !last {
			s.reloadMu.Lock()
		}
		cur := s.snap.Load()
		served := cur == snap
		if err == nil && !served {
			// Versions published meanwhile edited the answers left for
			// later: their edits are taken into the answers built.
			if rebased, ok := cur.table.Rebase(snap.table, t); ok {
				t, served = rebased, true
			}
		}
		if err == nil && served {
			done := *cur
			done.table = t
			s.snap.Store(&done)
			s.log.Debug("answers built", "version", cur.version, "from", snap.version, "took", time.Since(start).Round(time.Microsecond), "tries", try)
		}
		s.reloadMu.Unlock()
		if err != nil {
			// SetZoneLater leaves for later only answers that build.
			s.log.Error("cannot build the answers left for later: they are built for each query", "err", err)
			return
		}
		if served {
			return
		}
	}
}

// completeTries is how many times completeTable builds the answers left
// for later while versions are published under it.
const completeTries = 3

// returnMemoryAbove is the config size past which a load gives the memory
// it used back to the system (and returnMemoryItems the store items a
// version is read from): reading a large config makes a great deal of
// garbage (the YAML of 100 000 services is several times the snapshot it
// becomes), which the runtime would otherwise hand back over minutes, and
// answering queries makes none, so nothing would reuse it.
const (
	returnMemoryAbove = 1 << 20
	returnMemoryItems = 4096
)

// returnMemory runs a garbage collection and returns the free memory to
// the system, in the background, one at a time.
func (s *Server) returnMemory() {
	s.afterStart(func() {
		// Claimed when it runs, not when it is queued: a server never
		// started must not keep later loads from returning memory.
		if !s.freeing.CompareAndSwap(false, true) {
			return
		}
		defer s.freeing.Store(false)
		// The answers left for later too.
		s.completeTable()
		debug.FreeOSMemory()
	})
}

// sameServing reports whether two snapshots serve the same zones with the
// same settings, so that a reload that changed only formatting or comments
// publishes nothing.
func sameServing(a, b *snapshot) bool {
	if len(a.zones) != len(b.zones) || a.cfg.Server != b.cfg.Server || len(a.keys) != len(b.keys) {
		return false
	}
	for k, ka := range a.keys {
		if kb := b.keys[k]; kb == nil || *ka != *kb {
			return false
		}
	}
	for o, za := range a.zones {
		zb := b.zones[o]
		if zb == nil || zb.cur != za.cur || fmt.Sprint(za.cfg.Transfer) != fmt.Sprint(zb.cfg.Transfer) {
			return false
		}
	}
	return true
}

// build makes the snapshot of cfg and the serial state it needs, leaving
// the server's untouched. Each zone's next version shares what did not
// change with the current one (zone.Update), and the answer table is
// edited for the names whose answers changed. Zones whose content did not
// change keep their version (and serial); changed zones get a new serial
// and a step in their IXFR history.
func (s *Server) build(cfg *model.Config, old *snapshot, later bool) (*snapshot, *serialTxn, []string, error) {
	next := &snapshot{cfg: cfg, zones: map[string]*zoneEntry{}, keys: map[string]*model.Key{}, storeRev: s.building}
	serials := s.serials.begin()
	now := s.opts.Now()
	var te *wire.Editor
	if old != nil {
		next.version = old.version + 1
		// Answers left for later stay so, but for those this version
		// changes (a write right after a first start): completeTable
		// builds them.
		te = old.table.Edit()
	} else {
		empty, _ := wire.New(wire.Options{})
		te = empty.Edit()
	}
	if err := te.SetMaxUDPSize(cfg.Server.MaxUDPSize); err != nil {
		return nil, nil, nil, err
	}
	for _, k := range cfg.Keys {
		next.keys[k.Name] = k
	}
	var changed []string
	origins := map[string]bool{}
	for _, zc := range cfg.Zones {
		origins[zc.Origin] = true
		var prev *zoneEntry
		if old != nil {
			prev = old.zones[zc.Origin]
		}
		e, isNew, err := s.buildZone(zc, prev, te, serials, cfg.Server.IXFRHistory, later, now)
		if err != nil {
			return nil, nil, nil, err
		}
		if isNew {
			changed = append(changed, zc.Origin)
		}
		// The stored serial must be the served one (they differ only in
		// buildZone's guard).
		serials.set(zc.Origin, e.cur.Serial(), e.cur.Digest(), zc.SOA.Expire)
		next.zones[zc.Origin] = e
	}
	if old != nil {
		for origin, ze := range old.zones {
			if !origins[origin] {
				te.RemoveZone(ze.cur)
			}
		}
	}
	serials.retire(origins, now)
	next.table = te.Table()
	return next, serials, changed, nil
}

// buildZone makes the entry of zone zc that follows prev (nil for a new
// zone) and puts its answers in te; isNew says it is a new version, with
// a serial of its own (a zone whose content did not change keeps prev's
// version and serial).
func (s *Server) buildZone(zc *model.Zone, prev *zoneEntry, te *wire.Editor, serials *serialTxn, history int, later bool, now time.Time) (e *zoneEntry, isNew bool, err error) {
	// In store mode a zone's serial is decided by the store's revisions
	// (feed.serial), else by the serial state.
	fixed := s.feed != nil
	var want uint32
	if fixed {
		want = s.feed.serial(zc.Origin)
	}
	same := prev != nil && (!fixed || want == prev.cur.Serial())
	var keys *dnssec.KeySet
	resign := false
	if zc.DNSSEC != nil {
		if keys, err = s.zoneKeys(zc, now); err != nil {
			return nil, false, &StateError{Err: err} // the key directory's
		}
		// In store mode a zone's serial is the store's: signatures due
		// are made again when refreshDue has written a new revision of
		// the zone (same is then false), never past the store's serial.
		resign = prev != nil && !(fixed && same) && (!prev.cur.SameKeys(keys, zc.DNSSEC) || !now.Before(prev.cur.RefreshDue()))
	}
	if same && prev.cfg == zc && !resign {
		// The same config object (store mode keeps a zone's config while
		// nothing of it changes): nothing to build.
		return prev, false, nil
	}
	var prevZone *zone.Zone
	if prev != nil {
		prevZone = prev.cur
	}
	z, ch := zone.Update(prevZone, zc)
	e = &zoneEntry{cfg: zc}
	if same && prev.cur.Digest() == z.Digest() && !resign {
		e.cur, e.history = prev.cur, prev.history
		return e, false, nil
	}
	serial := want
	if !fixed {
		serial = serials.next(zc.Origin, z.Digest(), now)
	}
	e.cur = z.WithSerial(s.above(zc.Origin, serial, prev, fixed))
	if keys != nil {
		if e.cur, err = zone.Sign(prevZone, e.cur, ch, keys, *zc.DNSSEC, now); err != nil {
			return nil, false, fmt.Errorf("zone %s: signing: %w", zc.Origin, err)
		}
	}
	if prev != nil && zc.Transfer.Any() {
		e.history = appendStep(prev.history, &ixfrStep{from: prev.cur.SOA, to: e.cur.SOA, deleted: ch.Deleted, added: ch.Added}, history, e.cur.Bytes())
	}
	setZone := te.SetZone
	if later {
		setZone = te.SetZoneLater
	}
	if err := setZone(e.cur, ch); err != nil {
		return nil, false, err
	}
	return e, true, nil
}

// above returns serial, or the serial prev serves plus one when serial
// is not above it: never go backwards while serving.
func (s *Server) above(origin string, serial uint32, prev *zoneEntry, fromStore bool) uint32 {
	if prev == nil || serialGreater(serial, prev.cur.Serial()) {
		return serial
	}
	if fromStore {
		s.log.Error("the store's revision for this zone is not above the serial served (was the store restored from an older backup?): serving the served serial + 1", "zone", origin, "store_serial", serial, "served", prev.cur.Serial())
	}
	// Else the state file was edited or the zone's content went back to
	// an old digest.
	return prev.cur.Serial() + 1
}

// appendStep adds a step to an IXFR history, keeping at most versions
// steps, and no more than a zone's worth of bytes (zoneBytes, at least
// 64 KiB): a longer chain of differences is no cheaper than a full
// transfer, which IXFR then sends (RFC 1995 §4).
func appendStep(history []*ixfrStep, step *ixfrStep, versions, zoneBytes int) []*ixfrStep {
	for _, rr := range step.deleted {
		step.bytes += dns.Len(rr)
	}
	for _, rr := range step.added {
		step.bytes += dns.Len(rr)
	}
	out := append(slices.Clip(history), step)
	total := 0
	for i := len(out) - 1; i >= 0; i-- {
		total += out[i].bytes
		if len(out)-i > versions || total > max(zoneBytes, 64<<10) {
			return out[i+1:]
		}
	}
	return out
}

// Serials returns the SOA serial of every zone being served.
func (s *Server) Serials() map[string]uint32 {
	if _, out, _ := s.Published(); out != nil {
		return out
	}
	return map[string]uint32{}
}

// Published returns the config being served, the SOA serial of each of
// its zones and the snapshot's version, all from one snapshot; cfg is nil
// before the first load. Nothing returned may be modified.
func (s *Server) Published() (cfg *model.Config, serials map[string]uint32, version uint64) {
	snap := s.snap.Load()
	if snap == nil {
		return nil, nil, 0
	}
	serials = make(map[string]uint32, len(snap.zones))
	for o, e := range snap.zones {
		serials[o] = e.cur.Serial()
	}
	return snap.cfg, serials, snap.version
}

// Start binds the UDP and TCP sockets and starts serving, watching the
// config file, and notifying secondaries.
func (s *Server) Start() error {
	udp, tcp, err := listenBoth(s.opts.Listen, s.opts.UDPWorkers, s.opts.PortableUDP)
	if err != nil {
		return err
	}
	s.udp, s.tcp = udp, tcp
	addr := udp.addr()
	udp.start(s)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.serveTCP()
	}()
	if s.opts.ConfigFile != "" && s.opts.WatchInterval > 0 {
		tr := s.newTracker(s.opts.ConfigFile, s.log)
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.watch(tr)
		}()
	}
	s.notifier.start(s.done)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.refreshSignatures()
	}()
	if s.feed != nil {
		ctx, cancel := context.WithCancel(context.Background())
		s.cancel = cancel
		s.wg.Add(2)
		go func() {
			defer s.wg.Done()
			s.followStore(ctx)
		}()
		go func() {
			defer s.wg.Done()
			s.pingStore(ctx, s.opts.StorePing)
		}()
	}
	s.laterMu.Lock()
	s.started = true
	queued := s.later
	s.later = nil
	s.laterMu.Unlock()
	if len(queued) > 0 {
		// Shutdown waits for the piece under way, and stops the rest.
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			for _, f := range queued {
				select {
				case <-s.done:
					return
				default:
				}
				f()
			}
		}()
	}
	s.log.Info("serving", "udp", addr.String(), "tcp", tcp.Addr().String(), "udp_workers", udp.workers(), "batched_udp", udp.batched())
	// Announce the zones to the secondaries: they may have missed changes
	// while we were down.
	if snap := s.snap.Load(); snap != nil {
		s.notifier.update(snap, slices.Collect(maps.Keys(snap.zones)))
	}
	return nil
}

// listenBoth opens the UDP sockets and the TCP listener on one port. When
// the port is 0 the kernel picks a free UDP port, whose TCP twin may be
// taken: then another port is tried.
func listenBoth(addr string, workers int, portable bool) (udpListener, net.Listener, error) {
	_, port, _ := net.SplitHostPort(addr)
	for attempt := 0; ; attempt++ {
		udp, err := listenUDP(addr, workers, portable)
		if err != nil {
			return nil, nil, err
		}
		bound := udp.addr().String()
		tcp, err := net.Listen("tcp", bound)
		if err == nil {
			return udp, tcp, nil
		}
		udp.abort()
		if port != "0" || attempt == 10 {
			return nil, nil, fmt.Errorf("listening on TCP %s: %w", bound, err)
		}
	}
}

// Addr returns the address the server listens on (UDP and TCP share it).
func (s *Server) Addr() net.Addr {
	if s.udp == nil {
		return nil
	}
	return s.udp.addr()
}

// Shutdown stops accepting queries, lets TCP connections finish their
// current query until ctx ends, and stops the background work.
func (s *Server) Shutdown(ctx context.Context) error {
	s.stopOnce.Do(func() {
		close(s.done)
		if s.cancel != nil {
			s.cancel()
		}
		if s.udp != nil {
			s.udp.wake()
		}
		if s.tcp != nil {
			s.tcp.Close()
		}
		// Idle connections are waiting in a read: wake them up.
		s.connMu.Lock()
		for c := range s.conns {
			c.SetReadDeadline(time.Now())
		}
		s.connMu.Unlock()
	})
	finished := make(chan struct{})
	go func() {
		s.wg.Wait()
		s.notifier.wait()
		close(finished)
	}()
	select {
	case <-finished:
		return nil
	case <-ctx.Done():
		s.connMu.Lock()
		for c := range s.conns {
			c.Close()
		}
		s.connMu.Unlock()
		<-finished
		return ctx.Err()
	}
}
