package model

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"iter"
	"math"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/grpc-config-dns/grpc-config-dns/internal/asciijson"
	sc "github.com/grpc-config-dns/grpc-config-dns/serviceconfig"
)

// doc is a config text being read: its source and the diagnostics so far.
type doc struct {
	// errors counts the errors reported, listed or not; shown and omitted
	// count, per severity, those listed and those only counted (past
	// sc.MaxDiagnostics: a config of 100 000 services may repeat one
	// mistake 100 000 times).
	errors         int
	shown, omitted [2]int
	// jsonBytes and mergedPairs count what aliases and merge keys made of
	// the config (see readLimits); expanded is set once it is too much.
	jsonBytes, mergedPairs int
	// nodes is the estimate of the YAML values read or to be read, of a
	// text cut into items (see parse).
	nodes    int
	expanded bool
	src      []byte
	// idx places positions in src; shared with the worker docs.
	idx *textIndex
	ds  sc.Diagnostics
	// sigLen is the largest TSIG record a configured key adds to an
	// answer (0 without keys): answers are sized with it.
	sigLen int
	// blocks are the services lists read item by item (chunks.go), by the
	// position of their key; cache holds item readings across parses.
	blocks     map[textPos]*block
	readBlocks int
	cache      *itemCache
	cutFailed  error
	// settingsOnly reads a config without zones (ParseSettings).
	settingsOnly bool
	// scratch, set for reading one service, lends toJSON its buffers:
	// what it returns is valid until the scratch reads the next service.
	scratch *yamlScratch
	// lim are the limits d reads within.
	lim readLimits
}

func newDoc(src []byte) *doc {
	return &doc{src: src, idx: &textIndex{}, lim: defaultLimits()}
}

// textIndex places positions in a text: where its lines start, and the
// characters before every runeBlock bytes (for long lines). It is made
// when a position is first placed: a reload whose new services have no
// diagnostic places none, and need not scan 30 MB for it.
type textIndex struct {
	once  sync.Once
	lines []int // byte offset where each line starts
	runes []int
}

// index returns d's text index, made on first use.
func (d *doc) index() *textIndex {
	ix := d.idx
	ix.once.Do(func() {
		// Found with IndexByte and counted eight bytes at a time, a
		// fleet's lines and runes take milliseconds, not tens of them.
		src := d.src
		ix.lines = lineStarts(src)
		ix.runes = make([]int, 0, len(src)/runeBlock+2)
		runes := 0
		for off := 0; off < len(src); off += runeBlock {
			ix.runes = append(ix.runes, runes)
			runes += runeCount(src[off:min(off+runeBlock, len(src))])
		}
		if len(src)%runeBlock == 0 {
			ix.runes = append(ix.runes, runes)
		}
	})
	return ix
}

// lineStarts returns the offset of each line of text as yaml.v3 counts
// them: 0, and every offset after a line break (len(text) too when text
// ends with one). Its lines break at LF, CR LF, a lone CR, U+0085, U+2028
// and U+2029, so that a node's line and column, which yaml.v3 gives,
// are placed in the text whatever breaks it holds.
func lineStarts(text []byte) []int {
	if bytes.IndexByte(text, '\r') < 0 && bytes.IndexByte(text, 0xC2) < 0 && bytes.IndexByte(text, 0xE2) < 0 {
		// Line feeds only (found with a SIMD search): nearly every config.
		starts := make([]int, 1, bytes.Count(text, []byte{'\n'})+1)
		for off := 0; ; {
			i := bytes.IndexByte(text[off:], '\n')
			if i < 0 {
				return starts
			}
			off += i + 1
			starts = append(starts, off)
		}
	}
	starts := []int{0}
	for off := 0; off < len(text); {
		if n := breakLen(text[off:]); n > 0 {
			off += n
			starts = append(starts, off)
			continue
		}
		off++
	}
	return starts
}

// breakLen returns the length of the line break t starts with, 0 if none.
func breakLen(t []byte) int {
	switch {
	case len(t) == 0:
		return 0
	case t[0] == '\n':
		return 1
	case t[0] == '\r':
		if len(t) > 1 && t[1] == '\n' {
			return 2
		}
		return 1
	case bytes.HasPrefix(t, []byte("\u0085")):
		return 2
	case bytes.HasPrefix(t, []byte("\u2028")), bytes.HasPrefix(t, []byte("\u2029")):
		return 3
	}
	return 0
}

// lineEnd returns the offset of the line break that ends the line from
// start to next, the start of the next line.
func (d *doc) lineEnd(start, next int) int {
	for n := 3; n >= 1; n-- {
		if next-n >= start && breakLen(d.src[next-n:next]) == n {
			return next - n
		}
	}
	return next
}

// runeCount is the number of bytes of b that start a rune (what
// utf8.RuneStart says), for text that need not be valid UTF-8.
func runeCount(b []byte) int {
	n := 0
	for len(b) >= 8 {
		if binary.LittleEndian.Uint64(b)&0x8080808080808080 == 0 {
			n += 8 // ASCII
		} else {
			for _, c := range b[:8] {
				if utf8.RuneStart(c) {
					n++
				}
			}
		}
		b = b[8:]
	}
	for _, c := range b {
		if utf8.RuneStart(c) {
			n++
		}
	}
	return n
}

// runeBlock is the distance between rune-count checkpoints.
const runeBlock = 4096

// runesBefore returns the number of runes that start before offset off.
func (d *doc) runesBefore(off int) int {
	n := d.index().runes[off/runeBlock]
	for i := off / runeBlock * runeBlock; i < off; i++ {
		if utf8.RuneStart(d.src[i]) {
			n++
		}
	}
	return n
}

// pos converts a YAML line and column (1-based, column in characters) to
// the byte offset and the 1-based byte column diagnostics use. It costs at
// most a few blocks of bytes, however long the line: a JSON config is
// often one line of many megabytes.
func (d *doc) pos(line, col int) (off, byteCol int) {
	ix := d.index()
	if line < 1 || line > len(ix.lines) {
		return -1, 0
	}
	start := ix.lines[line-1]
	end := len(d.src)
	if line < len(ix.lines) {
		end = d.lineEnd(start, ix.lines[line])
	}
	// The offset of rune number want of the text: find its block, then
	// walk the block.
	want := d.runesBefore(start) + max(col, 1) - 1
	b, _ := slices.BinarySearch(ix.runes, want+1)
	off = max((b-1)*runeBlock, start)
	if off >= end {
		// Past the end of the line: yaml.v3 points there at most.
		return end, end - start + 1
	}
	n := d.runesBefore(off)
	for ; off < end; off++ {
		if utf8.RuneStart(d.src[off]) {
			if n == want {
				break
			}
			n++
		}
	}
	return off, off - start + 1
}

// at makes a diagnostic positioned at n (nil: no position).
func (d *doc) at(n *yaml.Node, path string, code diagCode, format string, args ...any) sc.Diagnostic {
	diag := sc.Diagnostic{Severity: code.severity(), Code: code.String(), Message: fmt.Sprintf(format, args...), Path: path, Offset: -1}
	if n != nil && n.Line > 0 {
		diag.Offset, diag.Column = d.pos(n.Line, n.Column)
		diag.Line = n.Line
	}
	return diag
}

func (d *doc) report(n *yaml.Node, path string, code diagCode, format string, args ...any) {
	if sev := code.severity(); d.full(sev) {
		d.count(sev) // not listed: no message, no position
		return
	}
	d.add(d.at(n, path, code, format, args...))
}

// full reports whether diagnostics of severity sev are only counted now.
func (d *doc) full(sev sc.Severity) bool { return d.shown[sev-sc.Error] >= sc.MaxDiagnostics }

// count counts a diagnostic that is not listed.
func (d *doc) count(sev sc.Severity) {
	if sev == sc.Error {
		d.errors++
	}
	d.omitted[sev-sc.Error]++
}

// add lists diag, or counts it when its severity is full; a count of
// diagnostics left out (from sc.Publish) is added to the config's own.
func (d *doc) add(diag sc.Diagnostic) {
	if e, w := diag.OmittedCounts(); e+w > 0 {
		d.errors += e
		d.omitted[0] += e
		d.omitted[1] += w
		return
	}
	if d.full(diag.Severity) {
		d.count(diag.Severity)
		return
	}
	if diag.Severity == sc.Error {
		d.errors++
	}
	d.shown[diag.Severity-sc.Error]++
	d.ds = append(d.ds, diag)
}

// diagnostics returns what was found, sorted, with at most
// sc.MaxDiagnostics listed.
func (d *doc) diagnostics() sc.Diagnostics {
	ds := d.ds
	if d.omitted[0]+d.omitted[1] > 0 {
		ds = append(ds, sc.Omitted(d.omitted[0], d.omitted[1]))
	}
	ds.Sort()
	return ds.Capped()
}

var yamlLineRE = regexp.MustCompile(`^yaml: (?:line (\d+): )?(.*)$`)

// yamlParserProblem reports whether a YAML error message is one of the
// YAML parser's (as opposed to its scanner's), whose line the library
// reports counted from 0. The list is the parser's messages.
func yamlParserProblem(msg string) bool {
	return slices.Contains([]string{
		"did not find expected ',' or ']'", "did not find expected ',' or '}'",
		"did not find expected '-' indicator", "did not find expected key",
		"did not find expected node content", "found undefined tag handle",
		"did not find expected <document start>", "did not find expected <stream-start>",
		"found duplicate %TAG directive", "found incompatible YAML document",
	}, msg)
}

// parseYAML reads the first YAML (or JSON) document of src, which is
// d.src or its skeleton.
func (d *doc) parseYAML(src []byte) *yaml.Node {
	if root, ok := readNodes(src, d.scratch); ok {
		return deref(root.Content[0])
	}
	dec := yaml.NewDecoder(bytes.NewReader(src))
	var root yaml.Node
	err := dec.Decode(&root)
	if errors.Is(err, io.EOF) {
		d.add(sc.Diagnostic{Severity: codeMissingField.severity(), Code: codeMissingField.String(), Offset: 0, Line: 1, Column: 1,
			Message: "the config is empty: it needs a zones: list (see testdata/publisher/example.yaml)"})
		return nil
	}
	if err != nil {
		line, msg := 0, err.Error()
		if m := yamlLineRE.FindStringSubmatch(msg); m != nil {
			line, _ = strconv.Atoi(m[1])
			msg = m[2]
			if yamlParserProblem(msg) {
				// The YAML library counts lines from 0 for its parser's
				// errors (from 1 for its scanner's): one line too early.
				line++
			}
		}
		diag := sc.Diagnostic{Severity: codeYAMLSyntax.severity(), Code: codeYAMLSyntax.String(), Offset: -1, Message: "cannot parse the config: " + msg}
		if line > 0 {
			diag.Line, diag.Column = line, 1
			diag.Offset, _ = d.pos(line, 1)
		}
		d.add(diag)
		return nil
	}
	var next yaml.Node
	if err := dec.Decode(&next); err == nil {
		d.report(&next, "", codeYAMLSyntax, "the file holds more than one YAML document: put everything in the first one")
	}
	n := &root
	if n.Kind == yaml.DocumentNode && len(n.Content) == 1 {
		n = n.Content[0]
	}
	return deref(n)
}

// deref follows aliases to the node they name.
func deref(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && i < 64; i++ {
		n = n.Alias
	}
	return n
}

// pair is one key and value of a mapping.
type pair struct{ k, v *yaml.Node }

// pairs returns the members of mapping n, expanding YAML merge keys
// ("<<: *defaults"): keys written in n win over merged ones, and earlier
// merge sources over later ones. What merges copy counts against
// d.lim.maxMergedPairs: past it, merge keys are no longer expanded, and
// the config is refused.
func (d *doc) pairs(n *yaml.Node) []pair {
	merges := false
	for i := 0; i+1 < len(n.Content); i += 2 {
		if isMerge(n.Content[i]) {
			merges = true
			break
		}
	}
	if !merges || d.expanded {
		var out []pair
		start := 0
		if sc := d.scratch; sc != nil {
			// Taken from the scratch, which a service's reading empties.
			out, start = sc.pairs, len(sc.pairs)
		} else {
			out = make([]pair, 0, len(n.Content)/2)
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			if !isMerge(n.Content[i]) {
				out = append(out, pair{n.Content[i], n.Content[i+1]})
			}
		}
		if sc := d.scratch; sc != nil {
			sc.pairs = out
		}
		return out[start:len(out):len(out)]
	}
	ps := mergedPairs(n, map[*yaml.Node]bool{})
	if d.mergedPairs += len(ps); d.mergedPairs > d.lim.maxMergedPairs {
		d.tooExpanded(n, fmt.Sprintf("merge keys (<<) copy more than %d keys in total", d.lim.maxMergedPairs))
	}
	return ps
}

func isMerge(k *yaml.Node) bool { return k.Kind == yaml.ScalarNode && k.Tag == "!!merge" }

// tooExpanded refuses a config whose aliases and merge keys expand past
// d.lim, once.
func (d *doc) tooExpanded(n *yaml.Node, what string) {
	if d.expanded {
		return
	}
	d.expanded = true
	line := 0
	if n != nil {
		line = n.Line
	}
	// About the whole config, so placed at its start, where the cap on
	// diagnostics (errors first, by position) keeps it.
	d.ds = append(d.ds, sc.Diagnostic{Severity: codeConfigTooLarge.severity(), Code: codeConfigTooLarge.String(), Offset: 0, Line: 1, Column: 1,
		Message: fmt.Sprintf("%s (reached at line %d): aliases and merge keys count each time they are used, and the publisher reads no more than a config of %d bytes and %d values written out; use them less, or split the zones across several publishers", what, line, MaxConfigSize, MaxConfigNodes)})
	d.errors++
	d.shown[0]++
}

// mergedPairs visits each mapping once, so that a mapping merging itself
// (through an alias) or many merges of the same mapping stay finite.
func mergedPairs(n *yaml.Node, visited map[*yaml.Node]bool) []pair {
	if visited[n] {
		return nil
	}
	visited[n] = true
	var own, merged []pair
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if isMerge(k) {
			for _, src := range mergeSources(v) {
				merged = append(merged, mergedPairs(src, visited)...)
			}
			continue
		}
		own = append(own, pair{k, v})
		seen[k.Value] = true
	}
	for _, p := range merged {
		if !seen[p.k.Value] {
			seen[p.k.Value] = true
			own = append(own, p)
		}
	}
	return own
}

func mergeSources(v *yaml.Node) []*yaml.Node {
	v = deref(v)
	switch {
	case v == nil:
		return nil
	case v.Kind == yaml.MappingNode:
		return []*yaml.Node{v}
	case v.Kind == yaml.SequenceNode:
		var out []*yaml.Node
		for _, e := range v.Content {
			if e = deref(e); e != nil && e.Kind == yaml.MappingNode {
				out = append(out, e)
			}
		}
		return out
	}
	return nil
}

// field is a key a mapping may hold.
type field struct {
	name string
	fn   func(k, v *yaml.Node, path string)
}

// object walks mapping n: every known key's function is called with its
// node; unknown and duplicate keys are reported. what names the mapping in
// messages. It returns the key node of each key present.
func (d *doc) object(n *yaml.Node, path, what string, fields []field) map[string]*yaml.Node {
	known := make([]string, len(fields))
	for i, f := range fields {
		known[i] = f.name
	}
	present := map[string]*yaml.Node{}
	if !d.keys(n, path, what, known, func(i int, k, v *yaml.Node, sub string) {
		present[k.Value] = k
		if i >= 0 {
			fields[i].fn(k, v, sub)
		}
	}) {
		return nil
	}
	return present
}

// keys walks mapping n as object does, with the names of its known keys:
// fn is called with each key's index in known (-1 for an unknown key,
// once reported), its nodes and its path; a key given twice is reported
// and not passed again. It reports whether n is a mapping. A service is
// read with it: it makes no map and no function per key, which was a
// tenth of the allocations of reading a fleet.
func (d *doc) keys(n *yaml.Node, path, what string, known []string, fn func(i int, k, v *yaml.Node, sub string)) bool {
	if !d.mapping(n, path, what) {
		return false
	}
	n = deref(n)
	ps := d.pairs(n)
	var seen map[string]*yaml.Node // for long mappings; short ones are scanned
	if len(ps) > 16 {
		seen = make(map[string]*yaml.Node, len(ps))
	}
	for j, p := range ps {
		key := p.k.Value
		sub := path + "/" + escapePointer(key)
		var first *yaml.Node
		if seen != nil {
			first = seen[key]
			if first == nil {
				seen[key] = p.k
			}
		} else {
			for _, q := range ps[:j] {
				if q.k.Value == key {
					first = q.k
					break
				}
			}
		}
		if first != nil {
			d.report(p.k, sub, codeYAMLDuplicateKey, "%s has the key %q twice (first at line %d): remove one", what, key, first.Line)
			continue
		}
		i := slices.Index(known, key)
		if i < 0 {
			if d.full(codeUnknownKey.severity()) {
				d.count(codeUnknownKey.severity()) // not listed: skip the suggestion
			} else if s := sc.Suggest(key, known); s != "" {
				d.report(p.k, sub, codeUnknownKey, "unknown key %q in %s: did you mean %q?", key, what, s)
			} else {
				d.report(p.k, sub, codeUnknownKey, "unknown key %q in %s: it may hold %s", key, what, strings.Join(known, ", "))
			}
		}
		fn(i, p.k, p.v, sub)
	}
	return true
}

// mapping reports whether n is a mapping, and reports that it should be
// when it is not. Callers that build much for a mapping (a zone, a
// service) ask first: a list of a million scalars is not a million zones.
func (d *doc) mapping(n *yaml.Node, path, what string) bool {
	n = deref(n)
	switch {
	case n != nil && n.Kind == yaml.MappingNode:
		return true
	case d.full(codeFieldType.severity()):
		d.count(codeFieldType.severity())
	default:
		d.report(n, path, codeFieldType, "%s must be a mapping of keys to values, not %s", what, describe(n))
	}
	return false
}

// pointerEscaper escapes a JSON pointer segment (RFC 6901). Built once: a
// replacer per key was a fifth of the time of reading 100 000 services.
var pointerEscaper = strings.NewReplacer("~", "~0", "/", "~1")

func escapePointer(s string) string {
	if !strings.ContainsAny(s, "~/") {
		return s
	}
	return pointerEscaper.Replace(s)
}

// describe names the type of a node for messages.
func describe(n *yaml.Node) string {
	n = deref(n)
	if n == nil {
		return "nothing"
	}
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!null":
			return "null (an empty value)"
		case "!!bool":
			return "the boolean " + n.Value
		case "!!int", "!!float":
			return "the number " + n.Value
		}
		return fmt.Sprintf("the string %q", n.Value)
	}
	return "an unsupported YAML node"
}

// scalar returns the text of a scalar that is not null.
func (d *doc) scalar(n *yaml.Node, path, what string) (string, bool) {
	n = deref(n)
	if n == nil || n.Kind != yaml.ScalarNode || n.ShortTag() == "!!null" {
		d.report(n, path, codeFieldType, "%s must be a single value, not %s", what, describe(n))
		return "", false
	}
	return n.Value, true
}

// list returns the elements of a sequence; a single scalar counts as a
// one-element list, a convenience for "addresses: 10.0.0.1".
func (d *doc) list(n *yaml.Node, path, what string) []*yaml.Node {
	n = deref(n)
	if n != nil && n.Kind == yaml.ScalarNode && n.ShortTag() != "!!null" {
		return []*yaml.Node{n}
	}
	if n == nil || n.Kind != yaml.SequenceNode {
		d.report(n, path, codeFieldType, "%s must be a list, not %s", what, describe(n))
		return nil
	}
	out := make([]*yaml.Node, len(n.Content))
	for i, e := range n.Content {
		out[i] = deref(e)
	}
	return out
}

// elements is list, each element with its JSON pointer: path/i for the
// elements of a sequence, path for a single scalar.
func (d *doc) elements(n *yaml.Node, path, what string) iter.Seq2[string, *yaml.Node] {
	list := d.list(n, path, what)
	seq := deref(n) != nil && deref(n).Kind == yaml.SequenceNode
	return func(yield func(string, *yaml.Node) bool) {
		for i, e := range list {
			p := path
			if seq {
				p = path + "/" + strconv.Itoa(i)
			}
			if !yield(p, e) {
				return
			}
		}
	}
}

func (d *doc) boolean(n *yaml.Node, path, what string) (bool, bool) {
	n = deref(n)
	var b bool
	if n == nil || n.Kind != yaml.ScalarNode || n.ShortTag() != "!!bool" || n.Decode(&b) != nil {
		d.report(n, path, codeFieldType, "%s must be true or false, not %s", what, describe(n))
		return false, false
	}
	return b, true
}

// duration reads a TTL or timer (seconds or "5m") and checks it against
// [lo, hi].
func (d *doc) duration(n *yaml.Node, path, what string, lo, hi uint64) (uint32, bool) {
	s, ok := d.scalar(n, path, what)
	if !ok {
		return 0, false
	}
	v, err := parseTTL(strings.TrimSpace(s))
	if err != nil {
		d.report(n, path, codeDurationSyntax, "%s: %v", what, err)
		return 0, false
	}
	if v < lo || v > hi {
		d.report(n, path, codeTTLRange, "%s is %d seconds: it must be between %d and %d", what, v, lo, hi)
		return 0, false
	}
	return uint32(v), true
}

// jsonMark records that JSON text from byte off on came from a YAML node.
type jsonMark struct {
	off  int
	node *yaml.Node
}

// jsonValue is a YAML subtree converted to compact JSON.
type jsonValue struct {
	text  []byte
	marks []jsonMark
	// lazy is the node left unmade (lazyValue) that text was written
	// from, without marks; nil once they are made (doc.placed).
	lazy *yaml.Node
}

// node returns the YAML node the JSON byte offset off came from.
func (j *jsonValue) node(off int) *yaml.Node {
	i := sort.Search(len(j.marks), func(i int) bool { return j.marks[i].off > off }) - 1
	if i < 0 {
		return nil
	}
	return j.marks[i].node
}

// Limits on a converted subtree: aliases can make a small YAML file expand
// into a huge value ("billion laughs"); no TXT record holds more than 64 KiB.
const (
	maxJSONDepth = 100
	maxJSONSize  = 1 << 20
)

// isJSONNumber reports whether s is a number as JSON writes it:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func isJSONNumber(s string) bool {
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case digitsEnd(s, i) == i:
		return false
	default:
		i = digitsEnd(s, i)
	}
	if i < len(s) && s[i] == '.' {
		if i = digitsEnd(s, i+1); s[i-1] == '.' {
			return false
		}
	}
	i, ok := exponentEnd(s, i)
	return ok && i == len(s)
}

// toJSON converts a YAML subtree to compact JSON, recording where each
// value and key came from. Problems (values JSON cannot represent exactly,
// duplicate keys) are reported; ok is false when any was found.
func (d *doc) toJSON(n *yaml.Node, path string) (j *jsonValue, ok bool) {
	// Sized for a service config: grown a step at a time, they were a
	// tenth of a first start's garbage.
	if sc := d.scratch; sc != nil {
		j = &sc.json
		j.text, j.marks, j.lazy = j.text[:0], j.marks[:0], nil
	} else {
		j = &jsonValue{text: make([]byte, 0, 256), marks: make([]jsonMark, 0, 48)}
	}
	if text, ok := d.lazyText(n); ok {
		// The converter would write the text without its blanks
		// (lazyValue), and find nothing to report, unless the config
		// takes more than the document may expand to: it then runs, to
		// report it where it happens.
		if j.text = compactJSON(j.text, text); d.jsonBytes+len(j.text) <= d.lim.maxExpansion {
			j.lazy = n
			d.jsonBytes += len(j.text)
			return j, true
		}
		j.text = j.text[:0]
	}
	c := &converter{d: d, j: j, ok: true, base: path}
	if sc := d.scratch; sc != nil {
		c.at = sc.at[:0]
		defer func() { sc.at = c.at[:0] }()
	}
	c.value(n, 0)
	d.jsonBytes += len(j.text)
	return j, c.ok
}

// placed returns the node that JSON byte offset off of j came from. A
// value toJSON wrote from its text has no marks: its nodes are made, and
// converted again for them, which gives the same text.
func (d *doc) placed(j *jsonValue, off int) *yaml.Node {
	if n := j.lazy; n != nil {
		d.materialize(n)
		again := &jsonValue{}
		c := &converter{d: newDoc(d.src), j: again, ok: true}
		c.d.lim = d.lim
		c.value(n, 0)
		j.marks, j.lazy = again.marks, nil
	}
	return j.node(off)
}

type converter struct {
	d  *doc
	j  *jsonValue
	ok bool
	// base and at are the JSON pointer of the value being converted,
	// put together only for a diagnostic: a service's config has dozens
	// of values and none of them usually needs its pointer.
	base string
	at   []pathStep
}

// pathStep is a step of a JSON pointer: a member's key, or an element's
// index when key is nil.
type pathStep struct {
	key *string
	idx int
}

func (c *converter) path() string {
	var b strings.Builder
	b.WriteString(c.base)
	for _, s := range c.at {
		b.WriteByte('/')
		if s.key != nil {
			b.WriteString(escapePointer(*s.key))
		} else {
			b.WriteString(strconv.Itoa(s.idx))
		}
	}
	return b.String()
}

func (c *converter) fail(n *yaml.Node, code diagCode, format string, args ...any) {
	c.ok = false
	c.d.report(n, c.path(), code, format, args...)
}

func (c *converter) mark(n *yaml.Node) {
	c.j.marks = append(c.j.marks, jsonMark{len(c.j.text), n})
}

func (c *converter) value(n *yaml.Node, depth int) {
	if !c.ok {
		return
	}
	c.d.materialize(n)
	orig := n
	n = deref(n)
	if n == nil || depth > maxJSONDepth {
		c.fail(orig, codeYAMLValue, "the value nests deeper than %d levels (or its aliases loop): no service config needs that", maxJSONDepth)
		return
	}
	if len(c.j.text) > maxJSONSize {
		c.fail(orig, codeYAMLValue, "the value expands to more than %d bytes of JSON (through aliases?): a TXT record holds at most 64 KiB", maxJSONSize)
		return
	}
	if c.d.jsonBytes+len(c.j.text) > c.d.lim.maxExpansion {
		c.ok = false
		c.d.tooExpanded(orig, fmt.Sprintf("the service configs make more than %d bytes of JSON together (through aliases?)", c.d.lim.maxExpansion))
		return
	}
	c.mark(orig)
	switch n.Kind {
	case yaml.MappingNode:
		c.j.text = append(c.j.text, '{')
		ps := c.d.pairs(n)
		// Duplicates are found by comparing keys, and through a map only
		// in a mapping too long for that.
		var seen map[string]*yaml.Node
		if len(ps) > 16 {
			seen = make(map[string]*yaml.Node, len(ps))
		}
		for i, p := range ps {
			key := p.k.Value
			c.at = append(c.at, pathStep{key: &p.k.Value})
			first, dup := seen[key]
			if seen == nil {
				for _, q := range ps[:i] {
					if q.k.Value == key {
						first, dup = q.k, true
						break
					}
				}
			} else {
				seen[key] = p.k
			}
			if dup {
				c.fail(p.k, codeYAMLDuplicateKey, "the key %q appears twice (first at line %d): gRPC clients reject duplicate keys; remove one", key, first.Line)
				c.at = c.at[:len(c.at)-1] // the enclosing mapping goes on, and reports at its own path
				return
			}
			if i > 0 {
				c.j.text = append(c.j.text, ',')
			}
			c.mark(p.k)
			c.j.text = asciijson.AppendString(c.j.text, key)
			c.j.text = append(c.j.text, ':')
			c.value(p.v, depth+1)
			c.at = c.at[:len(c.at)-1]
		}
		c.j.text = append(c.j.text, '}')
	case yaml.SequenceNode:
		c.j.text = append(c.j.text, '[')
		for i, e := range n.Content {
			if i > 0 {
				c.j.text = append(c.j.text, ',')
			}
			c.at = append(c.at, pathStep{idx: i})
			c.value(e, depth+1)
			c.at = c.at[:len(c.at)-1]
		}
		c.j.text = append(c.j.text, ']')
	case yaml.ScalarNode:
		c.scalar(n)
	default:
		c.fail(n, codeYAMLValue, "unsupported YAML node")
	}
}

func (c *converter) scalar(n *yaml.Node) {
	switch n.ShortTag() {
	case "!!null":
		c.j.text = append(c.j.text, "null"...)
	case "!!bool":
		var b bool
		if err := n.Decode(&b); err != nil {
			c.fail(n, codeYAMLValue, "%q is not a boolean", n.Value)
			return
		}
		c.j.text = strconv.AppendBool(c.j.text, b)
	case "!!int":
		if n.Style == 0 && isJSONNumber(n.Value) {
			c.j.text = append(c.j.text, n.Value...)
			return
		}
		var v int64
		desc := "the number"
		if err := n.Decode(&v); err == nil {
			desc = fmt.Sprintf("the number %d", v)
		}
		c.fail(n, codeYAMLValue, "%s is %s in YAML but not a JSON number: write it in plain decimal (leading zeros mean octal in YAML)", n.Value, desc)
	case "!!float":
		var f float64
		if err := n.Decode(&f); err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			c.fail(n, codeYAMLValue, "%s has no JSON equivalent: JSON numbers are finite", n.Value)
			return
		}
		if isJSONNumber(n.Value) {
			c.j.text = append(c.j.text, n.Value...)
			return
		}
		c.fail(n, codeYAMLValue, "%s is not written as a JSON number: write %s", n.Value, strconv.FormatFloat(f, 'g', -1, 64))
	case "!!binary":
		c.fail(n, codeYAMLValue, "binary values have no JSON equivalent: write a string")
	default: // !!str, !!timestamp and unknown tags keep their text
		c.j.text = asciijson.AppendString(c.j.text, n.Value)
	}
}
