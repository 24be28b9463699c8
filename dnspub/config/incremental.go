package config

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
func (p *Parser) newBase(text []byte, cfg *Config, ds sc.Diagnostics, blocks map[int]*block, json int) *base {
	if cfg == nil || len(blocks) == 0 {
		return nil
	}
	for _, d := range ds {
		if d.Line <= 0 || d.Offset < 0 {
			return nil // unplaced, or the count of those not listed
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
	workers := min(runtime.GOMAXPROCS(0), max(len(spans)/1024, 1))
	ests := make([]int, workers)
	for w := range workers {
		wg.Go(func() {
			for i := w * len(spans) / workers; i < (w+1)*len(spans)/workers; i++ {
				t := text[spans[i].off:spans[i].end]
				b.segs[i] = p.segment(t, spans[i].block)
				ests[w] += int(b.segs[i].est)
			}
		})
	}
	for _, bb := range b.blocks {
		if bb.frozen {
			continue
		}
		z := cfg.Zones[bb.zone]
		wg.Go(func() {
			bb.byName = slices.Clone(z.Services)
			slices.SortFunc(bb.byName, func(a, b *Service) int { return strings.Compare(a.Name, b.Name) })
		})
	}
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
	b := p.base
	if b == nil || len(text) > MaxConfigSize {
		return nil, nil, false
	}
	d := p.findDiff(b, text)
	if d.k1 == d.k2 && d.off == d.end {
		return b.cfg, slices.Clone(b.ds), true // the same text
	}
	segs := b.segs
	if d.k2-d.k1 > maxDiffItems {
		return nil, nil, false
	}
	// Every replaced piece is an item of one list; an insertion lies next
	// to one.
	for k := d.k1; k < d.k2; k++ {
		if segs[k].block < 0 || d.block >= 0 && segs[k].block != d.block {
			return nil, nil, false
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
		return nil, nil, false
	}
	bb := b.blocks[d.block]
	if bb.frozen || d.off > 0 && text[d.off-1] != '\n' || d.end < len(text) && d.end > 0 && text[d.end-1] != '\n' {
		return nil, nil, false
	}
	region := text[d.off:d.end]
	items, ok := cutItems(region, bb.itemIndent)
	if !ok || len(items) > maxDiffItems || bb.n-(d.k2-d.k1)+len(items) == 0 {
		return nil, nil, false
	}
	var oldSize, oldLines, oldEst int
	for _, s := range segs[d.k1:d.k2] {
		oldSize += int(s.size)
		oldLines += int(s.lines)
		oldEst += int(s.est)
	}
	est := b.est - oldEst + nodeEstimate(region) - 2
	if est > MaxConfigNodes {
		return nil, nil, false
	}

	// Read the items written.
	zone := b.cfg.Zones[bb.zone]
	a := d.k1 - bb.first // index in the list of the first replaced item
	replaced := zone.Services[a : a+d.k2-d.k1]
	rd := newDoc(region)
	rd.sigLen = b.sigLen
	ctx := itemContext(zone, b.sigLen)
	cached := p.items[ctx]
	results := make([]*itemResult, len(items))
	sums := make([]itemSum, len(items))
	json := b.json
	itemPath := func(i int) string { return bb.path + "/" + strconv.Itoa(i) }
	for j, it := range items {
		sums[j] = p.sum(it.text)
		r, ok := cached[sums[j]]
		if !ok || r.policyKey() != "" {
			var err error
			if r, err = rd.readItem(it, itemPath(a+j), zone); err != nil {
				return nil, nil, false
			}
		}
		if r.svc == nil || r.errors > 0 || r.more != nil && (r.more.abs != nil || r.more.omitted != [2]int{}) {
			return nil, nil, false // errors: the full path lists them
		}
		results[j] = r
		json += int(r.jsonSize)
	}
	if json > maxExpansion {
		return nil, nil, false // the full read decides
	}

	// What no item shows alone: a name twice, or a nameserver's name,
	// whose checks look at the services of that name.
	written := make(map[string]bool, len(results))
	gone := make(map[string]bool, len(replaced))
	for _, s := range replaced {
		gone[s.Name] = true
	}
	for _, r := range results {
		name := r.svc.Name
		if written[name] {
			return nil, nil, false
		}
		written[name] = true
		if _, ok := bb.find(name); ok && !gone[name] {
			return nil, nil, false
		}
	}
	for _, ns := range zone.Nameservers {
		if written[ns.Name] || gone[ns.Name] {
			return nil, nil, false
		}
	}

	// Diagnostics: the base's, less the replaced items', moved; and the
	// written items'.
	dItems := len(items) - (d.k2 - d.k1)
	dBytes := len(region) - oldSize
	dLines := bytes.Count(region, []byte{'\n'}) - oldLines
	oldEnd := d.off + oldSize
	var ds sc.Diagnostics
	for _, diag := range b.ds {
		if i, rest, ok := listIndex(diag.Path, bb.path); ok {
			switch {
			case i >= a && i < a+d.k2-d.k1:
				continue
			case i >= a+d.k2-d.k1 && dItems != 0:
				diag.Path = itemPath(i+dItems) + rest
			}
		}
		if diag.Offset >= oldEnd {
			diag.Offset += dBytes
			diag.Line += dLines
		}
		ds = append(ds, diag)
	}
	for j, r := range results {
		if r.more == nil {
			continue
		}
		for _, diag := range r.more.diags {
			if diag.Line <= 0 || diag.Offset < 0 {
				return nil, nil, false
			}
			diag.Line += d.line + items[j].line
			diag.Offset += d.off + items[j].off
			diag.Path = itemPath(a+j) + diag.Path
			ds = append(ds, diag)
		}
	}
	if len(ds) > sc.MaxDiagnostics {
		return nil, nil, false
	}
	ds.Sort()

	// The config: the base's, with the list's services replaced.
	svcs := make([]*Service, 0, len(zone.Services)+dItems)
	svcs = append(svcs, zone.Services[:a]...)
	for _, r := range results {
		svcs = append(svcs, r.svc)
	}
	svcs = append(svcs, zone.Services[a+d.k2-d.k1:]...)
	nz := *zone
	nz.Services = svcs
	cfg := *b.cfg
	cfg.Zones = slices.Clone(b.cfg.Zones)
	cfg.Zones[bb.zone] = &nz

	// Keep it all as the next base.
	delta := &Delta{Zone: &nz, Prev: zone}
	kept := make(map[*Service]bool, len(results))
	for _, r := range results {
		delta.Changed = append(delta.Changed, r.svc)
		kept[r.svc] = true
	}
	for _, s := range replaced {
		if !written[s.Name] {
			delta.Removed = append(delta.Removed, s.Name)
		}
		if i, ok := bb.find(s.Name); ok && bb.byName[i] == s {
			bb.byName = slices.Delete(bb.byName, i, i+1)
		}
		if !kept[s] {
			p.stale = append(p.stale, s)
		}
	}
	for _, r := range results {
		i, _ := bb.find(r.svc.Name)
		bb.byName = slices.Insert(bb.byName, i, r.svc)
	}
	fresh := make([]segment, len(items))
	for j, it := range items {
		fresh[j] = p.segment(it.text, d.block)
	}
	b.segs = slices.Replace(b.segs, d.k1, d.k2, fresh...)
	for _, o := range b.blocks {
		if o.first > bb.first {
			o.first += dItems
		}
	}
	bb.n += dItems
	b.cfg, b.ds, b.est, b.json = &cfg, slices.Clone(ds), est, json
	if cached == nil {
		if p.items == nil {
			p.items = map[string]map[itemSum]*itemResult{}
		}
		cached = map[itemSum]*itemResult{}
		p.items[ctx] = cached
	}
	for j, r := range results {
		cached[sums[j]] = r
	}
	if len(p.stale) > maxDiffItems {
		p.sweep()
	}
	p.delta = delta
	return &cfg, ds, true
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
	return items, !bytes.ContainsAny(region, "&*\t\u0085\u2028\u2029") && !loneCR(region)
}

// loneCR reports whether t holds a carriage return not followed by a line
// feed: YAML breaks lines there (and at U+0085, U+2028, U+2029), and
// positions counted by line feeds alone would not match a full read's.
func loneCR(t []byte) bool {
	for i := bytes.IndexByte(t, '\r'); i >= 0; {
		if i+1 == len(t) || t[i+1] != '\n' {
			return true
		}
		next := bytes.IndexByte(t[i+1:], '\r')
		if next < 0 {
			return false
		}
		i += 1 + next
	}
	return false
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
