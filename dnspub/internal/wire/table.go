package wire

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/miekg/dns"

	"github.com/grpc-config-dns/grpc-config-dns/dnspub/internal/cow"
	"github.com/grpc-config-dns/grpc-config-dns/dnspub/zone"
)

// Options tune a Table.
type Options struct {
	// MaxUDPSize caps the EDNS buffer size a client may ask for; answers
	// larger than the result are truncated. 0 means 1232.
	MaxUDPSize int
}

// DefaultMaxUDPSize is the EDNS buffer cap of DNS flag day 2020.
const DefaultMaxUDPSize = 1232

// Table holds the precomputed answers of a set of zones (but those of a
// zone SetZoneLater left for later, built for each query until
// Complete). It is immutable and safe for concurrent use; Edit makes the
// next version, which shares every answer it does not rebuild.
type Table struct {
	// nodes maps lower-case wire-format names to their answers; empty
	// non-terminals are nodes too, so that they answer NODATA (RFC 8020).
	nodes cow.Map[*node]
	// zones maps lower-case wire-format origins to their zones.
	zones map[string]*zoneInfo
	// few lists the zones when there are at most maxFewZones, for zone:
	// a publisher usually has one, and comparing with it costs a tenth of
	// hashing the name for the map (BenchmarkRespond). nil when there are
	// more, or the table was not made by newTable: zones is looked in.
	few    []zoneRef
	maxUDP int
	// deferred is set when a zone's answers are built for each query
	// (zoneInfo.later).
	deferred bool
}

// maxFewZones is the most zones Table.few lists: past it, the map's one
// hash beats comparing the name with each origin.
const maxFewZones = 4

type zoneRef struct {
	key string // the origin, lower-case wire format
	zi  *zoneInfo
}

// zone returns the zone whose origin is key (lower-case wire format), or
// nil.
func (t *Table) zone(key []byte) *zoneInfo {
	if t.few == nil {
		return t.zones[string(key)]
	}
	for i := range t.few {
		if t.few[i].key == string(key) {
			return t.few[i].zi
		}
	}
	return nil
}

type zoneInfo struct {
	origin string
	// nxSOA is the zone's SOA record without its owner name (type, class,
	// TTL = negative TTL, RDLENGTH, uncompressed RDATA); a negative answer
	// prefixes it with a pointer to the zone's name inside the question.
	// It is the only part of the table that a new serial changes, besides
	// the apex's answers: NODATA and NXDOMAIN answers are assembled with it
	// per query, so that a change of one service does not rebuild every
	// name's NODATA answer.
	nxSOA []byte
	// later, for a zone SetZoneLater put in the table, holds what its
	// answers are built from until Complete builds them all; nil once
	// they are in the table.
	later *laterZone
	// sec is what a signed zone's negative answers to DO queries carry;
	// nil for an unsigned zone.
	sec *securedZone
}

// answer is the answer to one record type at a name: a complete
// response message with ID 0, RD and CD clear, and the question in lower
// case. A table of 100 000 services holds 200 000, so the node holds its
// answers by value and the answer without its additional section is a
// prefix of the full one.
type answer struct {
	qtype uint16
	// minLen is the length of full without its additional section (the
	// sections before it are packed the same, as compression only points
	// back), used when full does not fit; 0 when there is none.
	minLen uint16
	// full is the response without its question section: the header,
	// then the answer, authority and additional sections, packed as they
	// follow the question. A response copies the client's question (its
	// letters' case) in between, so keeping ours would only cost memory:
	// 25-40 bytes an answer, 6 MB for a fleet of 100 000 services. It is
	// a string, not a slice: 8 bytes less for each of them.
	full string
}

// len is the length of the response to a question of qlen bytes.
func (a *answer) len(qlen int) int { return len(a.full) + qlen }

type node struct {
	// apex is the offset of the zone's origin in the node's name, whose
	// zone answers NODATA.
	apex uint8
	// answers holds the answer to each record type the name has, by
	// ascending type. A name has a handful of types at most, so a scan
	// beats a map. ANY is answered with the first, without its additional
	// section: one RRset, the one of the lowest type (RFC 8482 §4.1).
	answers []answer
	// sec holds the answers to DO queries at a name of a signed zone.
	sec *securedNode
}

// lookup returns the answer to qtype, and whether to leave out its
// additional section; nil for NODATA.
func (n *node) lookup(qtype uint16) (*answer, bool) {
	i, minimal := n.index(qtype)
	if i < 0 {
		return nil, false
	}
	return &n.answers[i], minimal
}

// index is lookup's: the index of the answer in n.answers, or -1.
func (n *node) index(qtype uint16) (int, bool) {
	if qtype == typeANY {
		if len(n.answers) == 0 {
			return -1, false
		}
		return 0, true
	}
	for i := range n.answers {
		if n.answers[i].qtype == qtype {
			return i, false
		}
	}
	return -1, false
}

// New returns an empty table.
func New(opts Options) (*Table, error) {
	e := (&Table{zones: map[string]*zoneInfo{}}).Edit()
	if err := e.SetMaxUDPSize(opts.MaxUDPSize); err != nil {
		return nil, err
	}
	return e.Table(), nil
}

// Build precomputes the answers of zones. Zones must not nest.
func Build(zones []*zone.Zone, opts Options) (*Table, error) {
	t, err := New(opts)
	if err != nil {
		return nil, err
	}
	e := t.Edit()
	for _, z := range zones {
		if err := e.SetZone(z, nil); err != nil {
			return nil, err
		}
	}
	return e.Table(), nil
}

// Editor builds the next version of a Table.
type Editor struct {
	nodes  *cow.Editor[*node]
	zones  map[string]*zoneInfo
	maxUDP int
	// workers bounds the goroutines that build answers; 0 is GOMAXPROCS.
	workers int
	// laterAbove and compactAbove are the thresholds of SetZoneLater and
	// of compacting nodes (defaultLaterAbove, defaultCompactAbove): fields,
	// so that a test can build small zones the way large ones are built.
	laterAbove, compactAbove int
}

// procs is how many goroutines build answers at once.
func (e *Editor) procs() int {
	if e.workers > 0 {
		return e.workers
	}
	return runtime.GOMAXPROCS(0)
}

// Edit starts the next version of t.
func (t *Table) Edit() *Editor {
	return &Editor{nodes: t.nodes.Edit(), zones: maps.Clone(t.zones), maxUDP: t.maxUDP,
		laterAbove: defaultLaterAbove, compactAbove: defaultCompactAbove}
}

// SetZone puts version z of a zone in the table. ch is what zone.Update
// changed to make z from the version the table holds: the answers of its
// Owners are built again, and those of the apex (the SOA changes with
// every version); names that left the zone are removed. A nil ch, or the
// change of a zone built from nothing, builds every name of z: for a zone
// the table holds (but answers left for later), after RemoveZone.
//
// When the table left the zone's answers for later (SetZoneLater), those
// ch changed are built now, and the others stay left for later, built
// from z: they are z's too. A write right after a first start is so
// served without first building the answers of 100 000 names.
func (e *Editor) SetZone(z *zone.Zone, ch *zone.Change) error {
	originKey, zi, err := zoneInfoOf(z)
	if err != nil {
		return err
	}
	old := e.zones[originKey]
	if old != nil && old.later == nil && ch.FromNothing() {
		// Its names would be put over the old version's, and those that
		// left the zone would stay: answers of names that are gone.
		return fmt.Errorf("wire: zone %s is in the table already: a version built from nothing replaces it after RemoveZone", z.Origin)
	}
	keepLater := old != nil && old.later != nil && !ch.FromNothing()
	if keepLater && z.Signed() {
		// Signed answers are built at once (SetZoneLater): the version
		// left for later is built first, then edited.
		if err := e.SetZone(old.later.z, old.later.ch); err != nil {
			return err
		}
		keepLater = false
	}
	e.zones[originKey] = zi
	var out []built
	if ch.FromNothing() {
		out, err = buildAll(z, ch, originKey, e.procs())
	} else {
		out, err = buildNames(z, ch.Owners, originKey, e.procs())
	}
	if err != nil {
		return err
	}
	if len(out) >= e.compactAbove {
		compactNodes(out)
	}
	if keepLater {
		// Every answer of the version left for later builds
		// (SetZoneLater), and those ch changed built now: every answer
		// of z builds. Complete builds them all from z (no change from
		// nothing makes it).
		l := &laterZone{z: z, key: originKey, edited: slices.Clip(old.later.edited)}
		for _, b := range out {
			if b.key == originKey {
				l.apex = b.nd
			}
			l.edited = append(l.edited, b.key)
		}
		zi.later = l
	}
	if e.nodes.Len() == 0 {
		// The first zone of a new table: a map sized for its nodes.
		e.nodes = cow.NewEditor[*node](len(out))
	}
	for _, b := range out {
		if b.nd == nil {
			e.nodes.Delete(b.key)
		} else {
			e.nodes.Set(b.key, b.nd)
		}
	}
	return nil
}

// zoneInfo makes the zoneInfo of z.
func zoneInfoOf(z *zone.Zone) (string, *zoneInfo, error) {
	originKey, err := wireName(z.Origin)
	if err != nil {
		return "", nil, err
	}
	neg := *z.SOA
	neg.Hdr.Ttl = z.NegativeTTL()
	buf := make([]byte, dns.Len(&neg)+16)
	n, err := dns.PackRR(&neg, buf, 0, nil, false)
	if err != nil {
		return "", nil, fmt.Errorf("wire: zone %s: SOA: %v", z.Origin, err)
	}
	zi := &zoneInfo{origin: z.Origin, nxSOA: buf[len(originKey):n:n]}
	if z.Signed() {
		if err := secureZoneInfo(zi, z, originKey); err != nil {
			return "", nil, err
		}
	}
	return originKey, zi, nil
}

// SetZoneLater is SetZone for a new zone that the table is to answer for
// at once: when z was built from nothing, is new to the table and large,
// and no answer of it can fail to build (zone.Change.AnswerBound), only
// its apex is built now; the answers of its other names are built for
// each query from z, until Complete builds them all. They are the same
// bytes either way (buildNode). A first start of 100 000 services so
// answers a tenth of a second sooner. Otherwise it is SetZone.
func (e *Editor) SetZoneLater(z *zone.Zone, ch *zone.Change) error {
	originKey, err := wireName(z.Origin)
	if err != nil {
		return err
	}
	bound, ok := ch.AnswerBound()
	if !ok || z.Signed() || z.Len() < e.laterAbove || e.zones[originKey] != nil ||
		headerLen+maxQuestionLen+bound+optRRLen > MaxTCPSize {
		return e.SetZone(z, ch)
	}
	_, zi, err := zoneInfoOf(z)
	if err != nil {
		return err
	}
	_, apex, err := buildNode(z, z.Origin, z.RecordsAt(z.Origin), originKey)
	if err != nil {
		return err
	}
	zi.later = &laterZone{z: z, ch: ch, key: originKey, apex: apex}
	e.zones[originKey] = zi
	return nil
}

// defaultLaterAbove is the number of records past which SetZoneLater
// leaves a zone's answers for later: below it, building them all takes
// less than a few milliseconds.
const defaultLaterAbove = 4096

// maxQuestionLen is the longest question section: a name of 255 bytes,
// its type and class.
const maxQuestionLen = 255 + 4

// laterZone is what the answers of a zone left for later are built from.
type laterZone struct {
	z    *zone.Zone
	ch   *zone.Change
	key  string // the origin, lower-case wire format
	apex *node
	// edited are the names (lower-case wire format) whose answers edits
	// built since the zone was left for later (SetZone): Rebase takes
	// them from the edited table.
	edited []string
}

// node builds the node of key (lower-case wire format), whose zone's
// origin starts at offset apex: nil when the zone has no such name.
func (l *laterZone) node(key []byte, apex int) (*node, error) {
	if apex == 0 {
		return l.apex, nil
	}
	name, ok := nameOf(key)
	if !ok || !l.z.Exists(name) {
		return nil, nil
	}
	_, nd, err := buildNode(l.z, name, l.z.RecordsAt(name), l.key)
	return nd, err
}

// nameOf is the name whose wireName is key (a valid name in lower-case
// wire format), written as miekg/dns writes it.
func nameOf(key []byte) (string, bool) {
	name, _, err := dns.UnpackDomainName(key, 0)
	return name, err == nil
}

// Deferred reports whether answers of t are left for later
// (SetZoneLater): they are built for each query until Complete.
func (t *Table) Deferred() bool { return t.deferred }

// Complete returns t with every answer left for later built, by at most
// workers goroutines (0: GOMAXPROCS): t itself when there is none. The
// answers are the ones t gives.
func (t *Table) Complete(workers int) (*Table, error) {
	if !t.deferred {
		return t, nil
	}
	e := t.Edit()
	e.workers = workers
	if len(t.zones) == 1 {
		// Every node is the zone's, built again: into a map of its own,
		// sized for them (SetZone), though edits put some in the table's.
		e.nodes = cow.NewEditor[*node](0)
	}
	for _, zi := range t.zones {
		if l := zi.later; l != nil {
			if err := e.SetZone(l.z, l.ch); err != nil {
				return nil, err
			}
		}
	}
	return e.Table(), nil
}

// Rebase returns done, the completion (Complete) of from, an earlier
// version of t, brought to t: when t differs from from only by edits of
// zones left for later (SetZone keeps them so), the answers those edits
// built are t's, and the others done's, which are t's too (an edit
// builds every answer it changes). A completion built while versions
// are published so serves the last of them without being built again.
// ok is false when t differs otherwise (a zone added, removed, or built
// at once): complete t itself.
func (t *Table) Rebase(from, done *Table) (*Table, bool) {
	if len(t.zones) != len(from.zones) || len(done.zones) != len(from.zones) {
		return nil, false
	}
	e := done.Edit()
	e.maxUDP = t.maxUDP
	for key, zi := range t.zones {
		was, ok := from.zones[key]
		switch {
		case !ok || done.zones[key] == nil:
			return nil, false
		case zi == was:
			continue // done's
		case zi.later == nil || was.later == nil:
			return nil, false
		}
		for _, k := range zi.later.edited {
			if nd, ok := t.nodes.Get(k); ok {
				e.nodes.Set(k, nd)
			} else {
				e.nodes.Delete(k)
			}
		}
		built := *zi
		built.later = nil
		e.zones[key] = &built
	}
	return e.Table(), true
}

// buildAll builds the node of every name of z, in parallel for a large
// zone (a new zone of 100 000 services has 200 000 names); made is the
// change that built z, if it was built from nothing (see zone.Zone.EachName).
func buildAll(z *zone.Zone, made *zone.Change, originKey string, procs int) ([]built, error) {
	workers := 1
	if z.Len() >= 1024 {
		workers = procs
	}
	outs := make([][]built, workers)
	errs := make([]error, workers)
	z.EachName(workers, made, func(w int, name string, rrs []dns.RR) {
		if errs[w] != nil {
			return
		}
		var b built
		if b.key, b.nd, errs[w] = buildNode(z, name, rrs, originKey); errs[w] == nil {
			outs[w] = append(outs[w], b)
		}
	})
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return slices.Concat(outs...), nil
}

// buildNames builds the nodes of names (which may no longer be in z), in
// parallel when they are many.
func buildNames(z *zone.Zone, names []string, originKey string, procs int) ([]built, error) {
	if !slices.Contains(names, z.Origin) {
		names = append(slices.Clip(names), z.Origin)
	}
	out := make([]built, len(names))
	errs := make([]error, len(names))
	workers := 1
	if len(names) >= 1024 {
		workers = procs
	}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := w; i < len(names); i += workers {
				if z.Exists(names[i]) {
					out[i].key, out[i].nd, errs[i] = buildNode(z, names[i], z.RecordsAt(names[i]), originKey)
				} else {
					out[i].key, errs[i] = wireName(names[i])
				}
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// built is a name's node as SetZone builds it.
type built struct {
	key string
	nd  *node // nil: the name is no longer in the zone
}

// compactNodes moves the nodes of a large build (their keys, nodes,
// answers and answers' bytes) into a few large allocations: made among the
// packer's garbage, their pages would stay the process's long after it is
// collected (a zone of 100 000 services leaves 10 MB so). A large
// allocation lives while any node in it does: names rebuilt one by one
// leave their old answers in use until the last node built with them is
// rebuilt too.
func compactNodes(out []built) {
	var nodes, answers, size int
	for i := range out {
		key, nd := &out[i].key, &out[i].nd
		size += len(*key)
		if *nd == nil {
			continue
		}
		nodes++
		answers += len((*nd).answers)
		for _, a := range (*nd).answers {
			size += len(a.full)
		}
	}
	var text strings.Builder
	text.Grow(size)
	for i := range out {
		key, nd := &out[i].key, &out[i].nd
		text.WriteString(*key)
		if *nd != nil {
			for _, a := range (*nd).answers {
				text.WriteString(a.full)
			}
		}
	}
	all := text.String()
	ns := make([]node, nodes)
	as := make([]answer, answers)
	for i := range out {
		key, nd := &out[i].key, &out[i].nd
		*key, all = all[:len(*key)], all[len(*key):]
		if *nd == nil {
			continue
		}
		n := &ns[0]
		ns = ns[1:]
		*n = **nd
		n.answers, as = as[:len(n.answers):len(n.answers)], as[len(n.answers):]
		for j, a := range (*nd).answers {
			a.full, all = all[:len(a.full)], all[len(a.full):]
			n.answers[j] = a
		}
		*nd = n
	}
}

// defaultCompactAbove is the number of names built at once past which
// their nodes are compacted into shared allocations.
const defaultCompactAbove = 256

// RemoveZone takes z, a version of a zone the table holds, out of it.
func (e *Editor) RemoveZone(z *zone.Zone) {
	for _, name := range z.Names() {
		if key, err := wireName(name); err == nil {
			e.nodes.Delete(key)
		}
	}
	if key, err := wireName(z.Origin); err == nil {
		delete(e.zones, key)
	}
}

// SetMaxUDPSize changes the EDNS buffer cap (Options.MaxUDPSize).
func (e *Editor) SetMaxUDPSize(n int) error {
	if n == 0 {
		n = DefaultMaxUDPSize
	}
	if n < MinUDPSize || n > MaxTCPSize {
		return fmt.Errorf("wire: MaxUDPSize %d is outside %d..%d", n, MinUDPSize, MaxTCPSize)
	}
	e.maxUDP = n
	return nil
}

// Table returns the version built. The Editor must not be used afterwards.
func (e *Editor) Table() *Table {
	return newTable(e.nodes.Map(), e.zones, e.maxUDP)
}

// newTable is the table of nodes and zones, with the list of the zones
// when they are few.
func newTable(nodes cow.Map[*node], zones map[string]*zoneInfo, maxUDP int) *Table {
	t := &Table{nodes: nodes, zones: zones, maxUDP: maxUDP}
	for _, zi := range zones {
		t.deferred = t.deferred || zi.later != nil
	}
	if len(zones) <= maxFewZones {
		t.few = make([]zoneRef, 0, len(zones))
		for key, zi := range zones {
			t.few = append(t.few, zoneRef{key, zi})
		}
	}
	return t
}

func wireName(name string) (string, error) {
	var buf [256]byte // on the stack: a zone's every name passes here
	n, err := dns.PackDomainName(dns.CanonicalName(name), buf[:], 0, nil, false)
	if err != nil {
		return "", fmt.Errorf("wire: name %q: %v", name, err)
	}
	return string(buf[:n]), nil
}

// buildNode makes the answers of name, whose records in z are rrs: its key
// in the table, and its node. It only reads z (for glue).
func buildNode(z *zone.Zone, name string, rrs []dns.RR, originKey string) (string, *node, error) {
	key, err := wireName(name)
	if err != nil {
		return "", nil, err
	}
	nd := &node{apex: uint8(len(key) - len(originKey))}
	var sigs map[uint16][]dns.RR
	if z.Signed() {
		rrs, sigs = splitSigned(rrs)
	}
	// rrs are canonical: grouped by type, ascending.
	for i := 0; i < len(rrs); {
		typ := rrs[i].Header().Rrtype
		j := i
		for j < len(rrs) && rrs[j].Header().Rrtype == typ {
			j++
		}
		set := rrs[i:j:j]
		i = j
		a, err := packAnswer(name, typ, set, glueOf(z, set))
		if err != nil {
			return "", nil, err
		}
		nd.answers = append(nd.answers, a)
	}
	if sigs != nil {
		if err := secureNode(z, nd, name, sigs); err != nil {
			return "", nil, err
		}
	}
	nd.answers = slices.Clip(nd.answers)
	return key, nd, nil
}

// glueOf returns the addresses, in z, of the hosts set names: the
// additional section of an answer with set.
func glueOf(z *zone.Zone, set []dns.RR) []dns.RR {
	var glue []dns.RR
	for _, rr := range set {
		if host, ok := zone.AdditionalTarget(rr); ok {
			for _, t := range [...]uint16{dns.TypeA, dns.TypeAAAA} {
				for _, a := range z.RecordsAt(host) {
					if a.Header().Rrtype == t {
						glue = append(glue, a)
					}
				}
			}
		}
	}
	return glue
}

func packAnswer(name string, qtype uint16, set, extra []dns.RR) (answer, error) {
	if len(extra) == 0 {
		if a, ok := packPlain(name, qtype, set); ok {
			return a, nil
		}
	}
	return packMsg(name, qtype, set, extra)
}

// packMsg is packAnswer with miekg/dns, for every answer.
func packMsg(name string, qtype uint16, set, extra []dns.RR) (answer, error) {
	m := &dns.Msg{Compress: true}
	m.Response = true
	m.Authoritative = true
	m.Question = []dns.Question{{Name: name, Qtype: qtype, Qclass: dns.ClassINET}}
	m.Answer, m.Extra = set, extra
	full, err := m.Pack()
	if err != nil {
		return answer{}, fmt.Errorf("wire: %s %s: %v", name, dns.TypeToString[qtype], err)
	}
	if len(full)+optRRLen > MaxTCPSize {
		// Sized as an EDNS client gets it: one that fits only without the
		// OPT record would reach such clients as TC=1 over TCP.
		return answer{}, fmt.Errorf("wire: the %s answer at %s is %d bytes with the OPT record, more than a DNS message holds", dns.TypeToString[qtype], name, len(full)+optRRLen)
	}
	// The question is the only one, right after the header, and its name
	// the first of the message: labels, never a pointer.
	qEnd := headerLen
	for qEnd < len(full) && full[qEnd] != 0 && full[qEnd] < 0x40 {
		qEnd += int(full[qEnd]) + 1
	}
	if qEnd += 1 + 4; qEnd > len(full) || full[qEnd-5] != 0 {
		return answer{}, fmt.Errorf("wire: %s %s: the question does not end where expected", name, dns.TypeToString[qtype])
	}
	// Pack sizes its buffer for the message uncompressed: keep only what
	// the message uses, a zone's answers are most of the server's memory.
	a := answer{qtype: qtype, full: string(full[:headerLen]) + string(full[qEnd:])}
	if len(extra) > 0 {
		m.Extra = nil
		minimal, err := m.Pack()
		if err != nil {
			return answer{}, err
		}
		// The same message up to the additional section, but its count.
		if len(minimal) < qEnd || string(minimal[:10]) != string(full[:10]) || !bytes.HasPrefix(full[qEnd:], minimal[qEnd:]) {
			return answer{}, fmt.Errorf("wire: %s %s: the answer without its additional section is not a prefix of the full one", name, dns.TypeToString[qtype])
		}
		a.minLen = uint16(len(minimal) - (qEnd - headerLen))
	}
	return a, nil
}

// packPlain packs the answers most names have, as packAnswer packs them
// with miekg/dns, without its compression map and its parse of TXT
// strings: an RRset of A, AAAA or TXT records at the question's name,
// nothing else. After the header, each record's owner is a pointer to
// the question's name (the only name such a message holds) and its data
// holds no name. ok is false for any other set, and for TXT text that is
// not in the escaped form miekg/dns unpacks it to; packAnswer then packs it with
// miekg/dns (TestPackPlainEqualsPack holds the two to the same bytes).
func packPlain(name string, qtype uint16, set []dns.RR) (answer, bool) {
	if name == "." || len(set) == 0 || len(set) > 0xffff {
		return answer{}, false
	}
	var stack [512]byte // most answers fit; string(buf) copies them out
	buf := stack[:headerLen]
	clear(buf)
	buf[2] = 0x84 // QR, AA
	buf[5] = 1    // QDCOUNT
	buf[6], buf[7] = byte(len(set)>>8), byte(len(set))
	for _, rr := range set {
		h := rr.Header()
		if h.Name != name || h.Class != dns.ClassINET || h.Rrtype != qtype {
			return answer{}, false
		}
		buf = append(buf, 0xc0, headerLen, byte(h.Rrtype>>8), byte(h.Rrtype), byte(h.Class>>8), byte(h.Class),
			byte(h.Ttl>>24), byte(h.Ttl>>16), byte(h.Ttl>>8), byte(h.Ttl), 0, 0)
		start := len(buf)
		switch r := rr.(type) {
		case *dns.A:
			ip := r.A.To4()
			if ip == nil {
				return answer{}, false
			}
			buf = append(buf, ip...)
		case *dns.AAAA:
			if len(r.AAAA) != 16 {
				return answer{}, false
			}
			buf = append(buf, r.AAAA...)
		case *dns.TXT:
			for _, t := range r.Txt {
				var ok bool
				if buf, ok = appendTXTString(buf, t); !ok {
					return answer{}, false
				}
			}
		default:
			return answer{}, false
		}
		n := len(buf) - start
		if n > 0xffff {
			return answer{}, false
		}
		buf[start-2], buf[start-1] = byte(n>>8), byte(n)
	}
	// Sized as an EDNS client gets it, the question included (its name's
	// wire form is one byte longer than its text, plus type and class).
	if len(buf)+len(name)+1+4+optRRLen > MaxTCPSize {
		return answer{}, false // packAnswer says why
	}
	return answer{qtype: qtype, full: string(buf)}, true
}

// appendTXTString appends a TXT character-string, its length and its
// bytes, from the escaped form miekg/dns keeps it in: "\X" is X, "\DDD"
// the byte DDD. Text with any other backslash is not packed here.
func appendTXTString(buf []byte, s string) ([]byte, bool) {
	at := len(buf)
	buf = append(buf, 0)
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '\\' {
			switch {
			case i+1 == len(s):
				return buf, false
			case isDigit(s[i+1]):
				if i+3 >= len(s) || !isDigit(s[i+2]) || !isDigit(s[i+3]) {
					return buf, false
				}
				v := int(s[i+1]-'0')*100 + int(s[i+2]-'0')*10 + int(s[i+3]-'0')
				if v > 255 {
					return buf, false
				}
				c = byte(v)
				i += 3
			default:
				c = s[i+1]
				i++
			}
		}
		buf = append(buf, c)
	}
	n := len(buf) - at - 1
	if n > 255 {
		return buf, false
	}
	buf[at] = byte(n)
	return buf, true
}

func isDigit(b byte) bool { return b >= '0' && b <= '9' }

// MaxUDPSize is the EDNS buffer cap the table was built with.
func (t *Table) MaxUDPSize() int { return t.maxUDP }

// Action says what the caller does with a query after Respond.
type Action uint8

const (
	// Reply: send the response Respond returned.
	Reply Action = iota
	// Drop: send nothing (a runt or a response).
	Drop
	// Transfer: an AXFR or IXFR query; the caller runs the transfer.
	Transfer
	// Signed: the query carries TSIG; the caller verifies it, answers the
	// query without its TSIG record (Respond again) and signs the response.
	Signed
)

// Result describes the response Respond produced.
type Result struct {
	Action Action
	Query  Query
	// Rcode is the response code, extended (BADVERS is 16).
	Rcode int
	// Truncated is set when the answer did not fit and TC was set.
	Truncated bool
	// Zone is the origin of the zone that answered (as written in the
	// config), or "" when none did (REFUSED, malformed queries).
	Zone string
}

// Respond answers the query msg, appending the response to dst[:0]. tcp
// selects the size limit: 65535 over TCP, else the client's EDNS buffer
// size clamped to [512, MaxUDPSize], or 512 without EDNS. The response
// never exceeds that limit.
func (t *Table) Respond(dst, msg []byte, tcp bool) ([]byte, Result) {
	var r Result
	switch parse(msg, &r.Query) {
	case parseDrop:
		r.Action = Drop
		return dst[:0], r
	case parseNotImp:
		r.Rcode = RcodeNotImp
		return t.appendOPT(headerOnly(dst, msg, RcodeNotImp), &r.Query, RcodeNotImp), r
	case parseFormErr:
		r.Rcode = RcodeFormErr
		return t.appendOPT(headerOnly(dst, msg, RcodeFormErr), &r.Query, RcodeFormErr), r
	case parseFormErrQ:
		r.Rcode = RcodeFormErr
		return t.bare(dst, msg, &r.Query, RcodeFormErr, false), r
	}
	q := &r.Query
	if q.TSIG != 0 {
		r.Action = Signed
		return dst[:0], r
	}
	resp := t.answer(dst, msg, &r, tcp)
	return resp, r
}

// answer is Respond for a query parsed without error and unsigned; it
// fills in r, which Respond returns (one copy of it, not two).
func (t *Table) answer(dst, msg []byte, r *Result, tcp bool) []byte {
	q := &r.Query
	if q.EDNS && q.Version > 0 {
		r.Rcode = RcodeBadVers
		return t.bare(dst, msg, q, RcodeBadVers, false)
	}
	switch {
	case q.QType == typeOPT || q.QType == typeTSIG:
		r.Rcode = RcodeFormErr
		return t.bare(dst, msg, q, RcodeFormErr, false)
	case q.QClass != classINET:
		// Transfers too: the question names the zone's class (RFC 5936
		// §2.1.2), and we serve IN only.
		r.Rcode = RcodeRefused
		return t.bare(dst, msg, q, RcodeRefused, false)
	case q.QType == typeAXFR || q.QType == typeIXFR:
		r.Action = Transfer
		return dst[:0]
	case q.QType >= 128 && q.QType < typeANY:
		// Other meta types (TKEY, MAILB, MAILA): not implemented.
		r.Rcode = RcodeNotImp
		return t.bare(dst, msg, q, RcodeNotImp, false)
	}
	limit := MaxTCPSize
	if !tcp {
		limit = MinUDPSize
		if q.EDNS {
			limit = min(max(int(q.UDPSize), MinUDPSize), t.maxUDP)
		}
	}

	// The question name in lower case is the lookup key; its labels keep
	// their lengths, so offsets into it are offsets into the question.
	var keyBuf [255]byte
	key := keyBuf[:q.QNameEnd-headerLen]
	lowerName(key, msg[headerLen:q.QNameEnd])
	if nd, ok := t.nodes.GetBytes(key); ok {
		return t.fromNode(dst, msg, r, nd, t.zone(key[nd.apex:]), key, limit)
	}
	// Not a name we hold: NXDOMAIN in the closest enclosing zone, or
	// REFUSED when we are not authoritative (labels scanned left to right
	// find the longest zone first).
	for i := 0; i < len(key); i += int(key[i]) + 1 {
		if zi := t.zone(key[i:]); zi != nil {
			if zi.later != nil {
				// A name of a zone whose answers are left for later.
				nd, err := zi.later.node(key, i)
				if err != nil {
					// SetZoneLater defers only zones whose every answer
					// builds: a bug guard.
					r.Zone, r.Rcode = zi.origin, RcodeServFail
					return t.bare(dst, msg, q, RcodeServFail, true)
				}
				if nd != nil {
					return t.fromNode(dst, msg, r, nd, zi, key, limit)
				}
			}
			r.Zone = zi.origin
			r.Rcode = RcodeNXDomain
			if q.DO && zi.sec != nil {
				resp, trunc := t.negativeSigned(dst, msg, q, zi, nil, key, i, RcodeNXDomain, limit)
				r.Truncated = trunc
				return resp
			}
			resp, trunc := t.negative(dst, msg, q, zi, i, RcodeNXDomain, limit)
			r.Truncated = trunc
			return resp
		}
	}
	r.Rcode = RcodeRefused
	return t.bare(dst, msg, q, RcodeRefused, false)
}

// fromNode answers r's question, at a name of zone zi whose node is nd.
func (t *Table) fromNode(dst, msg []byte, r *Result, nd *node, zi *zoneInfo, key []byte, limit int) []byte {
	q := &r.Query
	if zi != nil {
		r.Zone = zi.origin
	}
	if nd.sec != nil && q.QType == dns.TypeRRSIG {
		// Asked for by type, signatures are an answer, DO or not.
		if resp, trunc, ok := t.allSigs(dst, msg, q, nd, limit); ok {
			r.Truncated = trunc
			return resp
		}
	} else if q.DO && nd.sec != nil {
		if i, minimal := nd.index(q.QType); i >= 0 {
			resp, trunc := t.fromSigned(dst, msg, q, &nd.answers[i], nd.sec.sigs[i], minimal, limit)
			r.Truncated = trunc
			r.Rcode = int(resp[3] & 0xf)
			return resp
		}
	} else if a, minimal := nd.lookup(q.QType); a != nil {
		resp, trunc := t.fromAnswer(dst, msg, q, a, minimal, limit)
		r.Truncated = trunc
		r.Rcode = int(resp[3] & 0xf)
		return resp
	}
	// NODATA, with the SOA of the zone as it is now.
	if q.DO && zi != nil && zi.sec != nil {
		resp, trunc := t.negativeSigned(dst, msg, q, zi, nd, key, int(nd.apex), RcodeSuccess, limit)
		r.Truncated = trunc
		return resp
	}
	resp, trunc := t.negative(dst, msg, q, zi, int(nd.apex), RcodeSuccess, limit)
	r.Truncated = trunc
	return resp
}

// lowerName copies the name src into dst (as long), its letters in lower
// case. It works on 8 bytes at a time, the last 8 of the name overlapping
// those before when its length is not a multiple of 8: a byte loop costs
// a dozen instructions a letter, a tenth of a query's.
func lowerName(dst, src []byte) {
	n := len(src)
	if n < 8 {
		for i, c := range src {
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			dst[i] = c
		}
		return
	}
	dst = dst[:n]
	for i := 0; i < n-8; i += 8 {
		binary.LittleEndian.PutUint64(dst[i:], lower8(binary.LittleEndian.Uint64(src[i:])))
	}
	binary.LittleEndian.PutUint64(dst[n-8:], lower8(binary.LittleEndian.Uint64(src[n-8:])))
}

// lower8 is the 8 bytes of x with the ASCII upper-case letters in lower
// case. Each byte's low 7 bits plus 0x80-'A' carry into its high bit when
// it is 'A' or more, plus 0x80-'Z'-1 when it is more than 'Z'; neither sum
// carries into the next byte. A byte of 0x80 or more is left alone.
func lower8(x uint64) uint64 {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	low := x &^ highs
	ge := low + ones*(0x80-'A')
	gt := low + ones*(0x80-'Z'-1)
	upper := (ge &^ gt) &^ x & highs
	return x | upper>>2
}

// patchHeader copies the client's ID, RD and CD into a response header.
// It is one word: the ID, and RD (the low bit of the third byte) and CD
// (0x10 of the fourth) ORed into the flags; byte by byte, the bounds
// checks of each made it 34 instructions of every answer.
func patchHeader(resp, msg []byte) {
	w := binary.BigEndian.Uint32(resp) & 0x0000ffff
	binary.BigEndian.PutUint32(resp, w|binary.BigEndian.Uint32(msg)&0xffff0110)
}

// fromAnswer answers q with a, without its additional section when
// minimal is set or the full answer does not fit.
func (t *Table) fromAnswer(dst, msg []byte, q *Query, a *answer, minimal bool, limit int) ([]byte, bool) {
	body := a.full
	question := msg[headerLen : q.QNameEnd+4]
	opt := 0
	if q.EDNS {
		opt = optRRLen
	}
	if minimal && a.minLen != 0 || a.len(len(question))+opt > limit {
		if a.minLen == 0 || int(a.minLen)+len(question)+opt > limit {
			return t.truncated(dst, msg, q, a.full[2]|0x02, a.full[3]), true
		}
		body = a.full[:a.minLen]
	}
	resp := append(dst[:0], body[:headerLen]...)
	resp = append(resp, question...)
	resp = append(resp, body[headerLen:]...)
	if len(body) < len(a.full) {
		resp[10], resp[11] = 0, 0 // ARCOUNT: the additional section was left out
	}
	patchHeader(resp, msg)
	return t.appendOPT(resp, q, RcodeSuccess), false
}

// truncated is a response with TC set and only the question (RFC 2181
// §9): the client retries over TCP.
func (t *Table) truncated(dst, msg []byte, q *Query, flags2, flags3 byte) []byte {
	resp := append(dst[:0], msg[:headerLen]...)
	resp[2] = flags2 | 0x02
	resp[3] = flags3
	patchHeader(resp, msg)
	setCounts(resp, 1, 0, 0, 0)
	resp = append(resp, msg[headerLen:q.QNameEnd+4]...)
	return t.appendOPT(resp, q, RcodeSuccess)
}

// negative assembles an NXDOMAIN or NODATA answer with the zone's SOA in
// the authority section (RFC 2308 §2.1, §2.2), its owner a pointer to the
// zone's name at offset apex of the question name.
func (t *Table) negative(dst, msg []byte, q *Query, zi *zoneInfo, apex, rcode, limit int) ([]byte, bool) {
	flags2, flags3 := byte(0x84), byte(rcode) // QR, AA
	opt := 0
	if q.EDNS {
		opt = optRRLen
	}
	if q.QNameEnd+4+2+len(zi.nxSOA)+opt > limit {
		return t.truncated(dst, msg, q, flags2, flags3), true
	}
	resp := append(dst[:0], msg[:q.QNameEnd+4]...)
	resp[2], resp[3] = flags2, flags3
	patchHeader(resp, msg)
	setCounts(resp, 1, 0, 1, 0)
	ptr := 0xc000 | uint16(headerLen+apex)
	resp = append(resp, byte(ptr>>8), byte(ptr))
	resp = append(resp, zi.nxSOA...)
	return t.appendOPT(resp, q, RcodeSuccess), false
}

// bare is a response with only the question: REFUSED, FORMERR, NOTIMP,
// BADVERS. aa sets the AA flag.
func (t *Table) bare(dst, msg []byte, q *Query, rcode int, aa bool) []byte {
	resp := append(dst[:0], msg[:q.QNameEnd+4]...)
	resp[2], resp[3] = 0x80, byte(rcode&0xf)
	if aa {
		resp[2] |= 0x04
	}
	patchHeader(resp, msg)
	setCounts(resp, 1, 0, 0, 0)
	return t.appendOPT(resp, q, rcode)
}

// headerOnly answers a message whose question cannot be read: the
// header alone, with the ID, opcode and RD of the query.
func headerOnly(dst, msg []byte, rcode int) []byte {
	resp := append(dst[:0], msg[:headerLen]...)
	resp[2] = 0x80 | msg[2]&0x79 // QR, opcode, RD
	resp[3] = byte(rcode)
	setCounts(resp, 0, 0, 0, 0)
	return resp
}

func setCounts(resp []byte, qd, an, ns, ar uint16) {
	binary.BigEndian.PutUint16(resp[4:], qd)
	binary.BigEndian.PutUint16(resp[6:], an)
	binary.BigEndian.PutUint16(resp[8:], ns)
	binary.BigEndian.PutUint16(resp[10:], ar)
}

// appendOPT adds our OPT record when the query had one (RFC 6891 §6.1.1):
// our buffer size, the upper bits of an extended rcode, version 0, and the
// DO bit copied from the query (RFC 3225 §3).
func (t *Table) appendOPT(resp []byte, q *Query, rcode int) []byte {
	if !q.EDNS {
		return resp
	}
	var flags byte
	if q.DO {
		flags = 0x80
	}
	resp = append(resp, 0, 0, typeOPT, byte(t.maxUDP>>8), byte(t.maxUDP), byte(rcode>>4), 0, flags, 0, 0, 0)
	binary.BigEndian.PutUint16(resp[10:], binary.BigEndian.Uint16(resp[10:])+1)
	return resp
}
