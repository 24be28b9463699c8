package model

import (
	"bytes"
	"hash/maphash"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"

	sc "github.com/grpc-config-dns/grpc-config-dns/serviceconfig"
)

// A reload of a fleet's config usually changes one service in 100 000,
// and reading the items again (cutting 30 MB into lines, hashing and
// looking up every item, merging what each made) takes most of a second.
// So a Parser keeps, of the last text that made a config, the size and a
// keyed sum of each of its pieces (every item of a services list, and the
// text between them). The next text is compared with them from both ends;
// when what differs lies inside one services list and is made of whole
// items, only those items are read, and the config is the last one with
// that list's services replaced: the cost is hashing the text once, not
// reading it. The result is exactly Parse's (FuzzParserDifference checks
// it). Whenever the difference could matter beyond its own items
// (another list, a zone's settings, a nameserver or another service of
// the same name, policies, more diagnostics than are listed, errors), the
// text is read as before.

// maxDiffItems bounds the items a difference may replace or write: past
// it, reading them in parallel (the full path) is faster.
const maxDiffItems = 256

// segment is a piece of the base text: one item of a services list, or the
// text between two lists' items.
type segment struct {
	size, lines int32 // bytes and newlines (a config is < 2 GiB)
	est         int32 // nodeEstimate of the piece alone, less a document's 2
	block       int32 // index in base.blocks; -1 outside the items
	sum         [2]uint64
}

// baseBlock is a services list of the base text.
type baseBlock struct {
	zone                  int    // index of its zone in cfg.Zones
	path                  string // JSON pointer of the list
	keyIndent, itemIndent int
	first, n              int // its items are segs[first : first+n]
	// byName is the zone's services sorted by name, to find a name a
	// difference writes among the services it keeps.
	byName []*Service
	// frozen lists are never read from a difference: a zone with
	// policies resolves them over all its services.
	frozen bool
}

// base is what a Parser keeps of the last text that made a config.
type base struct {
	cfg    *Config
	ds     sc.Diagnostics
	segs   []segment
	blocks []*baseBlock
	est    int // nodeEstimate of the text
	sigLen int
	// json bounds what the text converts to JSON in all: a full read
	// refuses a config past maxExpansion when a conversion after the
	// items finds the total too large. Differences only add to it (what
	// they replace is not subtracted), so it stays an upper bound.
	json int
}

// Delta is how a zone of the config a Parser last returned differs from
// the same zone of the config it returned before: Zone is Prev with the
// services of Changed added (or replacing those of their names) and those
// named by Removed gone, everything else the same.
type Delta struct {
	Zone, Prev *Zone
	Changed    []*Service
	Removed    []string
}

// Delta returns how zone z of the config the Parser last returned differs
// from the zone it returned before, or nil when it does not know (the
// zone was read whole, or is the very same *Zone as before).
func (p *Parser) Delta(z *Zone) *Delta {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.delta != nil && p.delta.Zone == z {
		return p.delta
	}
	return nil
}

func (p *Parser) sum(t []byte) [2]uint64 {
	return [2]uint64{maphash.Bytes(p.seed[0], t), maphash.Bytes(p.seed[1], t)}
}

// newBase keeps what a parse of text made, to read the next text from its
// difference; nil when it cannot be used (no config, the text read whole,
// diagnostics that cannot be placed or were not all listed).
func (p *Parser) newBase(text []byte, cfg *Config, ds sc.Diagnostics, blocks map[int]*block, json, workers int) *base {
	if cfg == nil || len(blocks) == 0 {
		return nil
	}
	for _, d := range ds {
		if d.Line <= 0 || d.Offset < 0 {
			return nil // unplaced, or the count of those not listed
		}
	}
	for _, bl := range blocks {
		if bl.json {
			return nil // differences are cut as YAML items only
		}
	}
	b := &base{cfg: cfg, ds: slices.Clone(ds), sigLen: maxSignatureLen(cfg.Keys), json: json}
	type span struct {
		off, end int
		block    int32
	}
	var spans []span
	off := 0
	for _, line := range slices.Sorted(mapKeys(blocks)) {
		bl := blocks[line]
		zi := slices.Index(cfg.Zones, bl.zone)
		if zi < 0 || len(bl.items) == 0 || len(bl.zone.Services) != len(bl.items) {
			return nil
		}
		if first := bl.items[0].off; first > off {
			spans = append(spans, span{off, first, -1})
		} else if first < off {
			return nil
		}
		bb := &baseBlock{zone: zi, path: bl.path, keyIndent: bl.keyIndent, itemIndent: bl.itemIndent,
			first: len(spans), n: len(bl.items), frozen: bl.zone.PolicySet != nil}
		for _, it := range bl.items {
			if it.off != off && len(spans) > bb.first {
				return nil // not contiguous: never, by how items are cut
			}
			off = it.off + len(it.text)
			spans = append(spans, span{it.off, off, int32(len(b.blocks))})
		}
		b.blocks = append(b.blocks, bb)
	}
	if off < len(text) {
		spans = append(spans, span{off, len(text), -1})
	}
	b.segs = make([]segment, len(spans))
	var wg sync.WaitGroup
	// With one worker (Idle, beside the answers of a server on two
	// cores), the names are sorted after the segments, not beside them.
	workers = min(workers, max(len(spans)/1024, 1))
	ests := make([]int, workers)
	var segs sync.WaitGroup
	for w := range workers {
		segs.Go(func() {
			for i := w * len(spans) / workers; i < (w+1)*len(spans)/workers; i++ {
				t := text[spans[i].off:spans[i].end]
				b.segs[i] = p.segment(t, spans[i].block)
				ests[w] += int(b.segs[i].est)
			}
		})
	}
	sortNames := func() {
		for _, bb := range b.blocks {
			if !bb.frozen {
				bb.byName = slices.Clone(cfg.Zones[bb.zone].Services)
				slices.SortFunc(bb.byName, func(a, b *Service) int { return strings.Compare(a.Name, b.Name) })
			}
		}
	}
	if workers > 1 {
		wg.Go(sortNames) // beside the segments, on a core of its own
	} else {
		segs.Wait()
		sortNames()
	}
	segs.Wait()
	wg.Wait()
	b.est = 2
	for _, e := range ests {
		b.est += e
	}
	return b
}

func mapKeys[K comparable, V any](m map[K]V) func(func(K) bool) {
	return func(yield func(K) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func (p *Parser) segment(t []byte, block int32) segment {
	return segment{size: int32(len(t)), lines: int32(bytes.Count(t, []byte{'\n'})), est: int32(nodeEstimate(t) - 2), block: block, sum: p.sum(t)}
}

// find returns the index of the service named name in bb.byName.
func (bb *baseBlock) find(name string) (int, bool) {
	return slices.BinarySearchFunc(bb.byName, name, func(s *Service, n string) int { return strings.Compare(s.Name, n) })
}

// diff is a difference between the base text and a new one: the new
// text's bytes [off, end) replace the base's segments [k1, k2).
type diff struct {
	off, end, k1, k2 int
	line             int // newlines before off
	block            int32
}

// findDiff compares text with the base from both ends.
func (p *Parser) findDiff(b *base, text []byte) diff {
	segs := b.segs
	d := diff{block: -1}
	for ; d.k1 < len(segs); d.k1++ {
		end := d.off + int(segs[d.k1].size)
		if end > len(text) || p.sum(text[d.off:end]) != segs[d.k1].sum {
			break
		}
		d.off, d.line = end, d.line+int(segs[d.k1].lines)
	}
	d.end, d.k2 = len(text), len(segs)
	for d.k2 > d.k1 {
		start := d.end - int(segs[d.k2-1].size)
		if start < d.off || p.sum(text[start:d.end]) != segs[d.k2-1].sum {
			break
		}
		d.end, d.k2 = start, d.k2-1
	}
	return d
}

// incremental reads text from its difference with the base, reporting
// false when it must be read whole. Nothing changes unless it succeeds.
func (p *Parser) incremental(text []byte) (*Config, sc.Diagnostics, bool) {
	b := p.lastBase(runtime.GOMAXPROCS(0))
	if b == nil || len(text) > MaxConfigSize {
		return nil, nil, false
	}
	d := p.findDiff(b, text)
	if d.k1 == d.k2 && d.off == d.end {
		return b.cfg, slices.Clone(b.ds), true // the same text
	}
	e, ok := b.locate(d, text)
	if !ok || !p.readItems(b, e) || !e.namesAlone(b) {
		return nil, nil, false
	}
	ds, ok := e.diagnostics(b)
	if !ok {
		return nil, nil, false
	}
	cfg := e.config(b)
	p.rebase(b, e, cfg, ds)
	return cfg, ds, true
}

// edit is a difference read from its items: where it lies in the base,
// and what its items made.
type edit struct {
	diff
	bb                *baseBlock
	region            []byte // the new text of the difference
	items             []item // its items
	oldSize, oldLines int    // of the base's segments it replaces
	est               int    // nodeEstimate of the new text
	zone              *Zone  // the base's zone of the list
	a                 int    // index in the list of the first replaced item
	replaced          []*Service
	ctx               string // the items' context (itemContext)
	cached            map[itemSum]*itemResult
	results           []*itemResult
	sums              []itemSum
	json              int             // the base's json bound, with the items'
	written           map[string]bool // names of the services written
}

// itemPath is the JSON pointer of item i of the edited list.
func (e *edit) itemPath(i int) string { return e.bb.path + "/" + strconv.Itoa(i) }

// dItems is how many more items the list has after the edit.
func (e *edit) dItems() int { return len(e.items) - (e.k2 - e.k1) }

// locate checks that the difference d of text with the base replaces whole
// items of one services list, or inserts some next to one, within the
// limits, and cuts its items.
func (b *base) locate(d diff, text []byte) (*edit, bool) {
	segs := b.segs
	if d.k2-d.k1 > maxDiffItems {
		return nil, false
	}
	// Every replaced piece is an item of one list; an insertion lies next
	// to one.
	for k := d.k1; k < d.k2; k++ {
		if segs[k].block < 0 || d.block >= 0 && segs[k].block != d.block {
			return nil, false
		}
		d.block = segs[k].block
	}
	switch {
	case d.block >= 0:
	case d.k1 > 0 && segs[d.k1-1].block >= 0:
		d.block = segs[d.k1-1].block
	case d.k2 < len(segs) && segs[d.k2].block >= 0:
		d.block = segs[d.k2].block
	default:
		return nil, false
	}
	bb := b.blocks[d.block]
	if bb.frozen || d.off > 0 && text[d.off-1] != '\n' || d.end < len(text) && d.end > 0 && text[d.end-1] != '\n' {
		return nil, false
	}
	e := &edit{diff: d, bb: bb, region: text[d.off:d.end]}
	var ok bool
	e.items, ok = cutItems(e.region, bb.itemIndent)
	if !ok || len(e.items) > maxDiffItems || bb.n-(d.k2-d.k1)+len(e.items) == 0 {
		return nil, false
	}
	var oldEst int
	for _, s := range segs[d.k1:d.k2] {
		e.oldSize += int(s.size)
		e.oldLines += int(s.lines)
		oldEst += int(s.est)
	}
	e.est = b.est - oldEst + nodeEstimate(e.region) - 2
	if e.est > MaxConfigNodes {
		return nil, false
	}
	e.zone = b.cfg.Zones[bb.zone]
	e.a = d.k1 - bb.first
	e.replaced = e.zone.Services[e.a : e.a+d.k2-d.k1]
	return e, true
}

// readItems reads the items written, or takes what an item of the same
// text made before in the same context; false when one has errors (the
// full read lists them) or the text converts to too much JSON.
func (p *Parser) readItems(b *base, e *edit) bool {
	rd := newDoc(e.region)
	rd.sigLen = b.sigLen
	e.ctx = itemContext(e.zone, b.sigLen)
	e.cached = p.items[e.ctx]
	e.results = make([]*itemResult, len(e.items))
	e.sums = make([]itemSum, len(e.items))
	e.json = b.json
	var scratch yamlScratch
	for j, it := range e.items {
		e.sums[j] = p.sum(it.text)
		r, ok := e.cached[e.sums[j]]
		if !ok || r.policyKey() != "" {
			var err error
			if r, err = rd.readItem(it, e.itemPath(e.a+j), e.zone, &scratch); err != nil {
				return false
			}
		}
		if r.svc == nil || r.errors > 0 || r.more != nil && (r.more.abs != nil || r.more.omitted != [2]int{}) {
			return false // errors: the full path lists them
		}
		e.results[j] = r
		e.json += int(r.jsonSize)
	}
	return e.json <= maxExpansion // else the full read decides
}

// namesAlone checks what no item shows alone: a name written twice, or
// one the list keeps elsewhere, or a nameserver's name, whose checks look
// at the services of that name.
func (e *edit) namesAlone(b *base) bool {
	e.written = make(map[string]bool, len(e.results))
	gone := make(map[string]bool, len(e.replaced))
	for _, s := range e.replaced {
		gone[s.Name] = true
	}
	for _, r := range e.results {
		name := r.svc.Name
		if e.written[name] {
			return false
		}
		e.written[name] = true
		if _, ok := e.bb.find(name); ok && !gone[name] {
			return false
		}
	}
	for _, ns := range e.zone.Nameservers {
		if e.written[ns.Name] || gone[ns.Name] {
			return false
		}
	}
	return true
}

// diagnostics are the base's, less the replaced items', moved; and the
// written items'. False when they cannot all be placed or listed.
func (e *edit) diagnostics(b *base) (sc.Diagnostics, bool) {
	dItems := e.dItems()
	dBytes := len(e.region) - e.oldSize
	dLines := bytes.Count(e.region, []byte{'\n'}) - e.oldLines
	oldEnd := e.off + e.oldSize
	var ds sc.Diagnostics
	for _, diag := range b.ds {
		if i, rest, ok := listIndex(diag.Path, e.bb.path); ok {
			switch {
			case i >= e.a && i < e.a+e.k2-e.k1:
				continue
			case i >= e.a+e.k2-e.k1 && dItems != 0:
				diag.Path = e.itemPath(i+dItems) + rest
			}
		}
		if diag.Offset >= oldEnd {
			diag.Offset += dBytes
			diag.Line += dLines
		}
		ds = append(ds, diag)
	}
	for j, r := range e.results {
		if r.more == nil {
			continue
		}
		for _, diag := range r.more.diags {
			if diag.Line <= 0 || diag.Offset < 0 {
				return nil, false
			}
			diag.Line += e.line + e.items[j].line
			diag.Offset += e.off + e.items[j].off
			diag.Path = e.itemPath(e.a+j) + diag.Path
			ds = append(ds, diag)
		}
	}
	if len(ds) > sc.MaxDiagnostics {
		return nil, false
	}
	ds.Sort()
	return ds, true
}

// config is the base's config with the list's services replaced.
func (e *edit) config(b *base) *Config {
	svcs := make([]*Service, 0, len(e.zone.Services)+e.dItems())
	svcs = append(svcs, e.zone.Services[:e.a]...)
	for _, r := range e.results {
		svcs = append(svcs, r.svc)
	}
	svcs = append(svcs, e.zone.Services[e.a+e.k2-e.k1:]...)
	nz := *e.zone
	nz.Services = svcs
	cfg := *b.cfg
	cfg.Zones = slices.Clone(b.cfg.Zones)
	cfg.Zones[e.bb.zone] = &nz
	return &cfg
}

// rebase keeps the edited text as the next base, with cfg (e's config)
// and its diagnostics ds, the items read, and the difference from the
// last config (Delta).
func (p *Parser) rebase(b *base, e *edit, cfg *Config, ds sc.Diagnostics) {
	bb, dItems := e.bb, e.dItems()
	nz := cfg.Zones[bb.zone]
	delta := &Delta{Zone: nz, Prev: e.zone}
	kept := make(map[*Service]bool, len(e.results))
	for _, r := range e.results {
		delta.Changed = append(delta.Changed, r.svc)
		kept[r.svc] = true
	}
	for _, s := range e.replaced {
		if !e.written[s.Name] {
			delta.Removed = append(delta.Removed, s.Name)
		}
		if i, ok := bb.find(s.Name); ok && bb.byName[i] == s {
			bb.byName = slices.Delete(bb.byName, i, i+1)
		}
		if !kept[s] {
			p.stale = append(p.stale, s)
		}
	}
	for _, r := range e.results {
		i, _ := bb.find(r.svc.Name)
		bb.byName = slices.Insert(bb.byName, i, r.svc)
	}
	fresh := make([]segment, len(e.items))
	for j, it := range e.items {
		fresh[j] = p.segment(it.text, e.block)
	}
	b.segs = slices.Replace(b.segs, e.k1, e.k2, fresh...)
	for _, o := range b.blocks {
		if o.first > bb.first {
			o.first += dItems
		}
	}
	bb.n += dItems
	b.cfg, b.ds, b.est, b.json = cfg, slices.Clone(ds), e.est, e.json
	if e.cached == nil {
		if p.items == nil {
			p.items = map[string]map[itemSum]*itemResult{}
		}
		e.cached = map[itemSum]*itemResult{}
		p.items[e.ctx] = e.cached
	}
	for j, r := range e.results {
		e.cached[e.sums[j]] = r
	}
	if len(p.stale) > maxDiffItems {
		p.sweep()
	}
	p.delta = delta
}

// cutItems cuts the text of whole items of a list whose items start at
// column col, as splitServices would; false when it is anything else.
func cutItems(region []byte, col int) ([]item, bool) {
	var items []item
	for lo, ln := 0, 0; lo < len(region); ln++ {
		hi := len(region)
		if e := bytes.IndexByte(region[lo:], '\n'); e >= 0 {
			hi = lo + e + 1
		}
		l := region[lo:hi]
		switch {
		case bytes.HasPrefix(l, []byte("---")) || bytes.HasPrefix(l, []byte("...")) || bytes.HasPrefix(l, []byte("%")):
			return nil, false
		case isEntry(l, col) && indent(l) == col:
			items = append(items, item{line: ln, off: lo})
		case len(items) == 0:
			return nil, false
		case blankOrComment(l) || indent(l) > col:
		default:
			return nil, false
		}
		last := &items[len(items)-1]
		last.text = region[last.off:hi]
		lo = hi
	}
	return items, cuttable(region)
}

// listIndex returns the index of the list item path names in the list at
// list, and the rest of path after it.
func listIndex(path, list string) (int, string, bool) {
	rest, ok := strings.CutPrefix(path, list+"/")
	if !ok {
		return 0, "", false
	}
	digits, tail, deeper := strings.Cut(rest, "/")
	i, err := strconv.Atoi(digits)
	if err != nil {
		return 0, "", false
	}
	if deeper {
		tail = "/" + tail
	}
	return i, tail, true
}

// sweep forgets the readings of services replaced by differences, which
// the full path would have dropped: item readings live as long as their
// text is in the config.
func (p *Parser) sweep() {
	gone := make(map[*Service]bool, len(p.stale))
	for _, s := range p.stale {
		gone[s] = true
	}
	for _, m := range p.items {
		for k, r := range m {
			if r.svc != nil && gone[r.svc] {
				delete(m, k)
			}
		}
	}
	p.stale = p.stale[:0]
}
