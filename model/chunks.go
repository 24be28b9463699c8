package model

import (
	"bytes"
	"cmp"
	"fmt"
	"hash/maphash"
	"maps"
	"net/netip"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"go.yaml.in/yaml/v3"

	sc "github.com/grpc-config-dns/grpc-config-dns/serviceconfig"
	"github.com/grpc-config-dns/grpc-config-dns/serviceconfig/policy"
)

// A config of 100 000 services is 30 MB of YAML, and reading it whole
// costs seconds, most of them in the services, one like the other. So a
// block-style `services:` list is cut into its items, each read alone (in
// parallel, on every core), and a Parser remembers what each item's text
// made of it: a reload that changes one service reads one service again.
// Everything else (the zones' own fields, the cross-checks between
// services) is read as before, from the text with the items blanked out.
//
// Cutting is safe only where an item cannot depend on text outside it:
// configs with anchors or aliases (& or * anywhere), tabs, or several
// documents are read whole. An item that does not read as exactly one
// list entry on its own makes the whole config be read whole too.

// block is one `services:` list cut into its items.
type block struct {
	// key is where the services key is (its quote in JSON): blocks are
	// found by it, by the line and column yaml.v3 gives its node, as a
	// JSON config may hold several on one line.
	key textPos
	// json says the items are the elements of a JSON array, each an
	// object, where YAML items are block sequence entries ("- ").
	json  bool
	items []item
	// keyIndent and itemIndent are the columns of the key and of its
	// items' "- ", which decide where an item and the list end.
	keyIndent, itemIndent int
	// zone and path are the zone the list was read as and its JSON
	// pointer, set when it is read.
	zone *Zone
	path string
}

// textPos is a position in a text as yaml.v3 gives it: a line and a
// column in characters, both from 1.
type textPos struct{ line, col int }

// posOf is the position of node n (none for nil).
func posOf(n *yaml.Node) textPos {
	if n == nil {
		return textPos{}
	}
	return textPos{n.Line, n.Column}
}

// item is the text of one list entry: whole lines of the config (YAML),
// or the object of one array element (JSON).
type item struct {
	line int // 0-based index of its first line
	off  int // byte offset of its start
	// col and bcol are the characters and bytes before it on its first
	// line (JSON elements may share a line; YAML items start one).
	col, bcol int
	text      []byte
}

// splitServices finds the block-style services lists of text and returns
// them with text's skeleton: the same lines with every item's emptied (so
// that the lines of its nodes are the text's). ok is false when
// the text must be read whole.
func splitServices(text []byte) (skeleton []byte, blocks map[textPos]*block, ok bool) {
	// Whether the text can be cut at all is found beside the cut, on
	// another core: eight scans of 30 MB.
	can := make(chan bool, 1)
	go func() { can <- cuttable(text) }()
	skeleton, blocks, ok = cutLines(text)
	if !<-can {
		return nil, nil, false
	}
	return skeleton, blocks, ok
}

// cutLines is splitServices for a text that can be cut.
func cutLines(text []byte) (skeleton []byte, blocks map[textPos]*block, ok bool) {
	// Line by line from a cursor: no table of the lines' starts (8 bytes
	// for each of a fleet's 700 000 lines, on the serial path of a start).
	lineEnd := func(off int) int { // past the line's newline
		if k := bytes.IndexByte(text[off:], '\n'); k >= 0 {
			return off + k + 1
		}
		return len(text)
	}
	blocks = map[textPos]*block{}
	for i, off := 0, 0; off < len(text); {
		end := lineEnd(off)
		l := text[off:end]
		if bytes.HasPrefix(l, []byte("---")) || bytes.HasPrefix(l, []byte("...")) || bytes.HasPrefix(l, []byte("%")) {
			return nil, nil, false
		}
		keyIndent, isKey := servicesKey(l)
		if !isKey {
			i, off = i+1, end
			continue
		}
		// The first entry fixes the items' indentation.
		j, joff := i+1, end
		for joff < len(text) && blankOrComment(text[joff:lineEnd(joff)]) {
			j, joff = j+1, lineEnd(joff)
		}
		if joff == len(text) {
			i, off = i+1, end
			continue
		}
		first := text[joff:lineEnd(joff)]
		itemIndent := indent(first)
		if itemIndent < keyIndent || !isEntry(first, itemIndent) {
			i, off = i+1, end
			continue // flow style, or an empty list: read as it is
		}
		b := &block{key: textPos{i + 1, keyIndent + 1}, keyIndent: keyIndent, itemIndent: itemIndent}
		// Room for every entry at the items' indentation from here on (a
		// SIMD count): grown item by item, 100 000 items were copied
		// several times over, into pages fresh from the system.
		entry := append(append([]byte{'\n'}, bytes.Repeat([]byte{' '}, itemIndent)...), '-')
		b.items = make([]item, 0, bytes.Count(text[joff:], entry)+1)
		for joff < len(text) {
			jend := lineEnd(joff)
			l := text[joff:jend]
			switch ind := indent(l); {
			case ind > itemIndent: // most lines: inside the item
			case ind == itemIndent && isEntry(l, itemIndent):
				b.items = append(b.items, item{line: j, off: joff})
			case blankOrComment(l):
			case ind > keyIndent || ind == keyIndent && isEntry(l, keyIndent):
				// Neither in an item nor a sibling of the key: blanking the
				// items would attach it elsewhere. Read the text whole.
				return nil, nil, false
			default:
				goto done
			}
			last := &b.items[len(b.items)-1]
			last.text = text[last.off:jend]
			j, joff = j+1, jend
		}
	done:
		blocks[b.key] = b
		i, off = j, joff // the line that ends the list may start another
	}
	if len(blocks) == 0 {
		return text, blocks, true
	}
	// The skeleton keeps every line, so that its nodes' lines are the
	// text's, and empties the items' lines: 30 MB of blanks would cost the
	// YAML scanner as much as the services.
	skeleton = make([]byte, 0, len(text)/8)
	off := 0
	for _, key := range slices.SortedFunc(maps.Keys(blocks), comparePos) {
		b := blocks[key]
		for k, it := range b.items {
			skeleton = append(skeleton, text[off:it.off]...)
			if k == 0 {
				// The list's value in the skeleton is an empty flow list,
				// which the fast reader reads (it leaves an empty value to
				// yaml.v3, whose scanner took 8 ms over a fleet's blank
				// lines); the block is read in its place.
				skeleton = append(skeleton, bytes.Repeat([]byte{' '}, b.itemIndent)...)
				skeleton = append(skeleton, "[]"...)
			}
			// A newline for each of the item's lines, the last one too
			// when the text does not end with a newline.
			nl := bytes.Count(it.text, []byte{'\n'})
			if len(it.text) > 0 && it.text[len(it.text)-1] != '\n' {
				nl++
			}
			skeleton = append(skeleton, newlines(nl)...)
			off = it.off + len(it.text)
		}
	}
	skeleton = append(skeleton, text[off:]...)
	return skeleton, blocks, true
}

// cuttable reports whether text may be cut into lines at its line feeds
// and its pieces read alone: it has no anchor or alias (& or *), no tab,
// and no line break but LF and CR LF. YAML also breaks lines at a lone CR,
// U+0085, U+2028 and U+2029, and skips a byte order mark at the start of a
// line: a piece cut at line feeds alone would not be the piece yaml.v3
// reads, and the keys after it would be lost. Such texts are read whole.
func cuttable(text []byte) bool {
	// A search for one byte is SIMD; one for any of several bytes goes
	// byte by byte through 30 MB. The rare bytes that start the odd breaks
	// (0xC2, 0xE2) and the BOM (0xEF) are looked at only where they are.
	for _, c := range []byte{'&', '*', '\t'} {
		if bytes.IndexByte(text, c) >= 0 {
			return false
		}
	}
	return !hasLoneCR(text) && !hasSeq(text, "\u0085") && !hasSeq(text, "\u2028") && !hasSeq(text, "\u2029") && !hasSeq(text, "\ufeff")
}

// hasSeq reports whether t contains the bytes of seq, found from its
// first byte with a SIMD search.
func hasSeq(t []byte, seq string) bool {
	for {
		i := bytes.IndexByte(t, seq[0])
		if i < 0 {
			return false
		}
		if bytes.HasPrefix(t[i:], []byte(seq)) {
			return true
		}
		t = t[i+1:]
	}
}

// hasLoneCR reports whether t holds a carriage return not followed by a
// line feed.
func hasLoneCR(t []byte) bool {
	for {
		i := bytes.IndexByte(t, '\r')
		if i < 0 {
			return false
		}
		if i+1 == len(t) || t[i+1] != '\n' {
			return true
		}
		t = t[i+2:]
	}
}

// newlines returns n line feeds.
func newlines(n int) []byte {
	if n <= len(someNewlines) {
		return someNewlines[:n]
	}
	return bytes.Repeat([]byte{'\n'}, n)
}

var someNewlines = bytes.Repeat([]byte{'\n'}, 64)

// servicesKey reports whether l is `services:` alone (but a comment) and
// its indentation.
func servicesKey(l []byte) (int, bool) {
	n := indent(l)
	rest, ok := bytes.CutPrefix(l[n:], []byte("services:"))
	if !ok || len(rest) > 0 && rest[0] != ' ' && rest[0] != '\n' && rest[0] != '\r' {
		return 0, false // "services:x" is a plain scalar
	}
	rest = bytes.TrimSpace(rest)
	return n, len(rest) == 0 || rest[0] == '#'
}

func indent(l []byte) int {
	n := 0
	for n < len(l) && l[n] == ' ' {
		n++
	}
	return n
}

func blankOrComment(l []byte) bool {
	t := bytes.TrimSpace(l)
	return len(t) == 0 || t[0] == '#'
}

// isEntry reports whether l has a block sequence entry ("- ") at column n.
func isEntry(l []byte, n int) bool {
	if n >= len(l) || l[n] != '-' {
		return false
	}
	return n+1 == len(l) || l[n+1] == ' ' || l[n+1] == '\n' || l[n+1] == '\r'
}

// errCut says an item did not read as one list entry on its own.
var errCut = fmt.Errorf("config: an item of a services list does not read alone")

// errTooManyNodes says the items of a text hold more YAML values than a
// config may (MaxConfigNodes).
var errTooManyNodes = fmt.Errorf("config: more YAML values than a config may hold")

// itemResult is what reading one item made: the service (nil when it is
// invalid) and its diagnostics, with lines, offsets and paths relative to
// the item, so that a Parser can use them again wherever the item moves.
// A Parser keeps one per service: what a valid service needs fits in 48
// bytes, the rest is in more, nil for most services.
type itemResult struct {
	svc      *Service
	nameLine int32 // relative line of the name, 0 without one
	nameCol  int32
	errors   int32
	jsonSize int32 // a config is at most MaxConfigSize bytes: all fit
	nodes    int32 // the estimate of its YAML nodes (nodeEstimate)
	// policyKey is what the zone's policies that selected the service
	// were ("" for none): a reading is used again only when those that
	// select it now are the same. Services selected by the same policies
	// share the string.
	policyKey string
	more      *itemMore
}

// itemMore is what an itemResult rarely holds.
type itemMore struct {
	// target is what the zone's policies selected an invalid service by
	// (a valid one's is its own).
	target policy.Target
	// abs are diagnostics placed outside the item (in a policy that
	// makes the service invalid), with the config's own positions.
	abs     []sc.Diagnostic
	diags   []sc.Diagnostic
	omitted [2]int
}

// target is what the zone's policies selected the service by.
func (r *itemResult) target() policy.Target {
	if r.svc != nil {
		return r.svc.target() // what service set the entry's target to
	}
	if r.more == nil {
		return policy.Target{}
	}
	return r.more.target
}

// readItem reads item it of a zone's services list, as entry path.
func (d *doc) readItem(it item, path string, z *Zone, scratch *yamlScratch) (*itemResult, error) {
	entry := itemEntry(it, scratch)
	if entry == nil {
		return nil, errCut
	}
	w := d.worker(scratch)
	e := w.service(entry, path, z)
	r := &itemResult{svc: e.svc, errors: int32(w.errors), jsonSize: int32(w.jsonBytes)}
	r.policyKey = scratch.policyKey(z, e.target)
	m := itemMore{omitted: w.omitted}
	if e.svc == nil {
		m.target = e.target
	}
	if e.line > 0 {
		r.nameLine, r.nameCol = e.line-int32(it.line), e.col
		if r.nameLine == 1 {
			r.nameCol -= int32(it.col)
		}
	}
	for _, diag := range w.ds {
		if diag.Path != path && !strings.HasPrefix(diag.Path, path+"/") {
			m.abs = append(m.abs, diag)
			continue
		}
		if diag.Line > 0 {
			diag.Line -= it.line
			if diag.Line == 1 {
				diag.Column -= it.bcol
			}
		}
		if diag.Offset >= 0 {
			diag.Offset -= it.off
		}
		diag.Path = strings.TrimPrefix(diag.Path, path)
		m.diags = append(m.diags, diag)
	}
	if m.target.Name != "" || m.target.Labels != nil || m.abs != nil || m.diags != nil || m.omitted != [2]int{} {
		more := m // allocated only here
		r.more = &more
	}
	return r, nil
}

// itemEntry reads item it alone (in scratch, nil for none) and returns
// the service entry it holds, placed where the item is in the config: the
// one entry of a YAML list, or the object of a JSON element; nil when the
// item does not read as one.
func itemEntry(it item, scratch *yamlScratch) *yaml.Node {
	root, ok := readNodes(it.text, scratch)
	if !ok {
		root = new(yaml.Node)
		if yaml.Unmarshal(it.text, root) != nil {
			return nil
		}
	}
	if root.Kind != yaml.DocumentNode || len(root.Content) != 1 {
		return nil
	}
	entry := root.Content[0]
	switch entry.Kind {
	case yaml.SequenceNode: // "- name: …"
		if len(entry.Content) != 1 || entry.Style&yaml.FlowStyle != 0 {
			return nil
		}
		entry = entry.Content[0]
	case yaml.MappingNode: // {"name": …}
		if entry.Style&yaml.FlowStyle == 0 {
			return nil
		}
	default:
		return nil
	}
	shiftPos(root, it.line, it.col)
	return entry
}

// shiftPos moves every node below n down by lines, and those on its
// first line right by cols characters.
func shiftPos(n *yaml.Node, lines, cols int) {
	if n.Line == 1 {
		n.Column += cols
	}
	n.Line += lines
	for _, c := range n.Content {
		shiftPos(c, lines, cols)
	}
}

// comparePos orders positions in a text.
func comparePos(a, b textPos) int {
	if a.line != b.line {
		return cmp.Compare(a.line, b.line)
	}
	return cmp.Compare(a.col, b.col)
}

// worker returns a doc for reading part of d's text alone: the same text,
// settings and limits, diagnostics of its own. With a scratch (nil for none), it
// is the scratch's, valid until its next use, and lends toJSON its
// buffers.
func (d *doc) worker(scratch *yamlScratch) *doc {
	var w *doc
	if scratch != nil {
		w = &scratch.doc
		clear(scratch.pairs) // not to keep the last service's nodes
		scratch.pairs = scratch.pairs[:0]
	} else {
		w = new(doc)
	}
	*w = doc{src: d.src, idx: d.idx, sigLen: d.sigLen, lim: d.lim, scratch: scratch, ds: w.ds[:0]}
	return w
}

// merge adds what reading item it (as entry path) found to d, and
// returns the entry.
func (d *doc) merge(r *itemResult, it item, path string) svcEntry {
	e := svcEntry{svc: r.svc, path: path, target: r.target()}
	if r.nameLine > 0 {
		e.line, e.col = r.nameLine+int32(it.line), r.nameCol
		if r.nameLine == 1 {
			e.col += int32(it.col)
		}
	}
	// Every error of the item counts, those only counted there (past its
	// own cap) too; d.add counts again those it lists, taken off below.
	d.errors += int(r.errors)
	d.jsonBytes += int(r.jsonSize)
	m := r.more
	if m == nil {
		return e
	}
	listedErrors := 0
	for _, diag := range m.abs {
		if diag.Severity == sc.Error {
			listedErrors++
		}
		d.add(diag)
	}
	for _, diag := range m.diags {
		if diag.Line > 0 {
			if diag.Line == 1 {
				diag.Column += it.bcol
			}
			diag.Line += it.line
		}
		if diag.Offset >= 0 {
			diag.Offset += it.off
		}
		diag.Path = path + diag.Path
		if diag.Severity == sc.Error {
			listedErrors++
		}
		d.add(diag)
	}
	d.errors -= listedErrors
	d.omitted[0] += m.omitted[0]
	d.omitted[1] += m.omitted[1]
	return e
}

// itemSum identifies the text of an item (a Parser's keyed 128-bit
// hash); a cached reading of it depends on the zone's context too, which
// keys the map of the zone's readings (rather than every reading's key: a
// zone of 100 000 services would hold its context 100 000 times).
type itemSum = [2]uint64

// itemContext is what of a zone a service's reading depends on.
func itemContext(z *Zone, sigLen int) string {
	return fmt.Sprintf("%s|%d|%+v|%d|", z.Origin, z.TTL, z.Compat, sigLen)
}

// services reads the items of block b as zone z's services at svcPath,
// from p's cache when their text and context are unchanged, the others in
// parallel.
func (d *doc) services(b *block, svcPath string, z *Zone) ([]svcEntry, error) {
	ctx := itemContext(z, d.sigLen)
	// With the zone's policies as they were (their digests say what and
	// where they are), a kept reading's policies are too: only when they
	// changed is each checked against those that select its service now.
	policies := z.policiesKey()
	results, keys, todo, nodes := d.keptReadings(b, z, d.cache.zone(ctx), policies)
	if d.nodes > MaxConfigNodes {
		return nil, errTooManyNodes
	}
	path := func(i int) string { return svcPath + "/" + strconv.Itoa(i) }
	if err := d.readItems(b, z, todo, nodes, results, path); err != nil {
		return nil, err
	}
	if d.cache != nil {
		// Kept for the next parse, in the list's order. A reading with
		// errors is not kept: some of their messages name the line of
		// another node ("first at line 12"), which would be wrong once
		// the item moves; and a config with errors is not served, so
		// nothing is gained by keeping them.
		next := &zoneItems{sums: keys, results: slices.Clone(results), policies: policies}
		for i, r := range next.results {
			if r.errors != 0 {
				next.results[i] = nil
			}
		}
		d.cache.next[ctx] = next
	}
	out := make([]svcEntry, 0, len(results))
	for i, r := range results {
		if e := d.merge(r, b.items[i], path(i)); e.svc != nil {
			out = append(out, e)
		}
	}
	return out, nil
}

// keptReadings finds the readings of the last parse (last) that the items
// of b can keep, and returns them (nil for the others), the sums of the
// items' texts, the items to read, and their estimated YAML nodes (by
// item index; the readings keep them). It adds the items' nodes to d's
// bound, before any is read (see MaxConfigNodes): a kept reading's were
// counted when it was read, the others are estimated here.
//
// Every item's text is hashed and found among the readings of the last
// parse, in parts of the list, one per core: a reload of 100 000
// services does it for them all. The readings are in the order of the
// last list, which the new one mostly keeps: each part walks them beside
// its items, and looks up only those that moved.
func (d *doc) keptReadings(b *block, z *Zone, last *zoneItems, policies string) (results []*itemResult, keys []itemSum, todo []int, nodes []int32) {
	results, keys, nodes = make([]*itemResult, len(b.items)), make([]itemSum, len(b.items)), make([]int32, len(b.items))
	samePolicies := last != nil && last.policies == policies
	parts := 1
	if d.cache != nil {
		parts = min(runtime.GOMAXPROCS(0), max(len(b.items)/4096, 1))
	}
	todos := make([][]int, parts)
	counts := make([]int, parts)
	var looked sync.WaitGroup
	for p := range parts {
		looked.Go(func() {
			from, to := p*len(b.items)/parts, (p+1)*len(b.items)/parts
			hint := 0
			if last != nil {
				hint = p * len(last.sums) / parts
			}
			missed := false
			for i := from; i < to; i++ {
				if d.cache != nil {
					keys[i] = d.cache.sum(b.items[i].text)
					r, at := last.find(keys[i], hint, missed)
					if r != nil && (samePolicies || r.policyKey == z.policyKey(r.target())) {
						results[i] = r
						counts[p] += int(r.nodes)
						hint, missed = at+1, false
						continue
					}
					hint, missed = hint+1, true
				}
				todos[p] = append(todos[p], i)
				nodes[i] = int32(nodeEstimate(b.items[i].text) - 2)
				counts[p] += int(nodes[i])
			}
		})
	}
	looked.Wait()
	for _, n := range counts {
		d.nodes += n
	}
	return results, keys, slices.Concat(todos...), nodes
}

// readItems reads the items of b that todo lists into results, on every
// core; its error is an item that does not read alone (the text is then
// read whole).
func (d *doc) readItems(b *block, z *Zone, todo []int, nodes []int32, results []*itemResult, path func(int) string) error {
	var failed error
	var mu sync.Mutex
	var wg sync.WaitGroup
	// Workers take items by a shared counter, a few at a time: a channel
	// send per item parks and wakes a worker 100 000 times on a fleet.
	var taken atomic.Int64
	const grab = 16
	keeping := len(todo) >= d.lim.compactAbove
	for range min(runtime.GOMAXPROCS(0), max(len(todo)/64, 1)) {
		wg.Go(func() {
			var scratch yamlScratch
			var k keeper
			for {
				from := int(taken.Add(grab)) - grab
				if from >= len(todo) {
					return
				}
				for _, i := range todo[from:min(from+grab, len(todo))] {
					r, err := d.readItem(b.items[i], path(i), z, &scratch)
					if err != nil {
						mu.Lock()
						failed = err
						mu.Unlock()
						continue
					}
					r.nodes = nodes[i] // keptReadings counted them
					if keeping {
						r = k.keep(r)
					}
					results[i] = r
				}
			}
		})
	}
	wg.Wait()
	return failed
}

// keeper moves what a worker's readings keep (the readings and their
// services, names, TXT strings and addresses) into large allocations of
// its own as they are made. Made among the YAML reader's garbage,
// hundreds of times their size, they would share its pages, which stay
// the process's long after it is collected: 25 MB of a fleet of 100 000
// services. Kept apart, they fill pages of their own, and those of the
// garbage are given back whole. Moved as each is read, while it is in the
// cache, rather than in a pass over them all after, they cost a tenth of
// that pass. A large allocation lives while any service in it does:
// services replaced one by one leave their old bytes in use until the
// last one read with them is replaced too (at most the size of the reads
// that made the allocations still in use).
type keeper struct {
	rs       []itemResult
	ss       []Service
	txt      []string
	as       []netip.Addr
	text     strings.Builder
	interned map[string]string
}

// keepChunk is how many of each thing a keeper allocates at once: enough
// that each allocation is a large one (more than 32 KiB), in pages of its
// own.
const keepChunk = 2048

// keep returns a copy of r whose service and its data are the keeper's.
func (k *keeper) keep(r *itemResult) *itemResult {
	if len(k.rs) == 0 {
		k.rs = make([]itemResult, keepChunk)
	}
	kr := &k.rs[0]
	k.rs = k.rs[1:]
	*kr = *r
	if r.svc != nil {
		kr.svc = k.service(r.svc)
	}
	if kr.policyKey != "" {
		kr.policyKey = k.intern(r.policyKey)
	}
	return kr
}

// service returns a copy of old whose name, record and addresses are the
// keeper's.
func (k *keeper) service(old *Service) *Service {
	if len(k.ss) == 0 {
		k.ss = make([]Service, keepChunk/4)
	}
	s := &k.ss[0]
	k.ss = k.ss[1:]
	*s = *old
	s.Name = k.str(old.Name)
	if old.TXT != nil {
		if len(k.txt) < len(old.TXT) {
			k.txt = make([]string, max(keepChunk, len(old.TXT)))
		}
		s.TXT, k.txt = k.txt[:len(old.TXT):len(old.TXT)], k.txt[len(old.TXT):]
		for j, t := range old.TXT {
			s.TXT[j] = k.str(t)
		}
	}
	if old.Addresses != nil {
		if len(k.as) < len(old.Addresses) {
			k.as = make([]netip.Addr, max(keepChunk, len(old.Addresses)))
		}
		s.Addresses, k.as = k.as[:len(old.Addresses):len(old.Addresses)], k.as[len(old.Addresses):]
		copy(s.Addresses, old.Addresses)
	}
	return s
}

// str returns a copy of v in the keeper's text. A strings.Builder only
// ever appends to what it has written, so the strings cut from it stay as
// they are; when v does not fit, the next ones go to a new one.
func (k *keeper) str(v string) string {
	if k.text.Cap()-k.text.Len() < len(v) {
		k.text = strings.Builder{}
		k.text.Grow(max(64*keepChunk, len(v)))
	}
	start := k.text.Len()
	k.text.WriteString(v)
	return k.text.String()[start:]
}

// intern is str for a string many readings share (a policyKey): one copy.
func (k *keeper) intern(v string) string {
	if s, ok := k.interned[v]; ok {
		return s
	}
	if k.interned == nil {
		k.interned = map[string]string{}
	}
	s := k.str(v)
	k.interned[s] = s
	return s
}

// compactAbove is the number of items read at once past which a keeper
// moves them (a reload that reads a few has no garbage to speak of): the
// default of readLimits.compactAbove.
const compactAbove = 256

// itemCache holds item readings across parses, by zone context: those
// of the last parse, and those being made by the current one.
type itemCache struct {
	last, next map[string]*zoneItems
	sum        func([]byte) itemSum
	// jsonBytes is what the parse converted to JSON in all (see
	// readLimits.maxExpansion), set when it read items.
	jsonBytes int
}

// zone returns the readings of the last parse for the zone of context
// (nil for none, or a nil cache).
func (c *itemCache) zone(context string) *zoneItems {
	if c == nil {
		return nil
	}
	return c.last[context]
}

// zoneItems are the readings of one services list, in its order, with
// the sums of their items' texts. A reload changes a few items of a list
// and keeps the others in their order, so the next parse finds most by
// walking beside its own items (a lookup in a map of 100 000 costs a
// cache miss each, 20 ms for them all), and those that moved in an index
// made when one first does.
type zoneItems struct {
	sums    []itemSum
	results []*itemResult // nil for a reading not kept
	// policies are the zone's when they were read (Zone.policiesKey).
	policies string
	once     sync.Once
	index    map[itemSum]int32
}

// find returns the reading of the item whose text's sum is sum, looked
// for first at hint, and where it is (nil, -1 when none is kept). When
// the item before was found, it looks only at hint and after it (a
// service changed in place or removed): a second miss in a row means the
// list moved more, and the index is made.
func (z *zoneItems) find(sum itemSum, hint int, missedBefore bool) (*itemResult, int) {
	if z == nil {
		return nil, -1
	}
	for _, at := range []int{hint, hint + 1} {
		if at >= 0 && at < len(z.sums) && z.sums[at] == sum && z.results[at] != nil {
			return z.results[at], at
		}
	}
	if !missedBefore {
		return nil, -1
	}
	z.once.Do(func() {
		z.index = make(map[itemSum]int32, len(z.sums))
		for i, s := range z.sums {
			if z.results[i] != nil {
				z.index[s] = int32(i)
			}
		}
	})
	if i, ok := z.index[sum]; ok {
		return z.results[i], int(i)
	}
	return nil, -1
}

// Parser reads publisher configs like Parse, and remembers what each
// service's text made of it: the next Parse reads again only services
// whose text (or zone settings) changed, and returns the very same
// *Service for the others. A Parser is safe for use by one goroutine at
// a time.
type Parser struct {
	mu    sync.Mutex
	items map[string]*zoneItems
	// seed keys the sums items are kept by.
	seed [2]maphash.Seed
	// lim, when set (by tests, lower), replaces defaultLimits: a Parser
	// is used as its zero value.
	lim readLimits
}

// Parse is the package's Parse, with the Parser's memory.
func (p *Parser) Parse(text []byte) (*Config, sc.Diagnostics) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.items == nil {
		p.seed = [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}
	}
	c := &itemCache{last: p.items, next: make(map[string]*zoneItems, len(p.items)), sum: p.sum}
	cfg, ds, _ := parse(text, c, p.limits())
	p.items = c.next
	return cfg, ds
}

// limits returns the limits p reads with.
func (p *Parser) limits() readLimits {
	if p.lim == (readLimits{}) {
		return defaultLimits()
	}
	return p.lim
}

// sum is the key an item's reading is kept by: two keyed hashes of its
// text, 128 bits, so that two texts share one only by chance, which no
// text can be written to force (the seeds are the process's secrets).
func (p *Parser) sum(t []byte) itemSum {
	return itemSum{maphash.Bytes(p.seed[0], t), maphash.Bytes(p.seed[1], t)}
}
