package model

import (
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/grpc-config-dns/grpc-config-dns/internal/jtree"
	"github.com/grpc-config-dns/grpc-config-dns/serviceconfig/policy"
)

// A first start of 100 000 services spent a third of its reading in
// yaml.v3, which builds a token queue, an event per value and a string per
// token for every service. The items of a services list are written in a
// small part of YAML: block mappings and sequences, one-line flow
// collections, one-line scalars. readFast reads exactly that part, in one
// pass over the bytes, and builds the nodes yaml.v3 would build (kind,
// style, tag, value, line and column; comments are skipped, as nothing
// here reads them). Anything outside that part (block scalars, multi-line
// scalars or flow collections, escapes, tags, anchors, explicit keys,
// empty values, characters beyond ASCII, documents markers) makes it give
// up, and the item is read by yaml.v3 as before: readFast never reads a
// text differently from yaml.v3, it only declines
// (FuzzReadFastAgreesWithYAML).

// fastReader is the state of one readFast.
type fastReader struct {
	s []byte
	i int // offset of the next byte
	// line is the 1-based line of the byte at lineStart.
	line, lineStart int
	// indent is the indentation of the line i is on, once i is at its
	// first content (after next).
	indent int
	eof    bool
	bad    bool
	depth  int          // of the collections being read
	slab   []yaml.Node  // nodes to hand out
	pslab  []*yaml.Node // room for the nodes' Content
	stack  []*yaml.Node // the children of the collections being read
}

// A yamlScratch is memory readFast reuses from one text to the next, for
// a goroutine that reads many: the nodes of a services item are garbage
// once it is read (readItem keeps none of them), and making them anew for
// every item was half of readFast's time and most of its garbage. The
// nodes of a read are valid until the next read with the same scratch.
type yamlScratch struct {
	nodes []yaml.Node
	ptrs  []*yaml.Node
	stack []*yaml.Node
	// tree is the JSON parser's, for readJSON.
	tree jtree.Tree
	// doc and json are what reading a service needs besides its nodes:
	// a doc of its own, and the buffers of its config converted to JSON
	// (a kilobyte a service, made and dropped 100 000 times at a start).
	doc  doc
	json jsonValue
	at   []pathStep // the converter's path
	// pairs holds the pairs of the mappings of the service being read
	// (doc.pairs).
	pairs []pair
	// keys are the policyKeys of the services read, by the stack of
	// policies that selected them: one string for all those a stack
	// selects, not one a service.
	keys map[*policy.Stack]string
	// lazy are the nodes the last read left unmade (lazyNode).
	lazy []lazyNode
	// added and content are addMember's.
	added   [2]yaml.Node
	content []*yaml.Node
}

// policyKey is z.policyKey(t), the same string for every service that
// the same policies select.
func (s *yamlScratch) policyKey(z *Zone, t policy.Target) string {
	if z.PolicySet == nil {
		return ""
	}
	if s == nil {
		return z.policyKey(t)
	}
	st := z.PolicySet.StackFor(t)
	if k, ok := s.keys[st]; ok {
		return k
	}
	if s.keys == nil {
		s.keys = map[*policy.Stack]string{}
	}
	k := z.policyKey(t)
	s.keys[st] = k
	return k
}

// slab returns n nodes and n pointers to nodes, cleared, from the
// scratch's memory, grown as needed.
func (s *yamlScratch) slab(n int) ([]yaml.Node, []*yaml.Node) {
	if cap(s.nodes) < n {
		s.nodes = make([]yaml.Node, n)
	}
	if cap(s.ptrs) < n {
		s.ptrs = make([]*yaml.Node, n)
	}
	nodes, ptrs := s.nodes[:n], s.ptrs[:n]
	clear(nodes)
	clear(ptrs)
	return nodes, ptrs
}

// readFast returns the document node yaml.v3 would read from text, or
// false when text is not in the part of YAML it reads. With a scratch
// (nil for none), the nodes are valid until its next use.
func readFast(text []byte, scratch *yamlScratch) (*yaml.Node, bool) {
	for _, b := range text {
		if b >= 0x7f || b < ' ' && b != '\n' {
			return nil, false
		}
	}
	// One allocation for the nodes (a key and its value are two, an entry
	// or a flow element one), one for their children's pointers.
	nodes := 4
	for _, b := range text {
		switch b {
		case ':':
			nodes += 2
		case ',', '-', '[', '{':
			nodes++
		}
	}
	if scratch == nil {
		scratch = &yamlScratch{}
	}
	if cap(scratch.nodes) < nodes {
		scratch.nodes = make([]yaml.Node, nodes)
	}
	if cap(scratch.ptrs) < nodes {
		scratch.ptrs = make([]*yaml.Node, nodes)
	}
	r := &fastReader{s: text, line: 1, indent: -1, slab: scratch.nodes[:nodes], pslab: scratch.ptrs[:nodes], stack: scratch.stack[:0]}
	defer func() { scratch.stack = r.stack[:0] }()
	r.next()
	if r.eof {
		return nil, false
	}
	doc := r.node(yaml.DocumentNode, "", "")
	top := r.block(-1)
	if r.bad || !r.eof {
		return nil, false
	}
	r.stack = append(r.stack, top)
	doc.Content = r.children(0)
	return doc, true
}

// children returns the nodes on the stack from mark, as a Content slice,
// and takes them off.
func (r *fastReader) children(mark int) []*yaml.Node {
	kids := r.stack[mark:]
	if len(kids) == 0 {
		return nil
	}
	if len(kids) > len(r.pslab) {
		r.pslab = make([]*yaml.Node, max(len(kids), 64))
	}
	out := r.pslab[:len(kids):len(kids)]
	r.pslab = r.pslab[len(kids):]
	copy(out, kids)
	clear(kids)
	r.stack = r.stack[:mark]
	return out
}

func (r *fastReader) fail() *yaml.Node {
	r.bad = true
	return nil
}

// node returns a new node at the reader's position.
func (r *fastReader) node(kind yaml.Kind, tag, value string) *yaml.Node {
	if len(r.slab) == 0 {
		r.slab = make([]yaml.Node, 16)
	}
	n := &r.slab[0]
	r.slab = r.slab[1:]
	*n = yaml.Node{Kind: kind, Tag: tag, Value: value, Line: r.line, Column: r.i - r.lineStart + 1}
	return n
}

func (r *fastReader) at(k int) byte {
	if r.i+k < len(r.s) {
		return r.s[r.i+k]
	}
	return 0
}

// spaceOrEnd reports whether the byte at k ends a token: a space, a line
// end or the text's end.
func (r *fastReader) spaceOrEnd(k int) bool {
	b := r.at(k)
	return b == ' ' || b == '\n' || b == 0
}

func (r *fastReader) skipSpaces() {
	for r.i < len(r.s) && r.s[r.i] == ' ' {
		r.i++
	}
}

// next moves past the rest of the current line (which must be spaces or
// a comment) and the blank and comment lines after it, to the first
// content of the next line, and sets indent (or eof).
func (r *fastReader) next() {
	for {
		r.skipSpaces()
		if r.i == len(r.s) {
			r.eof = true
			return
		}
		switch b := r.s[r.i]; {
		case b == '#' && (r.i == r.lineStart || r.s[r.i-1] == ' '):
			for r.i < len(r.s) && r.s[r.i] != '\n' {
				r.i++
			}
			continue
		case b != '\n':
			if r.i == r.lineStart || r.indent < 0 {
				// Content where the line starts: the line's first.
				r.indent = r.i - r.lineStart
				if r.indent == 0 && (r.startsWith("---") || r.startsWith("...")) {
					r.bad = true
				}
				return
			}
			// Mid-line: every caller ends a value's line (nextLine) before
			// it asks for the next, so this would be a bug; declining keeps
			// it from reading on.
			r.bad = true
			r.eof = true
			return
		}
		r.i++
		r.line++
		r.lineStart = r.i
		r.indent = -1
	}
}

// nextLine ends the value just read: the rest of its line must be spaces
// or a comment.
func (r *fastReader) nextLine() {
	r.skipSpaces()
	if r.i < len(r.s) && r.s[r.i] != '\n' && !(r.s[r.i] == '#' && r.s[r.i-1] == ' ') {
		r.bad, r.eof = true, true
		return
	}
	for r.i < len(r.s) && r.s[r.i] != '\n' {
		r.i++
	}
	r.indent = -1
	r.next()
}

func (r *fastReader) startsWith(p string) bool {
	return strings.HasPrefix(string(r.s[r.i:min(len(r.s), r.i+len(p)+1)]), p) && r.spaceOrEnd(len(p))
}

// block reads the value that starts at the reader's position (the first
// content of a line, or what follows "- " or "key: " on one), inside a
// collection indented by parent.
func (r *fastReader) block(parent int) *yaml.Node {
	col := r.i - r.lineStart
	if r.at(0) == '-' && r.spaceOrEnd(1) {
		return r.sequence(col)
	}
	if r.keyAhead() {
		return r.mapping(col)
	}
	n := r.inline(false)
	if r.bad {
		return nil
	}
	r.nextLine()
	if !r.eof && r.indent > parent {
		return r.fail() // a scalar continued on the next line, or a mistake
	}
	return n
}

// sequence reads a block sequence whose "-" are at column col.
func (r *fastReader) sequence(col int) *yaml.Node {
	n := r.node(yaml.SequenceNode, "!!seq", "")
	if !r.enter() {
		return nil
	}
	defer r.leave()
	mark := len(r.stack)
	for !r.bad {
		r.i++ // the "-"
		r.skipSpaces()
		var e *yaml.Node
		if r.at(0) == '\n' || r.at(0) == 0 || r.at(0) == '#' {
			r.nextLine()
			if r.eof || r.indent <= col {
				return r.fail() // an empty entry
			}
		}
		e = r.block(col)
		if r.bad {
			return nil
		}
		r.stack = append(r.stack, e)
		if r.eof || r.indent < col {
			n.Content = r.children(mark)
			return n
		}
		if r.indent > col {
			return r.fail()
		}
		if !(r.at(0) == '-' && r.spaceOrEnd(1)) {
			n.Content = r.children(mark)
			return n // a key beside the sequence, which was its value
		}
	}
	return nil
}

// mapping reads a block mapping whose keys are at column col.
func (r *fastReader) mapping(col int) *yaml.Node {
	n := r.node(yaml.MappingNode, "!!map", "")
	if !r.enter() {
		return nil
	}
	defer r.leave()
	mark := len(r.stack)
	for !r.bad {
		k := r.key()
		if k == nil {
			return r.fail()
		}
		var v *yaml.Node
		r.skipSpaces()
		switch {
		case r.at(0) == '\n' || r.at(0) == 0 || r.at(0) == '#':
			r.nextLine()
			switch {
			case r.eof || r.indent < col:
				return r.fail() // an empty value
			case r.indent > col:
				v = r.block(col)
			case r.at(0) == '-' && r.spaceOrEnd(1):
				v = r.sequence(col) // "key:\n- a": the entries beside the key
			default:
				return r.fail()
			}
		case r.at(0) == '-' && r.spaceOrEnd(1):
			return r.fail()
		default:
			v = r.inline(false)
			if r.bad {
				return nil
			}
			r.nextLine()
			if !r.eof && r.indent > col {
				return r.fail()
			}
		}
		if r.bad {
			return nil
		}
		r.stack = append(r.stack, k, v)
		if r.eof || r.indent < col {
			n.Content = r.children(mark)
			return n
		}
		if r.indent > col {
			return r.fail()
		}
	}
	return nil
}

// maxFastDepth is how deep readFast reads collections: yaml.v3 refuses
// more than 10 000 levels, with its own message; past this, it is left to
// say so.
const maxFastDepth = 1000

// enter counts a collection being read, and fails the read past
// maxFastDepth.
func (r *fastReader) enter() bool {
	r.depth++
	if r.depth > maxFastDepth {
		r.bad = true
		return false
	}
	return true
}

func (r *fastReader) leave() { r.depth-- }

// keyAhead reports whether the line from the reader's position is a key
// and its ":".
func (r *fastReader) keyAhead() bool {
	save := *r // and the slab: the key's node is made again
	k := r.key()
	ok := k != nil && !r.bad
	*r = save
	return ok
}

// key reads a one-line scalar and the ": " after it.
func (r *fastReader) key() *yaml.Node {
	start := r.i
	var k *yaml.Node
	switch r.at(0) {
	case '\'', '"':
		k = r.quoted()
		if k == nil {
			return nil
		}
		r.skipSpaces()
	default:
		k = r.plain(false, true)
		if k == nil {
			return nil
		}
		r.skipSpaces()
	}
	// yaml.v3 takes a key of at most 1024 characters on one line.
	if r.i-start > 1000 || r.at(0) != ':' || !r.spaceOrEnd(1) {
		r.bad = true
		return nil
	}
	r.i++
	return k
}

// inline reads a scalar or a one-line flow collection.
func (r *fastReader) inline(flow bool) *yaml.Node {
	switch r.at(0) {
	case '[':
		return r.flow(yaml.SequenceNode)
	case '{':
		return r.flow(yaml.MappingNode)
	case '\'', '"':
		n := r.quoted()
		if n == nil {
			return r.fail()
		}
		return n
	}
	n := r.plain(flow, false)
	if n == nil {
		return r.fail()
	}
	return n
}

// flow reads a one-line flow sequence ("[a, b]") or flow mapping
// ("{k: v}"), as kind says.
func (r *fastReader) flow(kind yaml.Kind) *yaml.Node {
	tag, end := "!!seq", byte(']')
	if kind == yaml.MappingNode {
		tag, end = "!!map", '}'
	}
	n := r.node(kind, tag, "")
	n.Style = yaml.FlowStyle
	if !r.enter() {
		return nil
	}
	defer r.leave()
	mark := len(r.stack)
	r.i++
	r.skipSpaces()
	if r.at(0) == end {
		r.i++
		return n
	}
	for {
		if kind == yaml.MappingNode {
			k := r.flowKey()
			if k == nil {
				return r.fail()
			}
			r.stack = append(r.stack, k)
		}
		v := r.inline(true)
		if r.bad {
			return nil
		}
		r.stack = append(r.stack, v)
		if !r.flowSeparator(end) {
			break
		}
	}
	if r.bad {
		return nil
	}
	n.Content = r.children(mark)
	return n
}

// flowKey reads a flow mapping's key and the ": " after it (nil when
// they are not there).
func (r *fastReader) flowKey() *yaml.Node {
	var k *yaml.Node
	start := r.i
	switch r.at(0) {
	case '\'', '"':
		k = r.quoted()
	default:
		k = r.plain(true, true)
	}
	if k == nil {
		return nil
	}
	r.skipSpaces()
	// yaml.v3 takes a key of at most 1024 characters, as in a block.
	if r.i-start > 1000 || r.at(0) != ':' || r.at(1) != ' ' {
		return nil
	}
	r.i++
	r.skipSpaces()
	return k
}

// flowSeparator reads what follows an element of a flow collection that
// close ends: a "," before another element (true), or close (false; bad
// for anything else, and for a "," before close, left to yaml.v3).
func (r *fastReader) flowSeparator(close byte) (more bool) {
	r.skipSpaces()
	switch r.at(0) {
	case ',':
		r.i++
		r.skipSpaces()
		if r.at(0) == close {
			r.bad = true
			return false
		}
		return true
	case close:
		r.i++
		return false
	}
	r.bad = true
	return false
}

// quoted reads a one-line quoted scalar without escapes (but a doubled
// quote in single quotes).
func (r *fastReader) quoted() *yaml.Node {
	q := r.at(0)
	n := r.node(yaml.ScalarNode, "!!str", "")
	if q == '"' {
		n.Style = yaml.DoubleQuotedStyle
	} else {
		n.Style = yaml.SingleQuotedStyle
	}
	start := r.i + 1
	doubled := false
	for j := start; j < len(r.s); j++ {
		switch b := r.s[j]; {
		case b == '\n' || b == '\\' && q == '"':
			return nil
		case b == q && q == '\'' && j+1 < len(r.s) && r.s[j+1] == '\'':
			doubled = true
			j++
		case b == q:
			v := string(r.s[start:j])
			if doubled {
				v = strings.ReplaceAll(v, "''", "'")
			}
			n.Value = v
			r.i = j + 1
			return n
		}
	}
	return nil
}

// plain reads a one-line plain scalar: in a flow collection when flow,
// and as a key when key (which ends at ": ").
func (r *fastReader) plain(flow, key bool) *yaml.Node {
	switch b := r.at(0); b {
	case 0, '\n', ' ', '?', ':', ',', '[', ']', '{', '}', '#', '&', '*', '!', '|', '>', '\'', '"', '%', '@', '`':
		return nil
	case '-':
		if r.spaceOrEnd(1) || flow && strings.IndexByte(",[]{}", r.at(1)) >= 0 {
			return nil
		}
	}
	start, end := r.i, r.i
	j := r.i
scan:
	for ; j < len(r.s); j++ {
		switch b := r.s[j]; b {
		case '\n':
			break scan
		case ' ':
			continue
		case ':':
			next := byte(0)
			if j+1 < len(r.s) {
				next = r.s[j+1]
			}
			if next == ' ' || next == '\n' || next == 0 {
				break scan
			}
			if flow {
				return nil
			}
		case '#':
			if r.s[j-1] == ' ' {
				break scan
			}
		case ',', '[', ']', '{', '}', '?':
			if flow {
				break scan
			}
		}
		end = j + 1
	}
	if key && (j == len(r.s) || r.s[j] != ':') {
		return nil
	}
	r.i = end
	v := r.s[start:end]
	n := r.node(yaml.ScalarNode, "", "")
	n.Line, n.Column = r.line, start-r.lineStart+1
	if key {
		n.Value = internKey(v)
	} else {
		n.Value = string(v)
	}
	n.Tag = plainTag(n)
	return n
}

// commonKeys are the keys of a services item, by length: one string
// each, not one per service, found without hashing.
var commonKeys = func() (byLen [32][]string) {
	for _, k := range []string{"name", "addresses", "serviceConfig", "choices", "record", "srv", "port", "ttl", "compat",
		"methodConfig", "service", "method", "timeout", "retryPolicy", "maxAttempts", "initialBackoff", "maxBackoff",
		"backoffMultiplier", "retryableStatusCodes", "hedgingPolicy", "hedgingDelay", "nonFatalStatusCodes",
		"waitForReady", "maxRequestMessageBytes", "maxResponseMessageBytes", "loadBalancingConfig", "loadBalancingPolicy",
		"round_robin", "pick_first", "retryThrottling", "maxTokens", "tokenRatio", "healthCheckConfig", "serviceName",
		"clientLanguage", "percentage", "clientHostname", "headerExtraction", "dynamicParameterConstraints"} {
		byLen[len(k)] = append(byLen[len(k)], k)
	}
	return byLen
}()

func internKey(v []byte) string {
	if len(v) < len(commonKeys) {
		for _, k := range commonKeys[len(v)] {
			if string(v) == k {
				return k
			}
		}
	}
	return string(v)
}

// plainTag is the tag yaml.v3 resolves plain scalar n to: its resolve
// table (null, bool, the special floats and "<<") by name, and yaml.v3
// itself for a text that may be a number or a timestamp; one that starts
// as a number but holds a byte none has ("1s", "10.0.0.1") is a string
// without asking (yaml.v3 would allocate strconv's errors).
func plainTag(n *yaml.Node) string {
	v := n.Value
	switch v {
	case "", "~", "null", "Null", "NULL":
		return "!!null"
	case "true", "True", "TRUE", "false", "False", "FALSE":
		return "!!bool"
	case ".nan", ".NaN", ".NAN", ".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF", "-.inf", "-.Inf", "-.INF":
		return "!!float"
	case "<<":
		return "!!merge"
	}
	if b := v[0]; b != '.' && b != '-' && b != '+' && (b < '0' || b > '9') {
		return "!!str"
	}
	digits, dots := len(v) <= 18 && (len(v) == 1 || v[0] != '0'), 0
	for i := 0; i < len(v); i++ {
		digits = digits && v[i] >= '0' && v[i] <= '9'
		if v[i] == '.' {
			dots++
		}
		if (!numberByte[v[i]] || dots > 1) && (len(v) < 5 || v[4] != '-') {
			return "!!str" // no number nor timestamp ("1s", "10.0.0.1")
		}
	}
	if digits { // a decimal integer
		return "!!int"
	}
	return n.ShortTag()
}

// numberByte are the bytes of yaml.v3's integers and floats.
var numberByte = func() (t [256]bool) {
	for _, b := range []byte("0123456789abcdefABCDEFxXoO+-_.") {
		t[b] = true
	}
	return t
}()

// digitsEnd returns where the decimal digits from s[i] on end.
func digitsEnd(s string, i int) int {
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return i
}

// exponentEnd returns where an exponent ([eE][-+]?[0-9]+) at s[i] ends (i
// when there is none), and false for an "e" without digits.
func exponentEnd(s string, i int) (int, bool) {
	if i == len(s) || s[i] != 'e' && s[i] != 'E' {
		return i, true
	}
	i++
	if i < len(s) && (s[i] == '-' || s[i] == '+') {
		i++
	}
	start := i
	i = digitsEnd(s, i)
	return i, i > start
}
