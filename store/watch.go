package store

import (
	"context"
	"errors"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// WatchZones watches the zones; see WatchServices.
func (s *Store) WatchZones(ctx context.Context, rv string) (<-chan Event, error) {
	return s.watch(ctx, "z/", rv)
}

// WatchServices streams the changes of a zone's services, as a Kubernetes
// watch does: rv "" or "0" starts with a synthetic ADDED event for every
// service (at the latest version, read consistently for ""), then a
// BOOKMARK marking the end of them; rv N starts with the changes after N
// (410 Gone when N was compacted). BOOKMARKs come every
// Options.BookmarkInterval. A watch that falls behind compaction ends with
// an ERROR event (410). The channel closes when ctx ends.
func (s *Store) WatchServices(ctx context.Context, zone, rv string) (<-chan Event, error) {
	z, err := zoneName(zone)
	if err != nil {
		return nil, err
	}
	return s.watch(ctx, servicePrefix(z), rv)
}

// initialEventsEnd is the annotation of the BOOKMARK after the synthetic
// ADDED events, as Kubernetes names it.
const initialEventsEnd = "k8s.io/initial-events-end"

type bookmarkObject struct {
	Metadata bookmarkMeta `json:"metadata"`
}

type bookmarkMeta struct {
	ResourceVersion string            `json:"resourceVersion"`
	Annotations     map[string]string `json:"annotations,omitempty"`
}

func (s *Store) watch(ctx context.Context, prefix, rv string) (<-chan Event, error) {
	initial, start, err := s.watchStart(ctx, prefix, rv)
	if err != nil {
		return nil, err
	}
	wctx, cancel := context.WithCancel(ctx)
	changes := s.b.watch(wctx, prefix, start)
	w := &watcher{s: s, ctx: ctx, wctx: wctx, out: make(chan Event, 64)}
	go func() {
		defer cancel()
		defer close(w.out)
		for _, o := range initial {
			if !w.send(Event{Type: Added, Object: o}) {
				return
			}
		}
		if initial != nil || rv == "" || rv == "0" {
			if !w.send(Event{Type: Bookmark, Object: bookmarkObject{bookmarkMeta{FormatRV(start), map[string]string{initialEventsEnd: "true"}}}}) {
				return
			}
		}
		w.stream(changes, start)
	}()
	return w.out, nil
}

// watchStart reads where a watch from rv starts: for "" or "0" the
// objects under prefix (read consistently for "", see WatchServices) and
// the revision they were read at, else revision rv, which must not be
// compacted.
func (s *Store) watchStart(ctx context.Context, prefix, rv string) ([]*Object, int64, error) {
	if rv == "" || rv == "0" {
		o := ListOptions{}
		if rv == "0" {
			o.ResourceVersion = "0"
		}
		return s.listAll(ctx, prefix, o)
	}
	v, err := ParseRV(rv)
	if err != nil {
		return nil, 0, err
	}
	if err := s.waitFor(ctx, v); err != nil {
		return nil, 0, err
	}
	if _, _, _, err := s.b.rangeKeys(ctx, prefix, "", 1, v); err != nil {
		if errors.Is(err, errCompacted) {
			return nil, 0, gone("too old resource version: %d was compacted (the store keeps the last --history versions); watch without resourceVersion to start from the current state", v)
		}
		return nil, 0, s.internal(err)
	}
	return nil, v, nil
}

// watcher sends the events of one watch to out until ctx, the watch's,
// ends; wctx is that of the backend's watch under it.
type watcher struct {
	s         *Store
	ctx, wctx context.Context
	out       chan Event
}

// send sends e, and reports false when the watch ended first.
func (w *watcher) send(e Event) bool {
	select {
	case w.out <- e:
		return true
	case <-w.ctx.Done():
		return false
	}
}

// stream sends the changes after revision last, and a BOOKMARK every
// Options.BookmarkInterval, until the watch ends.
func (w *watcher) stream(changes <-chan batch, last int64) {
	tick := time.NewTicker(w.s.opts.BookmarkInterval)
	defer tick.Stop()
	for {
		select {
		case <-w.ctx.Done():
			return
		case <-tick.C:
			w.s.b.requestProgress(w.wctx)
			if !w.send(Event{Type: Bookmark, Object: bookmarkObject{bookmarkMeta{ResourceVersion: FormatRV(last)}}}) {
				return
			}
		case b, ok := <-changes:
			if !ok || !w.sendBatch(b, last) {
				return
			}
			last = max(last, b.rev)
		}
	}
}

// sendBatch sends the events of b, or the error that ends the watch
// (last is the revision sent last). It reports false when the watch
// ended.
func (w *watcher) sendBatch(b batch, last int64) bool {
	if b.err != nil {
		e := w.s.internal(b.err)
		if errors.Is(b.err, errCompacted) {
			e = errorf(http.StatusGone, ReasonGone, "too old resource version: %d was compacted while the watch was behind; watch again without resourceVersion", last)
		}
		w.send(Event{Type: ErrorEvent, Object: e})
		return false
	}
	for _, c := range b.events {
		obj, err := decode(c.kv)
		if err != nil {
			w.send(Event{Type: ErrorEvent, Object: w.s.internal(err)})
			return false
		}
		if !w.send(Event{Type: eventType(c), Object: obj}) {
			return false
		}
	}
	return true
}

// eventType is the type of the event of change c.
func eventType(c change) EventType {
	switch {
	case c.deleted:
		return Deleted
	case c.created:
		return Added
	}
	return Modified
}

// listAll reads every object under prefix at one revision, in pages.
func (s *Store) listAll(ctx context.Context, prefix string, o ListOptions) ([]*Object, int64, error) {
	o.Limit = 1000
	if o.ResourceVersion != "" {
		o.ResourceVersionMatch = MatchNotOlderThan
	}
	var out []*Object
	var rev int64
	for {
		l, err := s.list(ctx, prefix, o)
		if err != nil {
			return nil, 0, err
		}
		out = append(out, l.Items...)
		rev, _ = ParseRV(l.Metadata.ResourceVersion)
		if l.Metadata.Continue == "" {
			break
		}
		o = ListOptions{Limit: 1000, Continue: l.Metadata.Continue}
	}
	if out == nil {
		out = []*Object{}
	}
	return out, rev, nil
}

// Item is what a publisher reads of the store: a zone, a service, a
// policy, or a zone's change marker, whose Rev is the revision of the last write to the
// zone or to one of its services (deletions included).
type Item struct {
	Kind Kind
	Zone string // of a service or a marker; the zone itself for a zone
	Name string // of a service or a policy
	// Spec is nil for a deletion and for markers.
	Spec    []byte
	Labels  map[string]string
	Rev     int64
	Deleted bool
}

// KindMarker is the Kind of a zone's change marker.
const KindMarker Kind = 3

// Changes is a batch of a feed: the items changed up to Rev, in order.
type Changes struct {
	Items []Item
	Rev   int64
	Err   error
}

func itemOf(k kv, deleted bool) (Item, bool) {
	switch {
	case strings.HasPrefix(k.key, "m/"):
		return Item{Kind: KindMarker, Zone: k.key[2:], Rev: k.modRev, Deleted: deleted}, true
	case strings.HasPrefix(k.key, "z/"), strings.HasPrefix(k.key, "s/"), strings.HasPrefix(k.key, "p/"):
		it := Item{Kind: KindZone, Zone: k.key[2:], Rev: k.modRev, Deleted: deleted}
		switch k.key[0] {
		case 's':
			it.Kind = KindService
			it.Zone, it.Name, _ = strings.Cut(k.key[2:], "/")
		case 'p':
			it.Kind = KindPolicy
			it.Zone, it.Name, _ = strings.Cut(k.key[2:], "/")
		}
		if !deleted {
			o, err := decode(k)
			if err != nil {
				return Item{}, false
			}
			it.Spec, it.Labels = o.Spec, o.Metadata.Labels
		}
		return it, true
	}
	return Item{}, false
}

// Snapshot reads every zone, service and marker at one revision (the
// latest, read consistently), and returns them with that revision.
func (s *Store) Snapshot(ctx context.Context) ([]Item, int64, error) {
	return s.items(ctx, "", 0)
}

// ServicesAt reads the services of zone (a name as Item.Zone gives it) as
// they were at revision rev; errors.Is(err, ErrCompacted) when rev was
// compacted. A publisher lets go of the specs it has validated (they were
// a third of its memory at 100 000 services) and reads them again here
// when its zone or a policy changes and they must be validated again.
//
// names, when not nil, are the services wanted: a few are read one by one
// (a policy that selects ten services of 100 000 changed), more with the
// whole zone. A name not there at rev is left out.
func (s *Store) ServicesAt(ctx context.Context, zone string, names []string, rev int64) ([]Item, error) {
	if rev <= 0 {
		return nil, badRequest("revision %d: give the revision to read the services at", rev)
	}
	if names == nil || len(names) > fewServices {
		items, _, err := s.items(ctx, servicePrefix(zone), rev)
		return items, err
	}
	// One by one, a few at once: on etcd each is a request.
	found := make([]*Item, len(names))
	errs := make([]error, len(names))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(len(names), 8) {
		wg.Go(func() {
			for i := int(next.Add(1)) - 1; i < len(names); i = int(next.Add(1)) - 1 {
				key := serviceKey(zone, names[i])
				kvs, _, _, err := s.b.rangeKeys(ctx, key, key, 1, rev)
				if err != nil {
					errs[i] = err
					return
				}
				if len(kvs) == 1 && kvs[0].key == key {
					if it, ok := itemOf(kvs[0], false); ok {
						found[i] = &it
					}
				}
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	var out []Item
	for _, it := range found {
		if it != nil {
			out = append(out, *it)
		}
	}
	return out, nil
}

// fewServices is how many services ServicesAt reads one by one at most:
// reading one took 10–20 µs on the embedded store, reading a zone of
// 100 000 took 75 ms (on etcd a request each, eight at once, against
// 0.3 s for the zone).
const fewServices = 1000

// items reads the items under prefix at revision at (0: the latest, read
// consistently), and returns them with the revision read.
func (s *Store) items(ctx context.Context, prefix string, at int64) ([]Item, int64, error) {
	// Each page is decoded while the next is read, on as many cores as
	// there are: a start reads every object, and decoding them one after
	// the other held back the first validation by a tenth of a second at
	// 100 000 services.
	var pages []*[]Item
	var wg sync.WaitGroup
	defer wg.Wait()
	busy := make(chan struct{}, runtime.GOMAXPROCS(0))
	read, err := s.b.rangePages(ctx, prefix, at, func(kvs []kv) {
		page := new([]Item)
		pages = append(pages, page)
		busy <- struct{}{}
		wg.Go(func() {
			defer func() { <-busy }()
			items := make([]Item, 0, len(kvs))
			for _, k := range kvs {
				if it, ok := itemOf(k, false); ok {
					items = append(items, it)
				}
			}
			*page = items
		})
	})
	wg.Wait()
	if err != nil {
		return nil, 0, err
	}
	if r, ok := s.b.(releaser); ok {
		r.release()
	}
	var n int
	for _, p := range pages {
		n += len(*p)
	}
	out := make([]Item, 0, n)
	for _, p := range pages {
		out = append(out, *p...)
	}
	return out, read, nil
}

// releaser is a backend whose reads map memory that it can give back
// (the embedded store's file), which a Snapshot, reading everything,
// does once it is read.
type releaser interface{ release() }

// Follow sends the changes after revision after, in order, until ctx
// ends or an error (a batch with Err: errors.Is(Err, ErrCompacted) when
// after was compacted: take a new Snapshot). Batches without items say
// the store reached Rev.
func (s *Store) Follow(ctx context.Context, after int64) <-chan Changes {
	out := make(chan Changes, 1)
	go func() {
		defer close(out)
		for b := range s.b.watch(ctx, "", after) {
			ch := Changes{Rev: b.rev, Err: b.err}
			for _, c := range b.events {
				if it, ok := itemOf(c.kv, c.deleted); ok {
					ch.Items = append(ch.Items, it)
				}
			}
			select {
			case out <- ch:
			case <-ctx.Done():
				return
			}
			if b.err != nil {
				return
			}
		}
	}()
	return out
}

// ErrCompacted is the error of a Follow whose revision was compacted.
var ErrCompacted = errCompacted
