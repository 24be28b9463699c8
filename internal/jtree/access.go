package jtree

import (
	"encoding/json"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// Raw returns the source text of node i.
func (t *Tree) Raw(i int32) []byte {
	n := &t.Nodes[i]
	return t.Src[n.Start:n.End]
}

// Bool returns the value of a Bool node.
func (t *Tree) Bool(i int32) bool { return t.Nodes[i].flags&flagTrue != 0 }

// IsInteger reports whether a Number node is written without a fraction or
// exponent.
func (t *Tree) IsInteger(i int32) bool {
	return t.Nodes[i].Kind == Number && t.Nodes[i].flags&flagFrac == 0
}

// Int returns the value of an integer Number node; ok is false when the node
// has a fraction or exponent or does not fit in an int64.
func (t *Tree) Int(i int32) (v int64, ok bool) {
	if !t.IsInteger(i) {
		return 0, false
	}
	raw := t.Raw(i)
	// Fast path for the small numbers configs are made of.
	if len(raw) <= 9 && raw[0] != '-' {
		for _, c := range raw {
			v = v*10 + int64(c-'0')
		}
		return v, true
	}
	v, err := strconv.ParseInt(string(raw), 10, 64)
	return v, err == nil
}

// Float returns the value of a Number node.
func (t *Tree) Float(i int32) (float64, bool) {
	v, err := strconv.ParseFloat(string(t.Raw(i)), 64)
	return v, err == nil
}

// Is reports whether string node i decodes to s, without allocating.
func (t *Tree) Is(i int32, s string) bool {
	n := &t.Nodes[i]
	if n.Kind != String {
		return false
	}
	if n.flags&flagEscaped == 0 {
		return string(t.Src[n.Start+1:n.End-1]) == s
	}
	return t.Str(i) == s
}

// EqualFoldASCII reports whether string node i equals s under ASCII case
// folding.
func (t *Tree) EqualFoldASCII(i int32, s string) bool {
	n := &t.Nodes[i]
	if n.Kind != String {
		return false
	}
	var b []byte
	if n.flags&flagEscaped == 0 {
		b = t.Src[n.Start+1 : n.End-1]
	} else {
		b = []byte(t.Str(i))
	}
	if len(b) != len(s) {
		return false
	}
	for j := 0; j < len(b); j++ {
		x, y := b[j], s[j]
		if x == y {
			continue
		}
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

// Str returns the decoded text of a String node.
func (t *Tree) Str(i int32) string {
	n := &t.Nodes[i]
	body := t.Src[n.Start+1 : n.End-1]
	if n.flags&flagEscaped == 0 {
		return string(body)
	}
	return string(unescape(body))
}

// StrOffsets returns, for each byte of the decoded text of a String node,
// the offset in the source it came from. Diagnostics use it to point inside
// a string.
func (t *Tree) StrOffsets(i int32) []int {
	n := &t.Nodes[i]
	var offs []int
	src := t.Src
	for j := int(n.Start) + 1; j < int(n.End)-1; {
		if src[j] != '\\' {
			offs = append(offs, j)
			j++
			continue
		}
		if src[j+1] != 'u' {
			offs = append(offs, j)
			j += 2
			continue
		}
		r, w := decodeU(src[j:])
		for k := 0; k < utf8.RuneLen(r); k++ {
			offs = append(offs, j)
		}
		j += w
	}
	return offs
}

func unescape(b []byte) []byte {
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); {
		c := b[i]
		if c != '\\' {
			out = append(out, c)
			i++
			continue
		}
		switch b[i+1] {
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, w := decodeU(b[i:])
			out = utf8.AppendRune(out, r)
			i += w
			continue
		default: // '"', '\\', '/'
			out = append(out, b[i+1])
		}
		i += 2
	}
	return out
}

// decodeU decodes a \uXXXX escape (and a following low surrogate) at the
// start of b, returning the rune and the bytes consumed.
func decodeU(b []byte) (rune, int) {
	r := rune(hex4(b[2:6]))
	if utf16.IsSurrogate(r) {
		if len(b) >= 12 && b[6] == '\\' && b[7] == 'u' && isHex4(b[8:12]) {
			if r2 := utf16.DecodeRune(r, rune(hex4(b[8:12]))); r2 != utf8.RuneError {
				return r2, 12
			}
		}
		return utf8.RuneError, 6
	}
	return r, 6
}

func hex4(b []byte) int {
	v := 0
	for _, c := range b[:4] {
		v <<= 4
		switch {
		case c >= '0' && c <= '9':
			v |= int(c - '0')
		case c >= 'a' && c <= 'f':
			v |= int(c-'a') + 10
		default:
			v |= int(c-'A') + 10
		}
	}
	return v
}

// Get returns the value of member key in object node obj, or -1.
func (t *Tree) Get(obj int32, key string) int32 {
	for k := t.Nodes[obj].First; k >= 0; {
		v := t.Nodes[k].Next
		if t.Is(k, key) {
			return v
		}
		k = t.Nodes[v].Next
	}
	return -1
}

// Any converts node i to the Go values encoding/json produces with
// UseNumber: map[string]any, []any, string, json.Number, bool and nil.
func (t *Tree) Any(i int32) any {
	n := &t.Nodes[i]
	switch n.Kind {
	case Null:
		return nil
	case Bool:
		return t.Bool(i)
	case Number:
		return json.Number(t.Raw(i))
	case String:
		return t.Str(i)
	case Array:
		out := make([]any, 0, n.Len)
		for e := n.First; e >= 0; e = t.Nodes[e].Next {
			out = append(out, t.Any(e))
		}
		return out
	case Object:
		out := make(map[string]any, n.Len)
		for k := n.First; k >= 0; {
			v := t.Nodes[k].Next
			out[t.Str(k)] = t.Any(v)
			k = t.Nodes[v].Next
		}
		return out
	}
	return nil
}

// AppendCompact appends node i to dst as JSON without insignificant
// whitespace. Strings and numbers are copied as written.
func (t *Tree) AppendCompact(dst []byte, i int32) []byte {
	n := &t.Nodes[i]
	switch n.Kind {
	case Array:
		dst = append(dst, '[')
		for e := n.First; e >= 0; e = t.Nodes[e].Next {
			if e != n.First {
				dst = append(dst, ',')
			}
			dst = t.AppendCompact(dst, e)
		}
		return append(dst, ']')
	case Object:
		dst = append(dst, '{')
		for k := n.First; k >= 0; {
			if k != n.First {
				dst = append(dst, ',')
			}
			v := t.Nodes[k].Next
			dst = append(dst, t.Raw(k)...)
			dst = append(dst, ':')
			dst = t.AppendCompact(dst, v)
			k = t.Nodes[v].Next
		}
		return append(dst, '}')
	}
	return append(dst, t.Raw(i)...)
}
