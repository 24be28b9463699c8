package model

import (
	"bytes"
	"unicode/utf8"

	"github.com/grpc-config-dns/grpc-config-dns/internal/jtree"
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
// what is wrong with it.
func splitJSON(text []byte) (skeleton []byte, blocks map[textPos]*block, ok bool) {
	if !jsonText(text) {
		return nil, nil, false
	}
	t, err := jtree.Parse(text)
	if err != nil || t.Nodes[0].Kind != jtree.Object {
		return nil, nil, false
	}
	zones := t.Get(0, "zones")
	if zones < 0 || t.Nodes[zones].Kind != jtree.Array {
		return nil, nil, false
	}
	blocks = map[textPos]*block{}
	skeleton = bytes.Clone(text)
	var lines lineCounter
	for z := t.Nodes[zones].First; z >= 0; z = t.Nodes[z].Next {
		if t.Nodes[z].Kind != jtree.Object {
			continue // refused by the whole read of the skeleton
		}
		key := serviceKeyNode(t, z)
		if key < 0 {
			continue
		}
		arr := t.Nodes[key].Next
		if t.Nodes[arr].Kind != jtree.Array || t.Nodes[arr].Len == 0 {
			continue // read as it is
		}
		kl, kc, _ := lines.at(text, int(t.Nodes[key].Start))
		b := &block{key: textPos{kl + 1, kc + 1}, json: true}
		for e := t.Nodes[arr].First; e >= 0; e = t.Nodes[e].Next {
			n := &t.Nodes[e]
			if n.Kind != jtree.Object {
				return nil, nil, false
			}
			line, col, bcol := lines.at(text, int(n.Start))
			b.items = append(b.items, item{line: line, off: int(n.Start), col: col, bcol: bcol, text: text[n.Start:n.End]})
		}
		blocks[b.key] = b
		inside := skeleton[t.Nodes[arr].Start+1 : t.Nodes[arr].End-1]
		for i, c := range inside {
			if c != '\n' {
				inside[i] = ' '
			}
		}
	}
	return skeleton, blocks, true
}

// serviceKeyNode returns the node of the key "services" of object z, -1
// when it has none.
func serviceKeyNode(t *jtree.Tree, z int32) int32 {
	for k := t.Nodes[z].First; k >= 0; k = t.Nodes[t.Nodes[k].Next].Next {
		if t.Is(k, "services") {
			return k
		}
	}
	return -1
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
