package model

import (
	"bytes"
	"unicode/utf8"
)

// A config written as JSON is cut as a YAML one is (chunks.go): each
// zone's services array into its elements, each read alone and kept for
// the next parse by its text, so that a reload of a JSON fleet reads the
// services that changed and not the others. The positioned JSON parser
// finds the elements; the skeleton is the text with each services array's
// inside blanked (newlines kept, so that every other node keeps its line
// and column).

// cutServices cuts the services lists of text, JSON or YAML, as its
// first byte says; ok is false when the text must be read whole.
func cutServices(text []byte) (skeleton []byte, blocks map[textPos]*block, ok bool) {
	if first := bytes.TrimLeft(text, " \n"); len(first) > 0 && first[0] == '{' {
		return splitJSON(text)
	}
	return splitServices(text)
}

// splitJSON cuts the services arrays of a JSON config into their objects.
// It declines (ok false) what readJSON declines, and a config whose
// zones or services are not where a config has them: the whole read says
// what is wrong with it. The elements are found by a scan that follows
// only strings and nesting (jsonScan): the JSON parser makes a node of
// every value, 100-300 ms of a fleet's 30 MB at every reload. The scan
// does not check the JSON: the pieces it cuts are read by the JSON
// parser, and a text whose pieces do not read is read whole.
func splitJSON(text []byte) (skeleton []byte, blocks map[textPos]*block, ok bool) {
	if !jsonText(text) {
		return nil, nil, false
	}
	lists, ok := jsonServiceLists(text)
	if !ok {
		return nil, nil, false
	}
	blocks = map[textPos]*block{}
	skeleton = make([]byte, 0, len(text)/8)
	var lines lineCounter
	off := 0
	for _, l := range lists {
		if len(l.items) == 0 {
			continue // read as it is
		}
		kl, kc, _ := lines.at(text, l.key)
		b := &block{key: textPos{kl + 1, kc + 1}, json: true, items: make([]item, 0, len(l.items))}
		for _, span := range l.items {
			line, col, bcol := lines.at(text, span[0])
			b.items = append(b.items, item{line: line, off: span[0], col: col, bcol: bcol, text: text[span[0]:span[1]]})
		}
		blocks[b.key] = b
		// The array's inside is empty in the skeleton, its lines kept
		// (and its last one's width, for what follows the array on it):
		// what the skeleton holds after it is where the text has it.
		inside := text[l.start+1 : l.end-1]
		skeleton = append(skeleton, text[off:l.start+1]...)
		skeleton = append(skeleton, newlines(bytes.Count(inside, []byte{'\n'}))...)
		last := inside[bytes.LastIndexByte(inside, '\n')+1:]
		skeleton = append(skeleton, bytes.Repeat([]byte{' '}, utf8.RuneCount(last))...)
		off = l.end - 1
	}
	return append(skeleton, text[off:]...), blocks, true
}

// jsonList is a services array of a JSON config: the offset of its key's
// quote, of its brackets ([start, end)), and of each object in it.
type jsonList struct {
	key, start, end int
	items           [][2]int
}

// jsonServiceLists finds the services arrays of the zones of a JSON
// config: the member "zones" of the root object, an array of objects each
// of which may have a member "services", an array of objects. ok is false
// for anything else there (a key written with an escape, or given twice;
// an element not an object; text it cannot follow).
func jsonServiceLists(text []byte) (lists []jsonList, ok bool) {
	sc := jsonScan{text: text}
	zones := -1
	if !sc.members(func(key string, at int) bool {
		if key != "zones" {
			return sc.skip()
		}
		if zones >= 0 || sc.peek() != '[' {
			return false
		}
		zones = at
		return sc.elements(func() bool {
			if sc.peek() != '{' {
				return sc.skip() // refused by the whole read of the skeleton
			}
			seen := false
			return sc.members(func(key string, at int) bool {
				if key != "services" {
					return sc.skip()
				}
				if seen {
					return false
				}
				seen = true
				if sc.peek() != '[' {
					return sc.skip()
				}
				l := jsonList{key: at, start: sc.i}
				if l.items, ok = sc.objects(); !ok {
					return false
				}
				l.end = sc.i
				lists = append(lists, l)
				return true
			})
		})
	}) {
		return nil, false
	}
	sc.space()
	return lists, sc.i == len(text)
}

// jsonMarks are the bytes jsonScan.skip stops at in an object or array.
var jsonMarks = [256]bool{'"': true, '{': true, '}': true, '[': true, ']': true}

// jsonScan follows a JSON text's strings and nesting, nothing more.
type jsonScan struct {
	text []byte
	i    int
}

// objects moves past the array of objects at the next byte and returns
// where each object is.
func (s *jsonScan) objects() ([][2]int, bool) {
	if s.peek() != '[' {
		return nil, false
	}
	s.i++
	if s.peek() == ']' {
		s.i++
		return nil, true
	}
	var items [][2]int
	for {
		if s.peek() != '{' {
			return nil, false
		}
		from := s.i
		if !s.skip() {
			return nil, false
		}
		items = append(items, [2]int{from, s.i})
		switch s.peek() {
		case ',':
			s.i++
		case ']':
			s.i++
			return items, true
		default:
			return nil, false
		}
	}
}

func (s *jsonScan) space() {
	for s.i < len(s.text) && (s.text[s.i] == ' ' || s.text[s.i] == '\n') {
		s.i++
	}
}

// peek returns the next byte past spaces, 0 at the end.
func (s *jsonScan) peek() byte {
	s.space()
	if s.i == len(s.text) {
		return 0
	}
	return s.text[s.i]
}

// str moves past the string at s.i and returns its text between the
// quotes, and whether it holds an escape.
func (s *jsonScan) str() (body []byte, escaped, ok bool) {
	start := s.i + 1
	for j := start; ; {
		k := bytes.IndexByte(s.text[j:], '"')
		if k < 0 {
			return nil, false, false
		}
		j += k
		bs := 0
		for b := j - 1; b >= start && s.text[b] == '\\'; b-- {
			bs++
		}
		if bs%2 == 0 {
			s.i = j + 1
			return s.text[start:j], bytes.IndexByte(s.text[start:j], '\\') >= 0, true
		}
		j++
	}
}

// skip moves past the value at the next byte: a string, an object or an
// array (counting their brackets outside strings), or a scalar.
func (s *jsonScan) skip() bool {
	switch s.peek() {
	case '"':
		_, _, ok := s.str()
		return ok
	case '{', '[':
		depth := 0
		for s.i < len(s.text) {
			for s.i < len(s.text) && !jsonMarks[s.text[s.i]] {
				s.i++
			}
			if s.i == len(s.text) {
				return false
			}
			switch s.text[s.i] {
			case '"':
				if _, _, ok := s.str(); !ok {
					return false
				}
				continue
			case '{', '[':
				depth++
			default:
				depth--
			}
			s.i++
			if depth == 0 {
				return true
			}
		}
		return false
	case 0, ',', ':', '}', ']':
		return false
	}
	for s.i < len(s.text) && bytes.IndexByte([]byte(" \n,}]"), s.text[s.i]) < 0 {
		s.i++
	}
	return true
}

// members calls f for each member of the object at the next byte, with
// its key and the offset of the key's quote, s.i at its value; f moves
// past the value. A key with an escape stops it (false).
func (s *jsonScan) members(f func(key string, at int) bool) bool {
	if s.peek() != '{' {
		return false
	}
	s.i++
	if s.peek() == '}' {
		s.i++
		return true
	}
	for {
		if s.peek() != '"' {
			return false
		}
		at := s.i
		key, escaped, ok := s.str()
		if !ok || escaped || s.peek() != ':' {
			return false
		}
		s.i++
		if !f(string(key), at) {
			return false
		}
		switch s.peek() {
		case ',':
			s.i++
		case '}':
			s.i++
			return true
		default:
			return false
		}
	}
}

// elements calls f for each element of the array at the next byte, s.i
// at the element; f moves past it.
func (s *jsonScan) elements(f func() bool) bool {
	if s.peek() != '[' {
		return false
	}
	s.i++
	if s.peek() == ']' {
		s.i++
		return true
	}
	for {
		s.space()
		if !f() {
			return false
		}
		switch s.peek() {
		case ',':
			s.i++
		case ']':
			s.i++
			return true
		default:
			return false
		}
	}
}

// lineCounter finds the line (0-based) and the column (in characters and
// in bytes, from 0) of offsets asked for in increasing order.
type lineCounter struct {
	off, line, lineStart int
}

func (l *lineCounter) at(text []byte, off int) (line, col, bcol int) {
	for {
		i := bytes.IndexByte(text[l.off:off], '\n')
		if i < 0 {
			break
		}
		l.off += i + 1
		l.line++
		l.lineStart = l.off
	}
	l.off = off
	return l.line, utf8.RuneCount(text[l.lineStart:off]), off - l.lineStart
}
