package model

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// sameNodes returns where a and b differ in what the config reads from a
// node (kind, style, tag, value, line, column, anchor, children), or "".
func sameNodes(a, b *yaml.Node, at string) string {
	switch {
	case a == nil || b == nil:
		if a != b {
			return at + ": one node is nil"
		}
		return ""
	case a.Kind != b.Kind || a.Style != b.Style || a.Tag != b.Tag || a.Value != b.Value || a.Anchor != b.Anchor ||
		a.Line != b.Line || a.Column != b.Column || len(a.Content) != len(b.Content):
		return fmt.Sprintf("%s: kind %d/%d style %d/%d tag %q/%q value %q/%q at %d:%d/%d:%d, %d/%d children",
			at, a.Kind, b.Kind, a.Style, b.Style, a.Tag, b.Tag, a.Value, b.Value, a.Line, a.Column, b.Line, b.Column, len(a.Content), len(b.Content))
	}
	for i := range a.Content {
		if d := sameNodes(a.Content[i], b.Content[i], fmt.Sprintf("%s/%d", at, i)); d != "" {
			return d
		}
	}
	return ""
}

// checkFast fails t when readFast reads text, and yaml.v3 does not, or
// reads it differently.
func checkFast(t *testing.T, text []byte) (fast bool) {
	t.Helper()
	return checkFastWith(t, text, nil)
}

// checkFastWith is checkFast reading with scratch: what a read leaves in
// it changes nothing of the next.
func checkFastWith(t *testing.T, text []byte, scratch *yamlScratch) (fast bool) {
	t.Helper()
	got, ok := readFast(text, scratch)
	if !ok {
		return false
	}
	var want yaml.Node
	if err := yaml.Unmarshal(text, &want); err != nil {
		t.Fatalf("readFast read %q, which yaml.v3 refuses: %v", text, err)
	}
	if d := sameNodes(got, &want, ""); d != "" {
		t.Fatalf("readFast reads %q differently from yaml.v3: %s", text, d)
	}
	return true
}

// The forms services items are written in, which readFast must read (or
// the first start loses its speed), and forms it must leave to yaml.v3.
func TestReadFast(t *testing.T) {
	for _, tc := range []struct {
		text string
		fast bool
	}{
		{fleetItem(7, "1s"), true},
		{"- name: s\n  addresses: [10.0.0.1, \"10.0.0.2\", '::1']\n", true},
		{"    - name: s # the first\n\n      # a comment line\n      serviceConfig:\n        methodConfig:\n        - name:\n          - service: a.B\n            method: M\n          timeout: 1.5s\n          waitForReady: true\n", true},
		{"- name: 'it''s'\n  srv: {port: 0x1F, ttl: -3, x: 1_000, y: .5, z: 1e3, w: 2001-12-14, v: ~, u: null, t: <<, s: 0o17}\n", true},
		{"- {name: s, serviceConfig: {}}\n", true},
		{"- name: s\n  serviceConfig: {methodConfig: [{name: [{}], retryPolicy: {retryableStatusCodes: [UNAVAILABLE, \"ABORTED\"]}}]}\n", true},
		{"- name: a b c\n  x: a:b\n  y: a#b\n  z: [a b, c]\n", true},
		{"- - a\n  - b\n- c\n", true},
		{"- name : s\n  \"quoted key\": v\n", true},
		{"-\n  name: s\n", true},

		// Left to yaml.v3.
		{"- name: s\n  note: |\n    text\n", false},
		{"- name: s\n  note: >-\n    text\n", false},
		{"- name: a\n    continued\n", false},
		{"- name: \"a\\tb\"\n", false},
		{"- name: \"a\n  b\"\n", false},
		{"- addresses: [10.0.0.1,\n    10.0.0.2]\n", false},
		{"- name: !!str 1\n", false},
		{"- name: &a x\n", false},
		{"- name:\n", false},
		{"- name: s\n  x:\n  y: 1\n", false},
		{"- ? name\n  : s\n", false},
		{"- name: é\n", false},
		{"- name: s\r\n", false},
		{"- name:\ts\n", false},
		{"- addresses: [::1]\n", false},
		{"- x: {a:1}\n", false},
		{"- x: [a, ]\n", false},
		{"- x: a: b\n", false},
		{"- x: 'a'b\n", false},
		{"---\n- x: 1\n", false},
		{"", false},
		{"# only a comment\n", false},
		// Found in review: yaml.v3 refuses a flow key of more than 1024
		// characters, and collections nested past 10 000 levels.
		{"- serviceConfig: {loadBalancingConfig: [{" + strings.Repeat("k", 1100) + ": {}}, {round_robin: {}}]}\n", false},
		{"- x: " + strings.Repeat("[", 10001) + strings.Repeat("]", 10001) + "\n", false},
		{"- x: " + strings.Repeat("{a: ", 10001) + "1" + strings.Repeat("}", 10001) + "\n", false},
		{strings.Repeat("- ", 10003) + "a\n", false},
		{"- x: " + strings.Repeat("[", 900) + strings.Repeat("]", 900) + "\n", true},
	} {
		if got := checkFast(t, []byte(tc.text)); got != tc.fast {
			t.Errorf("%q: read fast %v, want %v", tc.text, got, tc.fast)
		}
	}
}

// fleetItem is one item of bench/fleetgen's services list.
func fleetItem(i int, timeout string) string {
	return fmt.Sprintf(`      - name: svc%d
        addresses: [10.%d.%d.%d]
        serviceConfig:
          methodConfig:
            - name: [{service: fleet.v1.Service%d}]
              timeout: %s
              retryPolicy: {maxAttempts: 3, initialBackoff: 0.1s, maxBackoff: 1s, backoffMultiplier: 2, retryableStatusCodes: [UNAVAILABLE]}
`, i, i>>16, i>>8&0xff, i&0xff, i, timeout)
}

// Every item of every config in testdata reads as yaml.v3 reads it.
func TestReadFastAgreesOnTestdata(t *testing.T) {
	files, _ := filepath.Glob("../testdata/publisher/*.yaml")
	more, _ := filepath.Glob("testdata/*.yaml")
	files = append(append(files, more...), "example.yaml")
	fast, items := 0, 0
	for _, f := range files {
		text, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		checkFast(t, text)
		_, blocks, ok := splitServices(text)
		if !ok {
			continue
		}
		for _, b := range blocks {
			for _, it := range b.items {
				items++
				if checkFast(t, it.text) {
					fast++
				}
			}
		}
	}
	t.Logf("%d of %d items read fast", fast, items)
	if items == 0 || fast*2 < items {
		t.Errorf("only %d of %d items read fast", fast, items)
	}
}

// FuzzReadFastAgreesWithYAML: whatever readFast reads, yaml.v3 reads too,
// into the same nodes.
func FuzzReadFastAgreesWithYAML(f *testing.F) {
	f.Add([]byte(fleetItem(3, "2s")))
	f.Add([]byte("- name: 'it''s'\n  srv: {port: 0x1F, ttl: -3, x: 1_000, y: .5, z: 1e3, w: 2001-12-14, v: ~, u: null, t: <<}\n"))
	f.Add([]byte("    - name: s # c\n\n      # c\n      serviceConfig:\n        methodConfig:\n        - name:\n          - service: a.B\n          timeout: 1.5s\n"))
	f.Add([]byte("- - a\n  - b\n- c: [a b, 'c', \"d\", {e: f}]\n"))
	f.Add([]byte("- x: -0b101\n  y: +12\n  z: -.inf\n  w: 0x_1\n  v: 2001-12-14t21:59:43.10-05:00\n  u: 1.\n  t: -\n"))
	for _, o := range oddBytes {
		f.Add([]byte(strings.Replace(fleetItem(3, "2s"), "\n", o, 2)))
	}
	f.Fuzz(func(t *testing.T, text []byte) {
		if strings.Count(string(text), "\n") > 200 {
			return
		}
		checkFast(t, text)
	})
}

// BenchmarkReadItem reads a fleet service's item as the config does:
// readFast against yaml.v3.
func BenchmarkReadItem(b *testing.B) {
	text := []byte(fleetItem(12345, "1s"))
	b.Run("yaml.v3", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var n yaml.Node
			if err := yaml.Unmarshal(text, &n); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("readFast", func(b *testing.B) {
		b.ReportAllocs()
		var scratch yamlScratch
		for b.Loop() {
			if _, ok := readFast(text, &scratch); !ok {
				b.Fatal("not read")
			}
		}
	})
}

// Texts put together from the pieces services items are made of, and
// their near misses: whatever readFast reads of them, yaml.v3 reads alike,
// and it reads most of the well-formed ones.
func TestReadFastRandomItems(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	pick := func(xs ...string) string { return xs[rng.IntN(len(xs))] }
	scalars := []string{"a", "svc1", "fleet.v1.Service", "1s", "0.1s", "10.0.0.1", "3", "-3", "+3", "0x1F", "0o17", "0b11", "-0b11", "1_000",
		"1e3", ".5", "1.", "-.inf", ".NaN", "~", "null", "Null", "true", "False", "yes", "<<", "2001-12-14", "2001-12-14 21:59:43.10",
		"2001-13-14", "1234-", "a b", "a#b", "a #b", "a:b", "a: b", "-", "-a", "?a", ":a", "a?", "a,b", "[a]", "'q'", "'it''s'",
		"\"d\"", "\"a\\\"\"", "'a", "\"a", "a'", "*a", "&a", "!t", "%a", "@a", "`a", "|", ">", "#c", "0", "00", "09", "-0", "+.5",
		"1__0", "0x", "9223372036854775808", "18446744073709551616", "-9223372036854775809", "1e400", "UNAVAILABLE"}
	var flow func(depth int) string
	flow = func(depth int) string {
		if depth > 2 || rng.IntN(3) > 0 {
			return pick(scalars...)
		}
		n := rng.IntN(4)
		var parts []string
		if rng.IntN(2) == 0 {
			for range n {
				parts = append(parts, flow(depth+1))
			}
			return "[" + strings.Join(parts, pick(", ", ",", " , ", ",  ")) + pick("]", " ]", ",]")
		}
		for range n {
			parts = append(parts, pick(scalars...)+pick(": ", ":", " : ")+flow(depth+1))
		}
		return "{" + strings.Join(parts, pick(", ", ",")) + pick("}", " }", ",}")
	}
	fast := 0
	const texts = 20000
	var scratch yamlScratch
	for range texts {
		var b strings.Builder
		lines := 1 + rng.IntN(8)
		base := pick("", "  ", "    ")
		b.WriteString(base + "- ")
		for l := range lines {
			if l > 0 {
				b.WriteString(base + pick("  ", "  ", "  ", "    ", "   ", " ", "- ", "  - ", "    - ", ""))
			}
			switch rng.IntN(6) {
			case 0:
				b.WriteString(pick(scalars...) + pick(":", ": ", " :"))
			case 1:
				b.WriteString(flow(0))
			default:
				b.WriteString(pick("name", "addresses", "serviceConfig", "a b", "'k'", "\"k\"", "<<", "k", "timeout") + pick(": ", ":  ", " : ", ":") + flow(0))
			}
			b.WriteString(pick("", "", "", " # c", "#c", "  ", "\n# c", "\n", "\n   #c"))
			b.WriteString("\n")
		}
		if checkFastWith(t, []byte(b.String()), &scratch) {
			fast++
		}
	}
	t.Logf("%d of %d texts read fast", fast, texts)
	if fast < texts/20 {
		t.Errorf("only %d of %d texts read fast: the generator no longer makes what readFast reads", fast, texts)
	}
}

// isJSONNumber matches what JSON's number grammar matches, over every
// short text of its bytes.
func TestIsJSONNumber(t *testing.T) {
	re := regexp.MustCompile(`^-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?$`)
	walkTexts([]string{"-", "+", "0", "1", "9", ".", "e", "E", "x", " "}, 6, func(s string) {
		if got, want := isJSONNumber(s), re.MatchString(s); got != want {
			t.Errorf("isJSONNumber(%q) = %v, want %v", s, got, want)
		}
	})
}

// plainTag answers what yaml.v3 resolves a plain scalar to, also where it
// answers without asking yaml.v3: over every short text of the bytes of
// numbers, timestamps and the texts that look like them.
func TestPlainTag(t *testing.T) {
	alphabet := []string{"0", "1", "9", ".", "-", "+", "_", "e", "x", "o", "b", ":", "s", "T", " ", "a"}
	walkTexts(alphabet, 5, func(s string) {
		n := &yaml.Node{Kind: yaml.ScalarNode, Value: s}
		if got, want := plainTag(n), n.ShortTag(); got != want {
			t.Errorf("plainTag(%q) = %s, yaml.v3 resolves it to %s", s, got, want)
		}
	})
	for _, s := range []string{"2001-12-14", "2001-12-14t21:59:43.10-05:00", "2001-12-14 21:59:43.10", "2001-13-14",
		"123456789012345678", "1234567890123456789", "18446744073709551616", "0b1010", "-0b1", "0o17", "0x_1F", "1_000.5",
		"09", "1e400", "+.inf", ".NaN", "10.0.0.1", "1s", "1.5s", "-"} {
		n := &yaml.Node{Kind: yaml.ScalarNode, Value: s}
		if got, want := plainTag(n), n.ShortTag(); got != want {
			t.Errorf("plainTag(%q) = %s, yaml.v3 resolves it to %s", s, got, want)
		}
	}
}

// walkTexts calls f with every text of up to depth pieces of alphabet.
func walkTexts(alphabet []string, depth int, f func(string)) {
	var walk func(s string, depth int)
	walk = func(s string, depth int) {
		f(s)
		if depth == 0 {
			return
		}
		for _, a := range alphabet {
			walk(s+a, depth-1)
		}
	}
	walk("", depth)
}

// After a duplicate key deep in a value, the diagnostics that follow carry
// their own paths (found in review: "/serviceConfig/a/a" for
// "/serviceConfig/a").
func TestDuplicateKeyPaths(t *testing.T) {
	text := "zones:\n  - origin: a.test.\n    nameservers: [ns.b.]\n    services:\n      - name: s\n        serviceConfig: {a: {b: 1, b: 2}, a: 3}\n"
	_, ds := Parse([]byte(text))
	var paths []string
	for _, d := range ds {
		if d.Code == codeYAMLDuplicateKey.String() {
			paths = append(paths, d.Path)
		}
	}
	want := []string{"/zones/0/services/0/serviceConfig/a/b", "/zones/0/services/0/serviceConfig/a"}
	if !slices.Equal(paths, want) {
		t.Errorf("duplicate keys reported at %q, want %q", paths, want)
	}
}
