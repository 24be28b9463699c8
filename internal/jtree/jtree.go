// Package jtree parses JSON text into a flat tree that remembers where every
// value sits in the source.
//
// encoding/json cannot do what a validator of service configs needs: it
// forgets positions, silently keeps the last of two duplicate keys, and
// allocates a map per object. jtree parses strictly (RFC 8259, duplicate
// keys rejected, nesting bounded), stores every node in one slice, and leaves
// strings and numbers as byte ranges of the source, decoded only when asked.
// Parsing a typical record costs a handful of allocations.
package jtree

import (
	"bytes"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Kind is the JSON type of a node.
type Kind uint8

// The JSON kinds.
const (
	Null Kind = iota + 1
	Bool
	Number
	String
	Array
	Object
)

func (k Kind) String() string {
	switch k {
	case Null:
		return "null"
	case Bool:
		return "boolean"
	case Number:
		return "number"
	case String:
		return "string"
	case Array:
		return "array"
	case Object:
		return "object"
	}
	return "invalid"
}

// MaxDepth bounds nesting so that hostile input cannot exhaust the stack.
// Real service configs nest fewer than 12 levels.
const MaxDepth = 128

const (
	flagEscaped = 1 << iota // string contains escapes
	flagTrue                // boolean true
	flagFrac                // number has a fraction or exponent
	flagNeg                 // number is negative
)

// Node is one JSON value. Object members are stored as a key node (Kind
// String) whose Next is the value node, whose Next is the following key.
type Node struct {
	Kind  Kind
	flags uint8
	// Start and End delimit the value's text in the source: [Start, End).
	Start, End int32
	// First is the first element (array) or first key (object), or -1.
	First int32
	// Next is the following sibling, or -1.
	Next int32
	// Len is the number of elements or members.
	Len int32
}

// Tree is a parsed JSON document. Node 0 is the root.
type Tree struct {
	Src   []byte
	Nodes []Node
	// NonASCII is the offset of the first byte >= 0x80 in the source, or -1.
	NonASCII int
}

// Error is a syntax error at a byte offset of the source.
type Error struct {
	Offset int
	// Code is a stable identifier: json-syntax, json-duplicate-key or
	// json-too-deep.
	Code string
	Msg  string
	// Other is the offset of the first of two duplicate keys, or -1.
	Other int
}

func (e *Error) Error() string { return fmt.Sprintf("offset %d: %s", e.Offset, e.Msg) }

type parser struct {
	src      []byte
	pos      int
	nodes    []Node
	nonASCII int
	err      *Error
}

// Parse parses src as one JSON value surrounded by optional whitespace.
func Parse(src []byte) (*Tree, error) {
	t := &Tree{}
	if err := t.Reset(src); err != nil {
		return nil, err
	}
	return t, nil
}

// Reset parses src into t, reusing t's node storage.
func (t *Tree) Reset(src []byte) error {
	// Typical records fit the guess of a node per 8 bytes; for large
	// inputs, which may be made of tiny values, count (see nodeBound).
	n := max(len(src)/8, 16)
	if len(src) > boundAbove {
		n = nodeBound(src)
	}
	p := parser{src: src, nodes: t.Nodes[:0], nonASCII: -1}
	if cap(p.nodes) < n {
		p.nodes = make([]Node, 0, n)
	}
	p.skipWS()
	p.value(0)
	if p.err == nil {
		p.skipWS()
		if p.pos < len(p.src) {
			p.fail(p.pos, "json-syntax", fmt.Sprintf("unexpected %s after the end of the JSON value", p.describe(p.pos)))
		}
	}
	t.Src, t.Nodes, t.NonASCII = src, p.nodes, p.nonASCII
	if p.err != nil {
		return p.err
	}
	return nil
}

// boundAbove is the input size above which Reset counts nodes first.
const boundAbove = 8 << 10

// nodeBound returns an upper bound of the number of nodes src parses
// into, from one scan for the bytes that start values outside strings:
// the root, one node per array element (a ',' of the array, or the '['
// before the first), two per object member (its ':'). Allocating the nodes once
// keeps the parser's memory at 24 bytes a node, where growing the slice
// costs several times that on inputs made of tiny values.
//
// The scan costs about a fifth of a parse, so it is made only above
// boundAbove bytes.
func nodeBound(src []byte) int {
	n := 1
	// inObject[d] tells whether the container at depth d is an object,
	// whose commas the colons already count. Past MaxDepth the parse
	// fails, so the count need not be tight there.
	var inObject [MaxDepth + 2]bool
	depth := 0
	for i := 0; i < len(src); i++ {
		switch src[i] {
		case '"':
			for i++; i < len(src) && src[i] != '"'; i++ {
				if src[i] == '\\' {
					i++
				}
			}
		case '[', '{':
			if src[i] == '[' {
				n++
			}
			if depth < len(inObject)-1 {
				depth++
				inObject[depth] = src[i] == '{'
			}
		case ']', '}':
			if depth > 0 {
				depth--
			}
		case ',':
			if !inObject[depth] {
				n++
			}
		case ':':
			n += 2
		}
	}
	return n
}

func (p *parser) fail(off int, code, msg string) {
	if p.err == nil {
		p.err = &Error{Offset: off, Code: code, Msg: msg, Other: -1}
	}
}

func (p *parser) describe(off int) string {
	if off >= len(p.src) {
		return "end of input"
	}
	c := p.src[off]
	if c < 0x20 || c >= 0x7f {
		return fmt.Sprintf("byte 0x%02x", c)
	}
	return strconv.QuoteRune(rune(c))
}

func (p *parser) skipWS() {
	for p.pos < len(p.src) {
		switch p.src[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

func (p *parser) add(k Kind, start int) int32 {
	i := len(p.nodes)
	if i == cap(p.nodes) {
		p.nodes = append(p.nodes, Node{})[:i]
	}
	p.nodes = p.nodes[:i+1]
	p.nodes[i] = Node{Kind: k, Start: int32(start), First: -1, Next: -1}
	return int32(i)
}

// value parses one value at p.pos (whitespace already skipped).
func (p *parser) value(depth int) int32 {
	if p.pos >= len(p.src) {
		p.fail(p.pos, "json-syntax", "unexpected end of input: expected a JSON value")
		return -1
	}
	start := p.pos
	switch c := p.src[p.pos]; c {
	case '{':
		return p.object(depth + 1)
	case '[':
		return p.array(depth + 1)
	case '"':
		i := p.add(String, start)
		p.str(i)
		p.nodes[i].End = int32(p.pos)
		return i
	case 't':
		return p.literal("true", Bool, flagTrue)
	case 'f':
		return p.literal("false", Bool, 0)
	case 'n':
		return p.literal("null", Null, 0)
	default:
		if c == '-' || (c >= '0' && c <= '9') {
			return p.number()
		}
		msg := fmt.Sprintf("unexpected %s: expected a JSON value", p.describe(start))
		if c == '\'' {
			msg += " (JSON strings use double quotes)"
		}
		p.fail(start, "json-syntax", msg)
		return -1
	}
}

func (p *parser) literal(word string, k Kind, flags uint8) int32 {
	start := p.pos
	if len(p.src)-start < len(word) || string(p.src[start:start+len(word)]) != word {
		p.fail(start, "json-syntax", fmt.Sprintf("unexpected %s: expected a JSON value", p.describe(start)))
		return -1
	}
	p.pos += len(word)
	i := p.add(k, start)
	p.nodes[i].flags = flags
	p.nodes[i].End = int32(p.pos)
	return i
}

func (p *parser) number() int32 {
	start := p.pos
	var flags uint8
	s := p.src
	i := p.pos
	if s[i] == '-' {
		flags |= flagNeg
		i++
	}
	end := integerEnd(s, i)
	if end == i {
		p.fail(i, "json-syntax", "invalid number: expected a digit")
		return -1
	}
	i = end
	if i < len(s) && s[i] == '.' {
		flags |= flagFrac
		i++
		if end = skipDigits(s, i); end == i {
			p.fail(i, "json-syntax", "invalid number: expected a digit after the decimal point")
			return -1
		}
		i = end
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		flags |= flagFrac
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if end = skipDigits(s, i); end == i {
			p.fail(i, "json-syntax", "invalid number: expected a digit in the exponent")
			return -1
		}
		i = end
	}
	p.pos = i
	n := p.add(Number, start)
	p.nodes[n].flags = flags
	p.nodes[n].End = int32(i)
	return n
}

// integerEnd returns the offset after the integer part of a number at i, a
// lone 0 or digits that do not start with 0, or i if there is no digit.
// A 0 followed by digits ends after the 0, and the digits then fail the
// parse as text after a value.
func integerEnd(s []byte, i int) int {
	if i < len(s) && s[i] == '0' {
		return i + 1
	}
	return skipDigits(s, i)
}

// skipDigits returns the offset of the first byte at or after i that is
// not a decimal digit.
func skipDigits(s []byte, i int) int {
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return i
}

// str scans a string starting at the opening quote and records whether it
// holds escapes. It validates escapes and UTF-8.
func (p *parser) str(n int32) {
	s := p.src
	i := p.pos + 1
	for {
		i = plainEnd(s, i)
		if i >= len(s) {
			p.fail(p.pos, "json-syntax", "unterminated string: missing closing '\"'")
			p.pos = len(s)
			return
		}
		switch c := s[i]; {
		case c == '"':
			p.pos = i + 1
			return
		case c == '\\':
			p.nodes[n].flags |= flagEscaped
			if i+1 >= len(s) {
				p.fail(i, "json-syntax", "unterminated escape sequence in string")
				p.pos = len(s)
				return
			}
			switch s[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(s) || !isHex4(s[i+2:i+6]) {
					p.fail(i, "json-syntax", `invalid \u escape: expected four hex digits`)
					p.pos = len(s)
					return
				}
				i += 6
			default:
				p.fail(i, "json-syntax", fmt.Sprintf("invalid escape sequence \\%c in string", s[i+1]))
				p.pos = len(s)
				return
			}
		case c < 0x20:
			p.fail(i, "json-syntax", fmt.Sprintf("control character 0x%02x in string: escape it (\\n, \\t, \\u%04x)", c, c))
			p.pos = len(s)
			return
		default:
			r, size := utf8.DecodeRune(s[i:])
			if r == utf8.RuneError && size <= 1 {
				p.fail(i, "json-syntax", "invalid UTF-8 in string")
				p.pos = len(s)
				return
			}
			if p.nonASCII < 0 {
				p.nonASCII = i
			}
			i += size
		}
	}
}

// plainEnd is the offset of the first byte of s at or after i that a
// string's scan must look at: a quote, a backslash, a control character
// or a non-ASCII byte. It is the fast path over plain ASCII, and inlines
// into str.
func plainEnd(s []byte, i int) int {
	for ; i < len(s); i++ {
		if c := s[i]; c == '"' || c == '\\' || c < 0x20 || c >= 0x80 {
			break
		}
	}
	return i
}

func isHex4(b []byte) bool {
	for _, c := range b {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}

func (p *parser) array(depth int) int32 {
	n := p.add(Array, p.pos)
	if depth > MaxDepth {
		p.fail(p.pos, "json-too-deep", fmt.Sprintf("JSON nested more than %d levels deep", MaxDepth))
		return -1
	}
	p.pos++
	p.skipWS()
	if p.pos < len(p.src) && p.src[p.pos] == ']' {
		p.pos++
		p.nodes[n].End = int32(p.pos)
		return n
	}
	prev := int32(-1)
	count := int32(0)
	for {
		p.skipWS()
		v := p.value(depth)
		if p.err != nil {
			return -1
		}
		if prev < 0 {
			p.nodes[n].First = v
		} else {
			p.nodes[prev].Next = v
		}
		prev = v
		count++
		p.skipWS()
		if p.pos >= len(p.src) {
			p.fail(p.pos, "json-syntax", "unexpected end of input: expected ',' or ']' in array")
			return -1
		}
		switch p.src[p.pos] {
		case ',':
			p.pos++
			p.skipWS()
			if p.pos < len(p.src) && p.src[p.pos] == ']' {
				p.fail(p.pos, "json-syntax", "trailing comma before ']': remove it")
				return -1
			}
		case ']':
			p.pos++
			p.nodes[n].End = int32(p.pos)
			p.nodes[n].Len = count
			return n
		default:
			p.fail(p.pos, "json-syntax", fmt.Sprintf("unexpected %s: expected ',' or ']' in array", p.describe(p.pos)))
			return -1
		}
	}
}

func (p *parser) object(depth int) int32 {
	n := p.add(Object, p.pos)
	if depth > MaxDepth {
		p.fail(p.pos, "json-too-deep", fmt.Sprintf("JSON nested more than %d levels deep", MaxDepth))
		return -1
	}
	p.pos++
	p.skipWS()
	if p.pos < len(p.src) && p.src[p.pos] == '}' {
		p.pos++
		p.nodes[n].End = int32(p.pos)
		return n
	}
	prev := int32(-1)
	count := int32(0)
	for {
		p.skipWS()
		if p.pos >= len(p.src) || p.src[p.pos] != '"' {
			p.failMemberName()
			return -1
		}
		k := p.add(String, p.pos)
		p.str(k)
		if p.err != nil {
			return -1
		}
		p.nodes[k].End = int32(p.pos)
		if prev < 0 {
			p.nodes[n].First = k
		} else {
			p.nodes[prev].Next = k
		}
		p.skipWS()
		if p.pos >= len(p.src) || p.src[p.pos] != ':' {
			p.fail(p.pos, "json-syntax", fmt.Sprintf("unexpected %s: expected ':' after member name", p.describe(p.pos)))
			return -1
		}
		p.pos++
		p.skipWS()
		v := p.value(depth)
		if p.err != nil {
			return -1
		}
		p.nodes[k].Next = v
		prev = v
		count++
		p.skipWS()
		if p.pos >= len(p.src) {
			p.fail(p.pos, "json-syntax", "unexpected end of input: expected ',' or '}' in object")
			return -1
		}
		switch p.src[p.pos] {
		case ',':
			p.pos++
		case '}':
			p.pos++
			p.nodes[n].End = int32(p.pos)
			p.nodes[n].Len = count
			p.checkDuplicates(n)
			return n
		default:
			p.fail(p.pos, "json-syntax", fmt.Sprintf("unexpected %s: expected ',' or '}' in object", p.describe(p.pos)))
			return -1
		}
	}
}

// failMemberName reports what stands where an object's member name should.
// A '}' there follows a comma, which JSON does not allow before it.
func (p *parser) failMemberName() {
	if p.pos < len(p.src) && p.src[p.pos] == '}' {
		p.fail(p.pos, "json-syntax", "trailing comma before '}': remove it")
		return
	}
	p.fail(p.pos, "json-syntax", fmt.Sprintf("unexpected %s: expected a member name in double quotes", p.describe(p.pos)))
}

// checkDuplicates rejects an object with two equal member names. gRPC
// implementations disagree on which one wins, so neither may.
func (p *parser) checkDuplicates(obj int32) {
	o := &p.nodes[obj]
	if o.Len < 2 {
		return
	}
	t := Tree{Src: p.src, Nodes: p.nodes}
	if o.Len <= 16 {
		// Pairs of keys of different lengths in the text are different
		// names unless one holds escapes: most pairs are told apart by
		// their lengths, gathered first (this check was a third of a
		// parse).
		var keys, lens [16]int32
		escaped := false
		k := 0
		for a := o.First; a >= 0; a = p.nodes[p.nodes[a].Next].Next {
			na := &p.nodes[a]
			keys[k], lens[k] = a, na.End-na.Start
			escaped = escaped || na.flags&flagEscaped != 0
			k++
		}
		for i := range k {
			for j := i + 1; j < k; j++ {
				if (escaped || lens[i] == lens[j]) && t.sameString(keys[i], keys[j]) {
					p.dup(&t, keys[i], keys[j])
					return
				}
			}
		}
		return
	}
	// Sort the keys by name, then position: equal names are neighbours,
	// and the duplicate reported is the one a map would find first, the
	// earliest key whose name came before. No string is built unless a
	// key holds escapes.
	keys := make([]int32, 0, o.Len)
	for a := o.First; a >= 0; a = p.nodes[p.nodes[a].Next].Next {
		keys = append(keys, a)
	}
	// sort.Slice, not slices.SortFunc: a gRPC client links it already, and
	// the generic sort for int32 cost it 13 kB (resolver's TestClientSize).
	// The order is total, so the result is the same.
	sort.Slice(keys, func(i, j int) bool {
		if c := t.compareStrings(keys[i], keys[j]); c != 0 {
			return c < 0
		}
		return keys[i] < keys[j]
	})
	first, second := int32(-1), int32(-1)
	for i := 1; i < len(keys); i++ {
		if t.compareStrings(keys[i-1], keys[i]) == 0 && (i < 2 || t.compareStrings(keys[i-2], keys[i]) != 0) {
			// keys[i-1] is the first of its name, keys[i] the second.
			if second < 0 || keys[i] < second {
				first, second = keys[i-1], keys[i]
			}
		}
	}
	if second >= 0 {
		p.dup(&t, first, second)
	}
}

// compareStrings orders two string nodes by their decoded text.
func (t *Tree) compareStrings(a, b int32) int {
	na, nb := &t.Nodes[a], &t.Nodes[b]
	if na.flags&flagEscaped == 0 && nb.flags&flagEscaped == 0 {
		return bytes.Compare(t.Src[na.Start+1:na.End-1], t.Src[nb.Start+1:nb.End-1])
	}
	return strings.Compare(t.Str(a), t.Str(b))
}

func (p *parser) dup(t *Tree, first, second int32) {
	p.fail(int(p.nodes[second].Start), "json-duplicate-key",
		fmt.Sprintf("duplicate member %q in object: gRPC clients disagree on which copy wins, so the record is invalid; keep one", t.Str(second)))
	p.err.Other = int(p.nodes[first].Start)
}

// sameString reports whether two string nodes decode to the same text.
func (t *Tree) sameString(a, b int32) bool {
	na, nb := &t.Nodes[a], &t.Nodes[b]
	if na.flags&flagEscaped == 0 && nb.flags&flagEscaped == 0 {
		return string(t.Src[na.Start+1:na.End-1]) == string(t.Src[nb.Start+1:nb.End-1])
	}
	return t.Str(a) == t.Str(b)
}
