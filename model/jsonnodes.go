package model

import (
	"bytes"
	"encoding/binary"
	"slices"
	"strconv"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/grpc-config-dns/grpc-config-dns/internal/jtree"
)

// Store specs are JSON, and so are configs written as JSON. JSON is YAML,
// and yaml.v3 reads it, slowly: a token queue, an event per value, a
// string per token; a store of 100 000 services spent half of its start
// there. readJSON reads a JSON text with the positioned JSON parser and
// builds the nodes yaml.v3 would build (kind, style, tag, value, line and
// column), so that everything after it is the same code for both. It
// declines what yaml.v3 reads otherwise (FuzzReadJSONAgreesWithYAML): a
// text that is not one JSON array or object, tabs and carriage returns
// (YAML's rules for them in flow collections are not JSON's), the line
// breaks YAML has beyond LF (it folds them inside strings), and the
// escapes yaml.v3 refuses (\\/ and surrogates).

// readNodes returns the document node yaml.v3 would read from text when
// one of the fast readers reads it (readJSON, readFast), or false: then
// yaml.v3 reads it, and says what is wrong with it.
func readNodes(text []byte, scratch *yamlScratch) (*yaml.Node, bool) {
	if scratch != nil {
		// The lazy nodes of the last read are not this one's: the slab
		// they point into is about to be reused.
		scratch.lazy = scratch.lazy[:0]
	}
	if n, ok := readJSON(text, scratch); ok {
		return n, true
	}
	return readFast(text, scratch)
}

// readJSON returns the document node yaml.v3 would read from text, or
// false when text is not JSON it reads alike. With a scratch (nil for
// none), the nodes are its, valid until its next use: a store's start
// reads 100 000 specs, one after the other on each core.
func readJSON(text []byte, scratch *yamlScratch) (*yaml.Node, bool) {
	if !jsonText(text) {
		return nil, false
	}
	t := new(jtree.Tree)
	if scratch != nil {
		t = &scratch.tree
		scratch.lazy = scratch.lazy[:0]
	}
	if t.Reset(text) != nil {
		return nil, false
	}
	c := jsonConverter{t: t, ascii: t.NonASCII < 0, scratch: scratch}
	if scratch != nil {
		c.nodes, c.ptrs = scratch.slab(len(t.Nodes) + 1)
	} else {
		c.nodes, c.ptrs = make([]yaml.Node, len(t.Nodes)+1), make([]*yaml.Node, len(t.Nodes))
	}
	doc := &c.nodes[len(t.Nodes)]
	root := c.node(0)
	if root == nil {
		if scratch != nil {
			scratch.lazy = scratch.lazy[:0] // declined part way: none is this read's
		}
		return nil, false
	}
	*doc = yaml.Node{Kind: yaml.DocumentNode, Line: root.Line, Column: root.Column, Content: []*yaml.Node{root}}
	return doc, true
}

// jsonText reports whether text starts as a JSON array or object and holds
// none of the bytes that YAML reads otherwise than JSON: tabs, carriage
// returns, YAML's other line breaks and a BOM, and the characters the YAML
// reader refuses that JSON strings may hold (DEL, C1 controls, U+FFFE,
// U+FFFF). What is left to tell apart is in the values (jsonConverter).
func jsonText(text []byte) bool {
	start := 0
	for start < len(text) && (text[start] == ' ' || text[start] == '\n') {
		start++
	}
	if start == len(text) || text[start] != '{' && text[start] != '[' {
		return false
	}
	for _, c := range []byte{'\t', '\r', 0x7f} {
		if bytes.IndexByte(text, c) >= 0 {
			return false
		}
	}
	if i := firstNonASCII(text); i >= 0 && !yamlChars(text[i:]) {
		return false
	}
	return !hasSeq(text, "\ufeff")
}

// firstNonASCII returns the offset of the first byte of text past ASCII,
// -1 for none, looking at eight bytes at a time.
func firstNonASCII(text []byte) int {
	i := 0
	for ; i+8 <= len(text); i += 8 {
		if binary.LittleEndian.Uint64(text[i:])&0x8080808080808080 != 0 {
			break
		}
	}
	for ; i < len(text); i++ {
		if text[i] >= 0x80 {
			return i
		}
	}
	return -1
}

// jsonConverter makes the nodes of a JSON tree, all in one allocation,
// and their children's pointers in another.
type jsonConverter struct {
	t     *jtree.Tree
	nodes []yaml.Node
	ptrs  []*yaml.Node
	ascii bool
	// line and lineStart are the line (1-based) and the offset of its
	// start of the last position asked for: nodes come in text order.
	line, lineStart int
	off             int
	// scratch, when not nil, takes the lazy nodes of the root's config
	// members (lazyValue).
	scratch *yamlScratch
}

// pos returns the line and the column, in characters, of offset off.
func (c *jsonConverter) pos(off int) (line, col int) {
	if c.line == 0 {
		c.line = 1
	}
	src := c.t.Src
	for {
		i := bytes.IndexByte(src[c.off:off], '\n')
		if i < 0 {
			break
		}
		c.line++
		c.off += i + 1
		c.lineStart = c.off
	}
	c.off = off
	if c.ascii {
		return c.line, off - c.lineStart + 1
	}
	return c.line, utf8.RuneCount(src[c.lineStart:off]) + 1
}

// node returns the node of tree node i and its children, or nil when
// yaml.v3 would read it otherwise.
func (c *jsonConverter) node(i int32) *yaml.Node {
	jn := &c.t.Nodes[i]
	n := &c.nodes[i]
	n.Line, n.Column = c.pos(int(jn.Start))
	switch jn.Kind {
	case jtree.Object, jtree.Array:
		n.Kind, n.Style, n.Tag = yaml.MappingNode, yaml.FlowStyle, "!!map"
		if jn.Kind == jtree.Array {
			n.Kind, n.Tag = yaml.SequenceNode, "!!seq"
		}
		if jn.Len == 0 {
			return n
		}
		members := int(jn.Len)
		if jn.Kind == jtree.Object {
			members *= 2
		}
		n.Content, c.ptrs = c.ptrs[:0:members], c.ptrs[members:]
		lastKey := int32(-1)
		for k, key := jn.First, true; k >= 0; k, key = c.t.Nodes[k].Next, !key {
			if jn.Kind == jtree.Object && key {
				if !simpleKey(c.t, k) {
					return nil
				}
				lastKey = k
			}
			valueOf := int32(-1) // the key of the member whose value k is
			if jn.Kind == jtree.Object && !key {
				valueOf = lastKey
			}
			kid := c.member(i, k, valueOf)
			if kid == nil {
				return nil
			}
			n.Content = append(n.Content, kid)
		}
	case jtree.String:
		raw := c.t.Raw(i)
		if escapeYAMLRefuses(raw) {
			return nil
		}
		n.Kind, n.Style, n.Tag, n.Value = yaml.ScalarNode, yaml.DoubleQuotedStyle, "!!str", c.t.Str(i)
	default: // numbers, true, false, null: plain scalars, tagged as yaml.v3 resolves them
		n.Kind, n.Value = yaml.ScalarNode, string(c.t.Raw(i))
		n.Tag = n.ShortTag()
	}
	return n
}

// yamlChars reports whether text is UTF-8 of characters YAML allows and
// reads as JSON does: not the C1 controls (U+0085 is also a YAML line
// break), U+2028 and U+2029 (YAML line breaks, folded in strings), U+FFFE
// or U+FFFF. JSON's own controls jtree refuses.
func yamlChars(text []byte) bool {
	for len(text) > 0 {
		r, size := utf8.DecodeRune(text)
		if r == utf8.RuneError && size <= 1 || r >= 0x80 && r < 0xa0 || r == 0x2028 || r == 0x2029 || r == 0xfffe || r == 0xffff {
			return false
		}
		text = text[size:]
	}
	return true
}

// simpleKey reports whether the key node k is one YAML reads as JSON
// does: a key of a flow mapping ends on the line of its ':' and is at
// most 1024 characters long.
func simpleKey(t *jtree.Tree, k int32) bool {
	kn, vn := &t.Nodes[k], &t.Nodes[t.Nodes[k].Next]
	return kn.End-kn.Start <= 1024 && bytes.IndexByte(t.Src[kn.End:vn.Start], '\n') < 0
}

// escapeYAMLRefuses reports whether a JSON string's text holds an escape
// yaml.v3 refuses: \/ (not a YAML escape), or one of a UTF-16 surrogate
// (\uD800 to \uDFFF).
func escapeYAMLRefuses(raw []byte) bool {
	for i := 0; i+1 < len(raw); i++ {
		if raw[i] != '\\' {
			continue
		}
		i++
		switch raw[i] {
		case '/':
			return true
		case 'u':
			if i+2 < len(raw) && (raw[i+1] == 'd' || raw[i+1] == 'D') && bytes.IndexByte([]byte("89abAB"), raw[i+2]) >= 0 {
				return true
			}
		}
	}
	return false
}

// A service's config is most of its nodes, and they are made only to be
// turned back into JSON (toJSON): at a store's start, 100 000 times, a
// fifth of the cost of validating a spec. So with a scratch, the value of
// a root object's serviceConfig or choices member is left unmade when
// toJSON of it is its text without blanks (lazyValue): the node has its
// kind and place but no content, toJSON writes it from the text, and
// whatever needs its content makes it first (doc.materialize): the
// converter, and a diagnostic's place.

// member returns the node of tree node k, a child of node i: left unmade
// when it is the value (of key valueOf) of a root's config member that
// may be, made else.
func (c *jsonConverter) member(i, k, valueOf int32) *yaml.Node {
	if i == 0 && valueOf >= 0 && c.scratch != nil && configKey(c.t.Raw(valueOf)) && c.lazyValue(k) {
		return c.lazy(k)
	}
	return c.node(k)
}

// lazyNode is a node left unmade, and the tree node it stands for.
type lazyNode struct {
	node *yaml.Node
	idx  int32
}

// configKey reports whether raw is the key of a service's config.
func configKey(raw []byte) bool {
	return string(raw) == `"serviceConfig"` || string(raw) == `"choices"`
}

// lazyValue reports whether the tree node v may be left unmade: an object
// or an array whose conversion is its text without blanks, which is so
// when it is ASCII without escapes (strings and keys are written back as
// they are), its numbers have no exponent (one could overflow, which the
// converter refuses), its keys are ones YAML reads as JSON does, and it
// nests no deeper than the converter allows.
func (c *jsonConverter) lazyValue(v int32) bool {
	n := &c.t.Nodes[v]
	if n.Kind != jtree.Object && n.Kind != jtree.Array || !c.ascii || n.End-n.Start > maxJSONSize {
		return false
	}
	if bytes.IndexByte(c.t.Src[n.Start:n.End], '\\') >= 0 {
		return false
	}
	return plainJSON(c.t, v, 0)
}

func plainJSON(t *jtree.Tree, i int32, depth int) bool {
	if depth > maxJSONDepth {
		return false
	}
	n := &t.Nodes[i]
	switch n.Kind {
	case jtree.Number:
		// YAML reads a number float64 cannot hold as a string, which
		// the converter quotes: only a long one can be such.
		raw := t.Raw(i)
		if len(raw) > 20 {
			if _, err := strconv.ParseFloat(string(raw), 64); err != nil {
				return false
			}
		}
		return !bytes.ContainsAny(raw, "eE")
	case jtree.Object, jtree.Array:
		for k, key := n.First, true; k >= 0; k, key = t.Nodes[k].Next, !key {
			if n.Kind == jtree.Object && key {
				if !simpleKey(t, k) {
					return false
				}
				continue
			}
			if !plainJSON(t, k, depth+1) {
				return false
			}
		}
	}
	return true
}

// lazy returns the node of tree node v, left unmade.
func (c *jsonConverter) lazy(v int32) *yaml.Node {
	jn := &c.t.Nodes[v]
	n := &c.nodes[v]
	n.Line, n.Column = c.pos(int(jn.Start))
	n.Kind, n.Style, n.Tag = yaml.MappingNode, yaml.FlowStyle, "!!map"
	if jn.Kind == jtree.Array {
		n.Kind, n.Tag = yaml.SequenceNode, "!!seq"
	}
	c.scratch.lazy = append(c.scratch.lazy, lazyNode{node: n, idx: v})
	return n
}

// lazyText returns the text of n when it is a node left unmade.
func (d *doc) lazyText(n *yaml.Node) ([]byte, bool) {
	if d.scratch == nil {
		return nil, false
	}
	for _, l := range d.scratch.lazy {
		if l.node == n {
			jn := &d.scratch.tree.Nodes[l.idx]
			return d.scratch.tree.Src[jn.Start:jn.End], true
		}
	}
	return nil, false
}

// materialize makes the content of n if it was left unmade (lazyValue),
// in nodes of its own: the scratch's are in use.
func (d *doc) materialize(n *yaml.Node) {
	if d.scratch == nil {
		return
	}
	for i, l := range d.scratch.lazy {
		if l.node != n {
			continue
		}
		t := &d.scratch.tree
		c := jsonConverter{t: t, ascii: true, nodes: make([]yaml.Node, len(t.Nodes)), ptrs: make([]*yaml.Node, len(t.Nodes))}
		// Lines are counted from the start of the text: the converter
		// only moves forward. The node was placed in the file since
		// (itemEntry's shiftPos of an item's nodes): its content is moved
		// as it was.
		if made := c.node(l.idx); made != nil {
			lines, cols := n.Line-made.Line, 0
			if made.Line == 1 {
				cols = n.Column - made.Column
			}
			for _, k := range made.Content {
				shiftPos(k, lines, cols)
			}
			n.Content = made.Content
		}
		d.scratch.lazy = slices.Delete(d.scratch.lazy, i, i+1)
		return
	}
}

// compactJSON appends src, JSON whose only blanks are spaces and line
// feeds (jsonText), without the blanks outside its strings.
func compactJSON(dst, src []byte) []byte {
	for len(src) > 0 {
		i := bytes.IndexAny(src, " \n\"")
		if i < 0 {
			return append(dst, src...)
		}
		dst = append(dst, src[:i]...)
		if src[i] != '"' {
			src = src[i+1:]
			continue
		}
		// Strings here hold no escapes (lazyValue): the next quote ends it.
		end := bytes.IndexByte(src[i+1:], '"') + i + 2
		dst = append(dst, src[i:end]...)
		src = src[end:]
	}
	return dst
}
