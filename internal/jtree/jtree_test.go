package jtree

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestParseMatchesEncodingJSON(t *testing.T) {
	for _, in := range []string{
		`null`, `true`, `false`, `0`, `-0`, `1.5e-3`, `-12E+2`, `""`, `"a\"b\\c\/d\b\f\n\r\t"`,
		`"\u00e9\ud83d\ude00"`, `[]`, `{}`, `[1,[2,[3]],{"a":{"b":[]}}]`,
		` { "k" : [ 1 , "x" , null ] } `, `"é"`,
	} {
		tr, err := Parse([]byte(in))
		if err != nil {
			t.Errorf("Parse(%s): %v", in, err)
			continue
		}
		var want any
		dec := json.NewDecoder(strings.NewReader(in))
		dec.UseNumber()
		if err := dec.Decode(&want); err != nil {
			t.Fatal(err)
		}
		if got := tr.Any(0); !reflect.DeepEqual(got, want) {
			t.Errorf("Parse(%s) = %#v, want %#v", in, got, want)
		}
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		in, code string
		off      int
	}{
		{``, "json-syntax", 0},
		{`[1,]`, "json-syntax", 3},
		{`{"a":1,}`, "json-syntax", 7},
		{`{'a':1}`, "json-syntax", 1},
		{`[1 2]`, "json-syntax", 3},
		{`01`, "json-syntax", 1},
		{`1.`, "json-syntax", 2},
		{`"\x"`, "json-syntax", 1},
		{"\"a\tb\"", "json-syntax", 2},
		{`"abc`, "json-syntax", 0},
		{`{"a":1,"a":2}`, "json-duplicate-key", 7},
		{`{"a":1,"\u0061":2}`, "json-duplicate-key", 7},
		{`tru`, "json-syntax", 0},
		{`[] []`, "json-syntax", 3},
		{strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1), "json-too-deep", MaxDepth},
		{"\"\xff\"", "json-syntax", 1},
	} {
		_, err := Parse([]byte(tc.in))
		je, ok := err.(*Error)
		if !ok {
			t.Errorf("Parse(%q) = %v, want a %s error", tc.in, err, tc.code)
			continue
		}
		if je.Code != tc.code || je.Offset != tc.off {
			t.Errorf("Parse(%q): %s at %d (%s), want %s at %d", tc.in, je.Code, je.Offset, je.Msg, tc.code, tc.off)
		}
	}
}

func TestDuplicateKeysInLargeObject(t *testing.T) {
	var b strings.Builder
	b.WriteString("{")
	for i := 0; i < 40; i++ {
		fmt.Fprintf(&b, `"k%d":1,`, i)
	}
	b.WriteString(`"k17":2}`)
	_, err := Parse([]byte(b.String()))
	if je, ok := err.(*Error); !ok || je.Code != "json-duplicate-key" {
		t.Fatalf("got %v, want a duplicate key error", err)
	}
}

func TestPositionsAndAccessors(t *testing.T) {
	src := `{"a": [10, "x\"y"], "b": {"c": true}, "n": -3, "f": 2.5}`
	tr, err := Parse([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	a := tr.Get(0, "a")
	if got := string(tr.Raw(a)); got != `[10, "x\"y"]` {
		t.Errorf("Raw(a) = %s", got)
	}
	first := tr.Nodes[a].First
	if v, ok := tr.Int(first); !ok || v != 10 {
		t.Errorf("Int = %d %v", v, ok)
	}
	s := tr.Nodes[first].Next
	if tr.Str(s) != `x"y` || !tr.Is(s, `x"y`) {
		t.Errorf("Str = %q", tr.Str(s))
	}
	if offs := tr.StrOffsets(s); len(offs) != 3 || src[offs[1]] != '\\' {
		t.Errorf("StrOffsets = %v", offs)
	}
	if !tr.Bool(tr.Get(tr.Get(0, "b"), "c")) {
		t.Error("b.c should be true")
	}
	if v, ok := tr.Int(tr.Get(0, "n")); !ok || v != -3 {
		t.Errorf("n = %d", v)
	}
	if _, ok := tr.Int(tr.Get(0, "f")); ok {
		t.Error("2.5 is not an integer")
	}
	if tr.Get(0, "missing") != -1 {
		t.Error("Get of a missing key")
	}
	if got := string(tr.AppendCompact(nil, 0)); got != `{"a":[10,"x\"y"],"b":{"c":true},"n":-3,"f":2.5}` {
		t.Errorf("compact = %s", got)
	}
	if !tr.EqualFoldASCII(tr.Nodes[tr.Nodes[0].First].Next, "x") == false {
		t.Error("EqualFoldASCII on an array")
	}
}

func TestNonASCIIOffset(t *testing.T) {
	tr, err := Parse([]byte(`["ab", "cé"]`))
	if err != nil {
		t.Fatal(err)
	}
	if tr.NonASCII != 9 {
		t.Errorf("NonASCII = %d, want 9", tr.NonASCII)
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{`[{"serviceConfig":{}}]`, `{"a":[1,2,{"b":"\u00e9"}]}`, `[1e5,-0.5,true,false,null]`, `"\ud800"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		tr, err := Parse(b)
		// encoding/json lets invalid UTF-8 through; RFC 8259 and we do not.
		valid := json.Valid(b) && utf8.Valid(b)
		if err == nil && !json.Valid(b) {
			t.Fatalf("accepted invalid JSON %q", b)
		}
		if err != nil {
			if je := err.(*Error); je.Code == "json-syntax" && valid {
				t.Fatalf("rejected valid JSON %q: %v", b, err)
			}
			return
		}
		// The bound holds, so large inputs allocate their nodes once.
		if len(tr.Nodes) > nodeBound(b) {
			t.Fatalf("%q: %d nodes, bound %d", b, len(tr.Nodes), nodeBound(b))
		}
		// Compact output re-parses to the same values.
		out := tr.AppendCompact(nil, 0)
		tr2, err := Parse(out)
		if err != nil {
			t.Fatalf("compact form %q does not parse: %v", out, err)
		}
		if !reflect.DeepEqual(tr.Any(0), tr2.Any(0)) {
			t.Fatalf("compact form changed the value: %q -> %q", b, out)
		}
	})
}

// Objects of more than 16 members are checked for duplicate names by
// sorting: the same duplicate must be found as by a map in document order.
func TestDuplicateKeysOfLargeObjects(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for n := 0; n < 3000; n++ {
		members := 17 + r.IntN(30)
		type key struct{ text, name string }
		var keys []key
		for i := 0; i < members; i++ {
			name := string(rune('a'+r.IntN(4))) + string(rune('a'+r.IntN(12)))
			text := name
			if r.IntN(4) == 0 {
				text = `\u00` + strconv.FormatInt(int64(name[0]), 16) + name[1:]
			}
			keys = append(keys, key{text, name})
		}
		var b strings.Builder
		b.WriteString("{")
		offs := make([]int, len(keys))
		for i, k := range keys {
			if i > 0 {
				b.WriteString(",")
			}
			offs[i] = b.Len()
			b.WriteString(`"` + k.text + `":` + strconv.Itoa(i))
		}
		b.WriteString("}")
		wantFirst, wantSecond := -1, -1
		seen := map[string]int{}
		for i, k := range keys {
			if f, ok := seen[k.name]; ok {
				wantFirst, wantSecond = offs[f], offs[i]
				break
			}
			seen[k.name] = i
		}
		wantDuplicate(t, b.String(), wantFirst, wantSecond)
	}
}

// Objects of at most 16 members are checked pair by pair: the duplicate
// reported is the first key that has a later copy, with its first copy;
// keys that differ in length as written may still be equal names when
// one holds escapes.
func TestDuplicateKeysOfSmallObjects(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for n := 0; n < 20000; n++ {
		members := 2 + r.IntN(15)
		var b strings.Builder
		b.WriteString("{")
		names := make([]string, members)
		offs := make([]int, members)
		for i := range members {
			// Names of one to three letters of four: lengths collide often.
			name := ""
			for range 1 + r.IntN(3) {
				name += string(rune('a' + r.IntN(4)))
			}
			text := name
			if r.IntN(6) == 0 {
				text = `\u00` + strconv.FormatInt(int64(name[0]), 16) + name[1:]
			}
			if i > 0 {
				b.WriteString(",")
			}
			names[i], offs[i] = name, b.Len()
			b.WriteString(`"` + text + `":` + strconv.Itoa(i))
		}
		b.WriteString("}")
		wantFirst, wantSecond := -1, -1
	find:
		for i := range names {
			for j := i + 1; j < len(names); j++ {
				if names[i] == names[j] {
					wantFirst, wantSecond = offs[i], offs[j]
					break find
				}
			}
		}
		wantDuplicate(t, b.String(), wantFirst, wantSecond)
	}
}

// wantDuplicate fails t unless src parses, when second is negative, or
// is refused for the duplicate member at offset second of the one at
// first.
func wantDuplicate(t *testing.T, src string, first, second int) {
	t.Helper()
	_, err := Parse([]byte(src))
	if second < 0 {
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		return
	}
	je, ok := err.(*Error)
	if !ok || je.Code != "json-duplicate-key" || je.Offset != second || je.Other != first {
		t.Fatalf("%s: got %v, want duplicate at %d (first %d)", src, err, second, first)
	}
}
