package store

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/grpc-config-dns/grpc-config-dns/internal/jtree"
	"github.com/grpc-config-dns/grpc-config-dns/model"
	"github.com/grpc-config-dns/grpc-config-dns/serviceconfig/policy"
)

// Options configure a Store.
type Options struct {
	// Location is a directory (the embedded store) or
	// etcd://HOST:PORT[,HOST:PORT…]/PREFIX.
	Location string
	// History is how many revisions stay readable (Exact lists, continue
	// tokens, watches); older ones are compacted. 0 means DefaultHistory.
	History int64
	// Keys are the TSIG keys a zone's transfer may name.
	Keys []*model.Key
	// WaitForRevision is how long a read asking for a revision the store
	// has not reached yet waits before failing (504); 0 means 3s.
	WaitForRevision time.Duration
	// BookmarkInterval is how often a watch sends a BOOKMARK; 0 means 10s.
	BookmarkInterval time.Duration
	// Logger receives the backend's logs; nil means slog.Default().
	Logger *slog.Logger
	// Now replaces the clock (the serial base of a new store).
	Now func() time.Time
	// NoCache reads etcd for every read instead of a copy of the store
	// kept in memory by a watch (see cache.go); the embedded store has
	// none.
	NoCache bool
}

// DefaultHistory is the default of Options.History.
const DefaultHistory = 10000

// Store holds zones and services, versioned: every accepted write gets a
// new resourceVersion, strictly greater than every earlier one.
type Store struct {
	b    backend
	opts Options
	// boundedTxn says the backend bounds a transaction's operations and
	// bytes (etcd), so that batches are written in chunks.
	boundedTxn bool
	// policies caches each zone's *zonePolicies, read and parsed once per
	// version of the zone's policy marker.
	policies sync.Map
}

// Open opens the store at opts.Location.
func Open(ctx context.Context, opts Options) (*Store, error) {
	if opts.History <= 0 {
		opts.History = DefaultHistory
	}
	if opts.WaitForRevision <= 0 {
		opts.WaitForRevision = 3 * time.Second
	}
	if opts.BookmarkInterval <= 0 {
		opts.BookmarkInterval = 10 * time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	var b backend
	var err error
	if rest, ok := strings.CutPrefix(opts.Location, "etcd://"); ok {
		var e *etcdBackend
		if e, err = openEtcd(ctx, rest, opts); err == nil {
			b = e
			if !opts.NoCache {
				b = newCachedBackend(e, opts.Logger)
			}
		}
	} else {
		if opts.Location == "" {
			return nil, fmt.Errorf("no store given: --store DIR (the embedded store) or --store etcd://HOST:PORT/PREFIX")
		}
		if strings.Contains(opts.Location, "://") {
			return nil, fmt.Errorf("store %q: the only URL scheme is etcd:// (etcd://HOST:PORT[,HOST:PORT]/PREFIX); a directory is the embedded store", opts.Location)
		}
		b, err = openBolt(opts.Location, opts.History, opts.Now())
	}
	if err != nil {
		return nil, err
	}
	return &Store{b: b, opts: opts, boundedTxn: strings.HasPrefix(opts.Location, "etcd://")}, nil
}

// Close releases the store.
func (s *Store) Close() error { return s.b.close() }

// Keys of objects: zones, services, and each zone's change marker, which
// every write to the zone or one of its services rewrites, so that its
// revision is that of the zone's last change, deletions included (the SOA
// serial follows it).
func zoneKey(zone string) string          { return "z/" + zone }
func servicePrefix(zone string) string    { return "s/" + zone + "/" }
func serviceKey(zone, name string) string { return servicePrefix(zone) + name }
func markerKey(zone string) string        { return "m/" + zone }

// stored is an object as the store keeps it: without its resourceVersion,
// which is the revision of the write.
type stored struct {
	Metadata storedMeta      `json:"metadata"`
	Spec     json.RawMessage `json:"spec"`
}

type storedMeta struct {
	Name        string            `json:"name"`
	Zone        string            `json:"zone,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

func decode(k kv) (*Object, error) {
	o := new(Object)
	if err := decodeInto(o, k); err != nil {
		return nil, err
	}
	return o, nil
}

// decodeInto is decode into o: a list decodes its page into one array.
func decodeInto(o *Object, k kv) error {
	var meta storedMeta
	meta2, spec, ok := splitStored(k.value)
	if !ok || !oneValue(spec) || !readMeta(meta2, &meta) {
		var st stored
		if err := json.Unmarshal(k.value, &st); err != nil {
			return fmt.Errorf("store: the value of %s at revision %d is corrupt: %v", k.key, k.modRev, err)
		}
		meta, spec = st.Metadata, st.Spec
	}
	*o = Object{APIVersion: APIVersion, Kind: kindOf(k.key), Metadata: Metadata{Name: meta.Name, Zone: meta.Zone, Labels: meta.Labels,
		Annotations: meta.Annotations, ResourceVersion: FormatRV(k.modRev)}, Spec: spec}
	return nil
}

// oneValue reports whether spec, cut out of a stored value by
// splitStored, is one JSON value, and so the spec's whole value: the cut
// takes all up to the value's last '}', which is the spec only when no
// member follows it. jtree accepts no text encoding/json does not, and
// reads a spec in two thirds of the time (a start reads 100 000, and
// checking them was half of reading them); what it refuses besides
// (duplicate keys, invalid UTF-8, deep nesting) is read by
// encoding/json, as before.
func oneValue(spec []byte) bool {
	t := specTrees.Get().(*jtree.Tree)
	ok := t.Reset(spec) == nil
	t.Src = nil // the tree must not keep the value
	specTrees.Put(t)
	return ok
}

// specTrees are the trees oneValue parses into.
var specTrees = sync.Pool{New: func() any { return new(jtree.Tree) }}

// readMeta reads stored metadata: by hand when it has the shape the
// store writes, {"name":"…"[,"zone":"…"][,"labels":{…}]} with names
// without escapes (a list page reads hundreds, and reflection was a third
// of a page's cost), else with encoding/json. ok is false when it is not
// JSON of that kind.
func readMeta(meta []byte, m *storedMeta) bool {
	rest, ok := bytes.CutPrefix(meta, []byte(`{"name":`))
	var name, zone string
	if ok {
		name, rest, ok = plainString(rest)
	}
	if z, found := bytes.CutPrefix(rest, []byte(`,"zone":`)); ok && found {
		zone, rest, ok = plainString(z)
	}
	if !ok {
		return json.Unmarshal(meta, m) == nil
	}
	if string(rest) == "}" {
		m.Name, m.Zone = name, zone
		return true
	}
	return json.Unmarshal(meta, m) == nil
}

// plainString reads a JSON string of printable ASCII without escapes
// (what names are) at the start of b; anything else is for
// encoding/json, which knows what invalid UTF-8 and escapes become.
func plainString(b []byte) (string, []byte, bool) {
	if len(b) < 2 || b[0] != '"' {
		return "", nil, false
	}
	for i := 1; i < len(b); i++ {
		switch c := b[i]; {
		case c == '"':
			return string(b[1:i]), b[i+1:], true
		case c < 0x20 || c > 0x7e || c == '\\':
			return "", nil, false
		}
	}
	return "", nil, false
}

// splitStored cuts a value as the store writes it,
// {"metadata":{…},"spec":{…}}, into its metadata and spec, without
// decoding the spec: a list page decodes hundreds of values, and the spec
// is most of each. ok is false for any other shape (decode then reads the
// value the slow way, which says what is wrong with it).
func splitStored(v []byte) (meta, spec []byte, ok bool) {
	const head, mid = `{"metadata":`, `,"spec":`
	if !bytes.HasPrefix(v, []byte(head)) || len(v) < len(head)+len(mid)+3 || v[len(v)-1] != '}' {
		return nil, nil, false
	}
	end := containerEnd(v, len(head))
	if end < 0 {
		return nil, nil, false // the metadata is not an object
	}
	rest := v[end+1:]
	if !bytes.HasPrefix(rest, []byte(mid)) {
		return nil, nil, false
	}
	return v[len(head) : end+1], rest[len(mid) : len(rest)-1], true
}

// containerEnd is the offset of the '}' or ']' that closes the object or
// array at v[i], found by following depth and strings byte by byte (an
// escaped quote does not end a string); or -1 when v[i] starts neither,
// or v ends first.
func containerEnd(v []byte, i int) int {
	depth, inString, escaped := 0, false, false
	for ; i < len(v); i++ {
		c := v[i]
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			depth++
		case c == '}' || c == ']':
			depth--
			if depth == 0 {
				return i
			}
		}
		if depth <= 0 {
			return -1
		}
	}
	return -1
}

// internal turns a backend error into an API error.
func (s *Store) internal(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return errorf(http.StatusGatewayTimeout, ReasonTimeout, "the store did not answer in time: %v", err)
	case isUnavailable(err):
		return errorf(http.StatusServiceUnavailable, ReasonUnavailable, "the store is unavailable: %v; try again when it is back", err)
	case isNoSpace(err):
		return errorf(http.StatusInsufficientStorage, ReasonStorageFull, "%v: nothing was stored; free space on the store's disk", err)
	}
	return errorf(http.StatusInternalServerError, ReasonInternal, "%v", err)
}

// waitFor waits until the store has reached revision rv, for at most
// opts.WaitForRevision.
func (s *Store) waitFor(ctx context.Context, rv int64) error {
	deadline := time.Now().Add(s.opts.WaitForRevision)
	for {
		cur, err := s.b.rev(ctx)
		if err != nil {
			return s.internal(err)
		}
		if cur >= rv {
			return nil
		}
		if time.Now().After(deadline) {
			return errorf(http.StatusGatewayTimeout, ReasonTimeout, "Too large resource version: %d, current: %d; the store has not reached that version (was it given by another store?)", rv, cur)
		}
		select {
		case <-ctx.Done():
			return s.internal(ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// getKey reads one key as a Kubernetes get does: rv "" the latest
// (consistent), "0" any, N at least N.
func (s *Store) getKey(ctx context.Context, key, rv string) (*kv, error) {
	at := int64(0)
	var min int64
	if rv != "" {
		v, err := ParseRV(rv)
		if err != nil {
			return nil, err
		}
		at, min = -1, v
		if v > 0 {
			if err := s.waitFor(ctx, v); err != nil {
				return nil, err
			}
		}
	}
	kvs, _, read, err := s.b.rangeKeys(ctx, key, key, 1, at)
	if err == nil && read < min {
		kvs, _, _, err = s.b.rangeKeys(ctx, key, key, 1, 0)
	}
	if err != nil {
		return nil, s.internal(err)
	}
	if len(kvs) == 0 || kvs[0].key != key {
		return nil, nil
	}
	return &kvs[0], nil
}

// GetZone returns a zone; rv is the get's resourceVersion parameter.
func (s *Store) GetZone(ctx context.Context, zone, rv string) (*Object, error) {
	name, err := zoneName(zone)
	if err != nil {
		return nil, err
	}
	return s.getObject(ctx, zoneKey(name), rv, "zone %s not found: create it with PUT /v1/zones/%s", name, name)
}

// GetService returns a service.
func (s *Store) GetService(ctx context.Context, zone, svc, rv string) (*Object, error) {
	z, name, err := serviceName(zone, svc)
	if err != nil {
		return nil, err
	}
	return s.getObject(ctx, serviceKey(z, name), rv, "service %s of zone %s not found", name, z)
}

// getObject reads the object at key, or answers 404 with the message.
func (s *Store) getObject(ctx context.Context, key, rv, missing string, args ...any) (*Object, error) {
	k, err := s.getKey(ctx, key, rv)
	if err != nil {
		return nil, err
	}
	if k == nil {
		return nil, notFound(missing, args...)
	}
	return decode(*k)
}

func zoneName(zone string) (string, error) {
	name, msg := model.ZoneName(zone)
	if msg != "" {
		return "", badRequest("%s", msg)
	}
	return name, nil
}

func serviceName(zone, svc string) (string, string, error) {
	z, err := zoneName(zone)
	if err != nil {
		return "", "", err
	}
	name, msg := model.ServiceName(origin(z), svc)
	if msg != "" {
		return "", "", badRequest("%s", msg)
	}
	return z, name, nil
}

func origin(zone string) string {
	if zone == "." {
		return "."
	}
	return zone + "."
}

// precondition reads the version a write requires, given as name
// (metadata.resourceVersion of a PUT, resourceVersion of a DELETE): 0 for
// none.
func precondition(name, rv string) (int64, error) {
	if rv == "" {
		return 0, nil
	}
	v, err := parseRV(name, rv)
	if err != nil {
		return 0, err
	}
	if v == 0 {
		return 0, badRequest("%s 0 is no version an object can have: leave it out for an unconditional write", name)
	}
	return v, nil
}

// The names of a write's precondition, as its errors give them.
const (
	putPrecondition    = "metadata.resourceVersion"
	deletePrecondition = "resourceVersion"
)

// body checks what every PUT carries and returns the value to store.
func body(obj *Object, desc, name, zone string) ([]byte, error) {
	spec := bytes.TrimSpace(obj.Spec)
	if len(spec) == 0 || spec[0] != '{' {
		return nil, badRequest("the %s has no spec object: send {\"metadata\":{…},\"spec\":{…}}", desc)
	}
	if len(spec) > model.MaxSpecSize {
		return nil, errorf(http.StatusRequestEntityTooLarge, ReasonTooLarge, "the spec of %s is %d bytes, more than %d", desc, len(spec), model.MaxSpecSize)
	}
	if len(obj.Metadata.Labels) > 64 {
		return nil, badRequest("%s has %d labels; at most 64", desc, len(obj.Metadata.Labels))
	}
	for k, v := range obj.Metadata.Labels {
		if k == "" || len(k) > 253 || len(v) > 63 {
			return nil, badRequest("label %q=%q of %s: keys are 1 to 253 bytes, values at most 63", k, v, desc)
		}
	}
	size := 0
	for k, v := range obj.Metadata.Annotations {
		if k == "" || len(k) > 253 {
			return nil, badRequest("annotation %q of %s: keys are 1 to 253 bytes", k, desc)
		}
		size += len(k) + len(v)
	}
	if size > maxAnnotationBytes {
		return nil, badRequest("the annotations of %s are %d bytes; at most %d, keys and values together", desc, size, maxAnnotationBytes)
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, spec); err != nil {
		return nil, badRequest("the spec of %s is not JSON: %v", desc, err)
	}
	return json.Marshal(stored{Metadata: storedMeta{Name: name, Zone: zone, Labels: obj.Metadata.Labels, Annotations: annotations(obj)}, Spec: buf.Bytes()})
}

// maxAnnotationBytes bounds the annotations of an object, keys and
// values together, as Kubernetes bounds them.
const maxAnnotationBytes = 256 << 10

// annotations returns the annotations of obj as the store keeps them: as
// given, but for WrittenAt, which the store says itself, in history items
// (one read back and written again carries it); nil when none are left.
func annotations(obj *Object) map[string]string {
	a := obj.Metadata.Annotations
	if _, ok := a[WrittenAt]; ok {
		a = maps.Clone(a)
		delete(a, WrittenAt)
	}
	if len(a) == 0 {
		return nil
	}
	return a
}

// maxRetries bounds the retries of a write whose zone changed while it
// was validated.
const maxRetries = 8

// PutZone creates or replaces a zone. zone is the name in the URL;
// obj.Metadata.Name, when set, must be the same. A set
// obj.Metadata.ResourceVersion makes the write conditional. created says
// whether the zone is new.
func (s *Store) PutZone(ctx context.Context, zone string, obj *Object) (out *Object, created bool, err error) {
	w, err := s.checkZoneWrite(zone, obj)
	if err != nil {
		return nil, false, err
	}
	for range maxRetries {
		cur, err := s.getKey(ctx, zoneKey(w.name), "")
		if err != nil {
			return nil, false, err
		}
		if e := checkPrecondition(cur, w.want, "zone "+w.name); e != nil {
			return nil, false, e
		}
		if cur != nil && bytes.Equal(cur.value, w.value) {
			o, err := decode(*cur)
			return o, false, err // nothing changed: no new version
		}
		t, err := s.zoneTxn(ctx, w, cur)
		if err != nil {
			return nil, false, err
		}
		res, err := s.commit(ctx, t)
		if err != nil {
			return nil, false, s.internal(err)
		}
		if res.ok {
			_, existed := res.prev[zoneKey(w.name)]
			return typed(&Object{Metadata: Metadata{Name: w.name, Labels: obj.Metadata.Labels, Annotations: annotations(obj), ResourceVersion: resultRV(res, zoneKey(w.name))}, Spec: w.spec}, ZoneKind), !existed, nil
		}
	}
	return nil, false, conflict("zone %s kept changing while it was written; try again", w.name)
}

// zoneWrite is a request to put a zone, checked on its own.
type zoneWrite struct {
	name  string
	want  int64  // precondition, 0 for none
	value []byte // as stored
	spec  json.RawMessage
	// base is the zone's config, without its policies.
	base *model.Zone
}

// checkZoneWrite checks a PUT of zone with obj on its own: the name, the
// precondition and the spec.
func (s *Store) checkZoneWrite(zone string, obj *Object) (*zoneWrite, error) {
	name, err := zoneName(zone)
	if err != nil {
		return nil, err
	}
	if err := sameName(obj, name, ""); err != nil {
		return nil, err
	}
	want, err := precondition(putPrecondition, obj.Metadata.ResourceVersion)
	if err != nil {
		return nil, err
	}
	value, err := body(obj, "zone "+name, name, "")
	if err != nil {
		return nil, err
	}
	var st stored
	json.Unmarshal(value, &st)
	base, ds := model.ValidateZone(origin(name), st.Spec, s.opts.Keys)
	if base == nil {
		return nil, invalid("the spec of zone "+name, ds)
	}
	return &zoneWrite{name: name, want: want, value: value, spec: st.Spec, base: base}, nil
}

// zoneTxn checks zone w, which replaces cur (nil: a new zone), against the
// store: it nests in no zone and holds none, and its services stay valid
// under its policies. It returns the transaction that writes it on the
// condition that none of these changed since they were read.
func (s *Store) zoneTxn(ctx context.Context, w *zoneWrite, cur *kv) (*txn, error) {
	zonesAt, bad, err := s.checkNesting(ctx, w.name)
	if err != nil {
		return nil, err
	}
	if bad != nil {
		return nil, bad
	}
	// The zone's settings are its services' defaults, under its
	// policies: every service must still be valid, and the services
	// and policies stay unchanged until the zone is written.
	ps, err := s.readPolicies(ctx, w.name)
	if err != nil {
		return nil, err
	}
	if err := ps.usable(""); err != nil {
		return nil, err
	}
	zc, err := w.base.WithPolicies(ps.list())
	if err != nil {
		return nil, s.internal(err)
	}
	rev, bad, err := s.checkServices(ctx, w.name, zc, nil)
	if err != nil {
		return nil, err
	}
	if bad != nil {
		bad.Message = fmt.Sprintf("zone %s: its services would be invalid with this spec (the zone's settings are their defaults): nothing was stored; fix the zone's spec or the services", w.name)
		return nil, bad
	}
	t := &txn{puts: []kvPut{{zoneKey(w.name), w.value}, {markerKey(w.name), s.writtenAt()}},
		cmps: []cmp{{key: zoneKey(w.name), modRev: modRev(cur)}, {key: policyMarkerKey(w.name), modRev: ps.marker}}}
	if rev > 0 {
		t.cmps = append(t.cmps, cmp{key: servicePrefix(w.name), notAfter: rev})
	}
	if cur == nil {
		t.cmps = append(t.cmps, noZoneSince(zonesAt))
	}
	return t, nil
}

// noZoneSince is the condition of the write of a new zone: no zone was
// created since the zones were read at revision zonesAt (0: there was
// none), here or through another replica, or the two could nest. (A
// replaced zone nests nothing new: a zone created meanwhile compared the
// zones itself.)
func noZoneSince(zonesAt int64) cmp {
	if zonesAt > 0 {
		return cmp{key: zoneKey(""), notAfter: zonesAt}
	}
	return cmp{key: zoneKey(""), empty: true}
}

// checkNesting reads the zones of the store and returns the revision they
// were read at, and the 422 of zone name when it would lie inside one of
// them or hold one: a config with both is refused (zone-nested), and the
// store refuses them with the same diagnostic, from the same code.
func (s *Store) checkNesting(ctx context.Context, name string) (int64, *Error, error) {
	kvs, _, read, err := s.b.rangeKeys(ctx, zoneKey(""), "", 0, 0)
	if err != nil {
		return 0, nil, s.internal(err)
	}
	origins := make([]string, len(kvs))
	versions := make(map[string]int64, len(kvs))
	for i, k := range kvs {
		o := origin(strings.TrimPrefix(k.key, zoneKey("")))
		origins[i], versions[o] = o, k.modRev
	}
	ds := model.NestedZone(origin(name), origins, func(other string) string {
		return fmt.Sprintf(" (stored, version %d)", versions[other])
	})
	if ds == nil {
		return read, nil, nil
	}
	e := invalid("zone "+name, ds)
	for i := range e.Diagnostics {
		e.Diagnostics[i].Path = "/metadata/name" // the zone's name is in the URL, and may be here
	}
	return read, e, nil
}

func modRev(k *kv) int64 {
	if k == nil {
		return 0
	}
	return k.modRev
}

func sameName(obj *Object, name, zone string) error {
	m := obj.Metadata
	if zone == "" {
		if err := checkKind(obj, ZoneKind, "zone "+name); err != nil {
			return err
		}
		if m.Zone != "" {
			return badRequest("a zone has no metadata.zone (it is %q): remove it", m.Zone)
		}
		if m.Name != "" {
			if n, msg := model.ZoneName(m.Name); msg != "" || n != name {
				return badRequest("metadata.name %q is not the zone in the URL (%s): make them the same", m.Name, name)
			}
		}
		return nil
	}
	if err := checkKind(obj, ServiceKind, "service "+name+" of zone "+zone); err != nil {
		return err
	}
	if m.Zone != "" {
		if z, msg := model.ZoneName(m.Zone); msg != "" || z != zone {
			return badRequest("metadata.zone %q is not the zone in the URL (%s): make them the same", m.Zone, zone)
		}
	}
	if m.Name != "" {
		if n, msg := model.ServiceName(origin(zone), m.Name); msg != "" || n != name {
			return badRequest("metadata.name %q is not the service in the URL (%s): make them the same", m.Name, name)
		}
	}
	return nil
}

// checkPrecondition compares the object's version with the one a write
// requires (0: none).
func checkPrecondition(cur *kv, want int64, what string) *Error {
	switch {
	case want == 0:
		return nil
	case cur == nil:
		return conflict("Operation cannot be fulfilled on %s: it does not exist (deleted since version %d?); create it without a resourceVersion", what, want)
	case cur.modRev != want:
		return conflict("Operation cannot be fulfilled on %s: the object has been modified (it is at version %d, not %d); please apply your changes to the latest version and try again", what, cur.modRev, want)
	}
	return nil
}

// checkServices validates the services of zone under zc (those that
// only selects, when not nil) and returns the revision they were read at,
// and a 422 listing the problems of the invalid ones (nil when there are
// none), whose caller sets its message.
func (s *Store) checkServices(ctx context.Context, zone string, zc *model.Zone, only func(policy.Target) bool) (int64, *Error, error) {
	var bad *Error
	var rev int64
	var v model.ServiceValidator
	from := ""
	for {
		kvs, more, read, err := s.b.rangeKeys(ctx, servicePrefix(zone), from, 1000, rev)
		if err != nil {
			return 0, nil, s.internal(err)
		}
		rev = read
		for _, k := range kvs {
			o, err := decode(k)
			if err != nil {
				return 0, nil, s.internal(err)
			}
			if only != nil && !only(zc.ServiceTarget(o.Metadata.Name, o.Metadata.Labels, o.Spec)) {
				continue
			}
			_, ds := v.Validate(zc, o.Metadata.Name, o.Metadata.Labels, o.Spec, s.opts.Keys)
			if !ds.HasErrors() {
				continue
			}
			if bad == nil {
				bad = errorf(http.StatusUnprocessableEntity, ReasonInvalid, "")
			}
			for _, d := range ds {
				if d.Severity.String() != "error" || len(bad.Diagnostics) >= 100 {
					continue
				}
				msg := d.Message
				if !strings.Contains(msg, "applied to service") {
					msg = "service " + o.Metadata.Name + ": " + msg
				}
				bad.Diagnostics = append(bad.Diagnostics, Diagnostic{Severity: "error", Code: d.Code, Message: msg, Path: "/spec" + d.Path})
			}
		}
		if !more || len(kvs) == 0 {
			break
		}
		from = kvs[len(kvs)-1].key + "\x00"
	}
	return rev, bad, nil
}

// zoneConfig reads zone and validates its spec: the defaults of its
// services, with its policies. It returns the zone's key and the version
// of its policies (the policy marker's modification revision) that the
// config was made from.
func (s *Store) zoneConfig(ctx context.Context, zone string) (*model.Zone, *kv, *zonePolicies, error) {
	return s.zoneConfigBut(ctx, zone, "")
}

// zoneConfigBut is zoneConfig for a write of policy except, which may be
// one this server cannot read (and replaces or deletes).
func (s *Store) zoneConfigBut(ctx context.Context, zone, except string) (*model.Zone, *kv, *zonePolicies, error) {
	k, err := s.getKey(ctx, zoneKey(zone), "")
	if err != nil {
		return nil, nil, nil, err
	}
	if k == nil {
		return nil, nil, nil, notFound("zone %s not found: create it first (PUT /v1/zones/%s, or publish a config that has it)", zone, zone)
	}
	o, err := decode(*k)
	if err != nil {
		return nil, nil, nil, s.internal(err)
	}
	zc, ds := model.ValidateZone(origin(zone), o.Spec, s.opts.Keys)
	if zc == nil {
		e := invalid("zone "+zone+" as stored (for this server's TSIG keys)", ds)
		e.Code, e.Reason = http.StatusConflict, ReasonConflict
		return nil, nil, nil, e
	}
	ps, err := s.readPolicies(ctx, zone)
	if err != nil {
		return nil, nil, nil, err
	}
	if err := ps.usable(except); err != nil {
		return nil, nil, nil, err
	}
	if zc, err = zc.WithPolicies(ps.list()); err != nil {
		return nil, nil, nil, s.internal(err)
	}
	return zc, k, ps, nil
}

// PutService creates or replaces a service of an existing zone, after
// validating its spec with every rule of the publisher (422 Invalid and
// nothing stored when it fails).
func (s *Store) PutService(ctx context.Context, zone, svc string, obj *Object) (out *Object, created bool, err error) {
	out, created, _, err = s.PutServicePublished(ctx, zone, svc, obj)
	return out, created, err
}

// PutServicePublished is PutService, and returns the service as its
// zone publishes it (what a dry run answers besides the object).
func (s *Store) PutServicePublished(ctx context.Context, zone, svc string, obj *Object) (out *Object, created bool, published *model.Service, err error) {
	z, name, err := serviceName(zone, svc)
	if err != nil {
		return nil, false, nil, err
	}
	value, spec, want, err := serviceValue(z, name, obj)
	if err != nil {
		return nil, false, nil, err
	}
	for range maxRetries {
		zc, zkv, ps, err := s.zoneConfig(ctx, z)
		if err != nil {
			return nil, false, nil, err
		}
		published, ds := model.ValidateService(zc, name, obj.Metadata.Labels, spec, s.opts.Keys)
		if ds.HasErrors() {
			return nil, false, nil, invalidService(zc, z, name, obj.Metadata.Labels, invalid("", ds).Diagnostics)
		}
		key := serviceKey(z, name)
		cur, err := s.getKey(ctx, key, "")
		if err != nil {
			return nil, false, nil, err
		}
		if e := checkPrecondition(cur, want, "service "+name+" of zone "+z); e != nil {
			return nil, false, nil, e
		}
		if cur != nil && bytes.Equal(cur.value, value) {
			o, err := decode(*cur)
			return o, false, published, err
		}
		res, err := s.commit(ctx, &txn{
			cmps: []cmp{{key: zoneKey(z), modRev: zkv.modRev}, {key: policyMarkerKey(z), modRev: ps.marker}, {key: key, modRev: modRev(cur)}},
			puts: []kvPut{{key, value}, {markerKey(z), s.writtenAt()}},
		})
		if err != nil {
			return nil, false, nil, s.internal(err)
		}
		if res.ok {
			_, existed := res.prev[key]
			return typed(&Object{Metadata: Metadata{Name: name, Zone: z, Labels: obj.Metadata.Labels, Annotations: annotations(obj), ResourceVersion: resultRV(res, key)}, Spec: spec}, ServiceKind), !existed, published, nil
		}
	}
	return nil, false, nil, conflict("service %s of zone %s, or its zone, kept changing while it was written; try again", name, z)
}

// DeleteZone deletes an empty zone; ifRV, when not "", is a precondition.
// It returns the zone's last state, at the revision of its deletion.
func (s *Store) DeleteZone(ctx context.Context, zone, ifRV string) (*Object, error) {
	name, err := zoneName(zone)
	if err != nil {
		return nil, err
	}
	want, err := precondition(deletePrecondition, ifRV)
	if err != nil {
		return nil, err
	}
	for range maxRetries {
		cur, err := s.getKey(ctx, zoneKey(name), "")
		if err != nil {
			return nil, err
		}
		if cur == nil {
			return nil, notFound("zone %s not found", name)
		}
		if e := checkPrecondition(cur, want, "zone "+name); e != nil {
			return nil, e
		}
		if isDryRun(ctx) {
			// The transaction's conditions, checked here.
			if e := s.zoneEmpty(ctx, name); e != nil {
				return nil, e
			}
		}
		res, err := s.commit(ctx, &txn{
			cmps: []cmp{{key: zoneKey(name), modRev: cur.modRev}, {key: servicePrefix(name), empty: true}, {key: policyPrefix(name), empty: true}},
			dels: []string{zoneKey(name), markerKey(name), policyMarkerKey(name)},
		})
		if err != nil {
			return nil, s.internal(err)
		}
		if res.ok {
			return deletedObject(res, zoneKey(name))
		}
		if e := s.zoneEmpty(ctx, name); e != nil {
			return nil, e
		}
	}
	return nil, conflict("zone %s kept changing while it was deleted; try again", name)
}

// zoneEmpty is the conflict of deleting zone name while it has services
// or policies, nil when it has none.
func (s *Store) zoneEmpty(ctx context.Context, name string) error {
	kvs, _, _, err := s.b.rangeKeys(ctx, servicePrefix(name), "", 1, 0)
	if err != nil {
		return s.internal(err)
	}
	if len(kvs) > 0 {
		return conflict("zone %s still has services (%s, …): delete them first, then the zone", name, strings.TrimPrefix(kvs[0].key, servicePrefix(name)))
	}
	if kvs, _, _, err = s.b.rangeKeys(ctx, policyPrefix(name), "", 1, 0); err != nil {
		return s.internal(err)
	}
	if len(kvs) > 0 {
		return conflict("zone %s still has policies (%s, …): delete them first, then the zone", name, strings.TrimPrefix(kvs[0].key, policyPrefix(name)))
	}
	return nil
}

func deletedObject(res txnResult, key string) (*Object, error) {
	prev, ok := res.prev[key]
	if !ok {
		return nil, notFound("%s was deleted meanwhile", key)
	}
	if res.rev != 0 { // else a dry run: the object as it is
		prev.modRev = res.rev
	}
	return decode(prev)
}

// DeleteService deletes a service; ifRV, when not "", is a precondition.
func (s *Store) DeleteService(ctx context.Context, zone, svc, ifRV string) (*Object, error) {
	z, name, err := serviceName(zone, svc)
	if err != nil {
		return nil, err
	}
	want, err := precondition(deletePrecondition, ifRV)
	if err != nil {
		return nil, err
	}
	key := serviceKey(z, name)
	for range maxRetries {
		cur, err := s.getKey(ctx, key, "")
		if err != nil {
			return nil, err
		}
		if cur == nil {
			return nil, notFound("service %s of zone %s not found", name, z)
		}
		if e := checkPrecondition(cur, want, "service "+name+" of zone "+z); e != nil {
			return nil, e
		}
		res, err := s.commit(ctx, &txn{
			cmps: []cmp{{key: key, modRev: cur.modRev}, {key: zoneKey(z), modRev: -1}},
			dels: []string{key},
			puts: []kvPut{{markerKey(z), s.writtenAt()}},
		})
		if err != nil {
			return nil, s.internal(err)
		}
		if res.ok {
			return deletedObject(res, key)
		}
	}
	return nil, conflict("service %s of zone %s kept changing while it was deleted; try again", name, z)
}

// ListOptions are the parameters of a list, as Kubernetes names them.
type ListOptions struct {
	Limit                int64
	Continue             string
	ResourceVersion      string
	ResourceVersionMatch string
	// Match, when set, selects the objects listed (label and field
	// selectors): Limit counts the objects selected, and a continue
	// token resumes after the last one returned, at the same revision.
	Match func(*Object) bool
}

// The values of ResourceVersionMatch.
const (
	MatchNotOlderThan = "NotOlderThan"
	MatchExact        = "Exact"
)

// readPlan is how a list is read: at a revision (0 the latest,
// consistently; -1 any recent one), at least min, from a key on.
type readPlan struct {
	at, min int64
	from    string
}

// plan applies the rules of "Consistent Resource Version Semantics for
// List" (Kubernetes KEP 1904) to a list's options.
func (s *Store) plan(ctx context.Context, o ListOptions, prefix string) (readPlan, error) {
	if o.Limit < 0 {
		return readPlan{}, badRequest("limit %d is negative: give a number of items, or 0 for all", o.Limit)
	}
	switch o.ResourceVersionMatch {
	case "", MatchNotOlderThan, MatchExact:
	default:
		return readPlan{}, badRequest("resourceVersionMatch %q is not supported: use NotOlderThan or Exact", o.ResourceVersionMatch)
	}
	if o.Continue != "" {
		return continuePlan(o, prefix)
	}
	if o.ResourceVersion == "" {
		if o.ResourceVersionMatch != "" {
			return readPlan{}, badRequest("resourceVersionMatch is forbidden unless resourceVersion is provided")
		}
		return readPlan{at: 0}, nil
	}
	rv, err := ParseRV(o.ResourceVersion)
	if err != nil {
		return readPlan{}, err
	}
	return s.versionPlan(ctx, o, rv)
}

// continuePlan is the plan of the next page of a list, which its continue
// token says alone.
func continuePlan(o ListOptions, prefix string) (readPlan, error) {
	if o.ResourceVersion != "" {
		return readPlan{}, badRequest("specifying resourceVersion is not allowed when using continue: the continue token holds the version of the list")
	}
	if o.ResourceVersionMatch != "" {
		return readPlan{}, badRequest("resourceVersionMatch is forbidden when continue is provided: the continue token holds the version of the list")
	}
	rv, start, err := decodeContinue(o.Continue, prefix)
	if err != nil {
		return readPlan{}, err
	}
	return readPlan{at: rv, from: start}, nil
}

// versionPlan is the plan of a list at resourceVersion rv, as its
// resourceVersionMatch says or, without one, the legacy rules.
func (s *Store) versionPlan(ctx context.Context, o ListOptions, rv int64) (readPlan, error) {
	match := o.ResourceVersionMatch
	if match == "" { // the legacy rules
		switch {
		case rv == 0:
			return readPlan{at: -1}, nil
		case o.Limit == 0:
			match = MatchNotOlderThan
		default:
			match = MatchExact
		}
	}
	if match == MatchExact {
		if rv == 0 {
			return readPlan{}, badRequest("resourceVersionMatch Exact is forbidden for resourceVersion 0: no data is at version 0; use NotOlderThan for any version")
		}
		if err := s.waitFor(ctx, rv); err != nil {
			return readPlan{}, err
		}
		return readPlan{at: rv}, nil
	}
	if rv > 0 {
		if err := s.waitFor(ctx, rv); err != nil {
			return readPlan{}, err
		}
	}
	return readPlan{at: -1, min: rv}, nil
}

type continueToken struct {
	RV    int64  `json:"rv"`
	Start string `json:"start"`
}

func encodeContinue(rv int64, start string) string {
	b, _ := json.Marshal(continueToken{rv, start})
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeContinue(s, prefix string) (int64, string, error) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	var t continueToken
	if err == nil {
		err = json.Unmarshal(b, &t)
	}
	if err != nil || t.RV <= 0 || !strings.HasPrefix(t.Start, prefix) {
		return 0, "", badRequest("continue %q is not a continue token of this list: pass metadata.continue of the previous page unchanged", s)
	}
	return t.RV, t.Start, nil
}

// ListZones lists zones.
func (s *Store) ListZones(ctx context.Context, o ListOptions) (*List, error) {
	return s.list(ctx, "z/", o)
}

// ListServices lists the services of a zone.
func (s *Store) ListServices(ctx context.Context, zone string, o ListOptions) (*List, error) {
	z, err := zoneName(zone)
	if err != nil {
		return nil, err
	}
	return s.list(ctx, servicePrefix(z), o)
}

func (s *Store) list(ctx context.Context, prefix string, o ListOptions) (*List, error) {
	p, err := s.plan(ctx, o, prefix)
	if err != nil {
		return nil, err
	}
	limit := int(o.Limit)
	if o.Match != nil {
		limit = 0 // every object from the start, filtered below
	}
	kvs, more, read, err := s.b.rangeKeys(ctx, prefix, p.from, limit, p.at)
	if err == nil && read < p.min {
		kvs, more, read, err = s.b.rangeKeys(ctx, prefix, p.from, limit, 0)
	}
	switch {
	case errors.Is(err, errCompacted) && o.Continue != "":
		return nil, gone("The provided continue parameter is too old to display a consistent list result (version %d was compacted). You can start a new list without the continue parameter.", p.at)
	case errors.Is(err, errCompacted):
		return nil, gone("too old resource version: %d was compacted (the store keeps the last --history versions); list without resourceVersion, or with NotOlderThan", p.at)
	case errors.Is(err, errFuture):
		return nil, errorf(http.StatusGatewayTimeout, ReasonTimeout, "Too large resource version: %d", p.at)
	case err != nil:
		return nil, s.internal(err)
	}
	out := &List{APIVersion: APIVersion, Kind: kindOf(prefix) + "List", Metadata: ListMeta{ResourceVersion: FormatRV(read)}, Items: make([]*Object, len(kvs))}
	objs := make([]Object, len(kvs))
	for i, k := range kvs {
		if err := decodeInto(&objs[i], k); err != nil {
			return nil, s.internal(err)
		}
		out.Items[i] = &objs[i]
	}
	if o.Match != nil {
		n := 0
		for i, obj := range out.Items {
			if !o.Match(obj) {
				continue
			}
			if o.Limit > 0 && n == int(o.Limit) {
				more, kvs = true, kvs[:i]
				break
			}
			out.Items[n] = obj
			n++
			kvs[n-1] = kvs[i] // the key of the last one kept, for continue
		}
		out.Items = out.Items[:n]
		if !more {
			kvs = nil
		} else {
			kvs = kvs[:n]
		}
	}
	if more && len(kvs) > 0 {
		out.Metadata.Continue = encodeContinue(read, kvs[len(kvs)-1].key+"\x00")
	}
	return out, nil
}

// Ping checks that the store answers (a consistent read on etcd).
func (s *Store) Ping(ctx context.Context) error {
	_, err := s.b.rev(ctx)
	return err
}

// Revision returns the latest revision.
func (s *Store) Revision(ctx context.Context) (int64, error) { return s.b.rev(ctx) }

// SerialBase is the number the store adds to revisions to make SOA
// serials (fixed when the store was created; see package dnspub).
func (s *Store) SerialBase(ctx context.Context) (uint32, error) { return s.b.serialBase(ctx) }

// Compact forgets the revisions older than the history window now (the
// store also does so as it goes); revisions before rev are forgotten
// when rev > 0, whatever the window.
func (s *Store) Compact(ctx context.Context, rev int64) error {
	if rev <= 0 {
		cur, err := s.b.rev(ctx)
		if err != nil {
			return err
		}
		rev = cur - s.opts.History
	}
	if rev <= 0 {
		return nil
	}
	return s.b.compactTo(ctx, rev)
}

// TouchZone makes a new revision of zone that changes nothing but its
// marker: the SOA serial every publisher derives from the store moves, so
// that signatures made again (a signed zone's refresh) are published
// under a serial of the store's, the same on every replica and after a
// restart.
func (s *Store) TouchZone(ctx context.Context, zone string) error {
	name, err := zoneName(zone)
	if err != nil {
		return err
	}
	res, err := s.b.txn(ctx, &txn{cmps: []cmp{{key: zoneKey(name), modRev: -1}}, puts: []kvPut{{markerKey(name), s.writtenAt()}}})
	if err != nil {
		return s.internal(err)
	}
	if !res.ok {
		return notFound("zone %s not found", name)
	}
	return nil
}
