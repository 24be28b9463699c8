package model

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	sc "github.com/grpc-config-dns/grpc-config-dns/serviceconfig"
)

// yamlNodes counts the nodes the YAML parser builds for the documents
// parseYAML decodes (the first two), or -1 when it fails on them.
func yamlNodes(text []byte) int {
	dec := yaml.NewDecoder(bytes.NewReader(text))
	total := 0
	for range 2 {
		var n yaml.Node
		if err := dec.Decode(&n); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return -1
		}
		var walk func(*yaml.Node)
		walk = func(x *yaml.Node) {
			total++
			for _, c := range x.Content {
				walk(c)
			}
		}
		walk(&n)
	}
	return total
}

// The estimate that guards the YAML parser is an upper bound of what the
// parser builds, for any text it parses.
func FuzzNodeEstimate(f *testing.F) {
	for _, s := range []string{
		"a: b\n", "[a, b]", "{a, b}", "{a: b, c: d}", "[a: b, c: d]", "[[[a]]]", `{"a":1,"b":[1,2]}`,
		"- - - a\n", "? [a, b]\n: c\n", "a:\n  - x\n  -\n  - y: z\n", "---\na: 1\n---\nb: [2]\n",
		"a: &x {b: 1}\nc: *x\nd:\n  <<: *x\n", "a: |\n  text\n  more\nb: >-\n  folded\n", "{a:1}", "[a,[b,{c: d}],]",
		"'a': \"b\"\n\"c\":d\n", "a: !!str 1\nb: !tag {x: y}\n",
	} {
		f.Add([]byte(s))
	}
	for _, name := range []string{"example.yaml", "example.json", "production.yaml", "invalid.yaml", "design.yaml"} {
		if b, err := os.ReadFile(filepath.Join("..", "testdata", "publisher", name)); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, text []byte) {
		if len(text) > 4096 {
			return
		}
		if n := yamlNodes(text); n > nodeEstimate(text) {
			t.Fatalf("%q: the parser builds %d nodes, the estimate is %d", text, n, nodeEstimate(text))
		}
	})
}

// pos finds a column by rune-count checkpoints; it must agree with
// walking the line rune by rune, as yaml.v3 counts columns.
func TestPosMatchesRuneWalk(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	pieces := []string{"a", "b", " ", "\n", "é", "€", "𝄞", ":", "\n\n"}
	for n := 0; n < 200; n++ {
		var b strings.Builder
		size := r.IntN(3 * runeBlock)
		for b.Len() < size {
			if r.IntN(50) == 0 {
				b.WriteString(strings.Repeat("x", r.IntN(2*runeBlock)))
			}
			b.WriteString(pieces[r.IntN(len(pieces))])
		}
		src := []byte(b.String())
		d := newDoc(src)
		for k := 0; k < 50; k++ {
			line, col := 1+r.IntN(len(d.index().lines)), 1+r.IntN(3*runeBlock)
			start := d.index().lines[line-1]
			want := start
			for i := 1; i < col && want < len(src) && src[want] != '\n'; i++ {
				_, w := utf8.DecodeRune(src[want:])
				want += w
			}
			if got, gotCol := d.pos(line, col); got != want || gotCol != want-start+1 {
				t.Fatalf("text of %d bytes, line %d col %d: got offset %d, want %d", len(src), line, col, got, want)
			}
		}
	}
	if off, col := newDoc(nil).pos(1, 1); off != 0 || col != 1 {
		t.Errorf("empty text: %d, %d", off, col)
	}
}

// services writes a config of one zone with n services, each like the
// services of a real fleet: addresses, a canary choice and a catch-all.
func services(n int, broken bool) []byte {
	var b strings.Builder
	b.WriteString("zones:\n  - origin: example.test.\n    nameservers: [{name: ns1, addresses: [192.0.2.53]}]\n    services:\n")
	for i := range n {
		timeout := "1.5s"
		if broken {
			timeout = "1m" // an error in every service
		}
		fmt.Fprintf(&b, `      - name: svc%d
        addresses: [10.%d.%d.%d]
        choices:
          - clientLanguage: [GO]
            percentage: 20
            serviceConfig:
              loadBalancingConfig: [{round_robin: {}}]
              methodConfig:
                - name: [{service: pkg.Svc%d}]
                  timeout: %s
                  retryPolicy: {maxAttempts: 3, initialBackoff: 0.1s, maxBackoff: 1s, backoffMultiplier: 2, retryableStatusCodes: [UNAVAILABLE]}
          - serviceConfig: {}
`, i, i>>16&255, i>>8&255, i&255, i, timeout)
	}
	return []byte(b.String())
}

func codesOf(ds sc.Diagnostics) []string {
	var out []string
	for _, d := range ds {
		out = append(out, d.Code)
	}
	return out
}

func TestConfigTooLarge(t *testing.T) {
	// Over the size: refused before any parsing.
	big := bytes.Repeat([]byte("# comment\n"), MaxConfigSize/10+1)
	if cfg, ds := Parse(big); cfg != nil || len(ds) != 1 || ds[0].Code != "config-too-large" {
		t.Errorf("%d bytes: got %v", len(big), codesOf(ds))
	}
	// Dense values: a file a fifth of the size limit holds too many.
	dense := append([]byte("zones: ["), bytes.Repeat([]byte("a,"), MaxConfigNodes/2)...)
	dense = append(dense, "a]\n"...)
	start := time.Now()
	cfg, ds := Parse(dense)
	if cfg != nil || len(ds) != 1 || ds[0].Code != "config-too-large" || !strings.Contains(ds[0].Message, "YAML values") {
		t.Errorf("%d dense bytes: got %v", len(dense), ds)
	}
	if took := time.Since(start); took > 5*time.Second && !raceEnabled {
		t.Errorf("refusing %d bytes took %v", len(dense), took)
	}
	// As many values in lines: refused before the text is cut into items,
	// which keeps a position for each line (found in review: 99 MB for a
	// text of 26 MB refused).
	lines := bytes.Repeat([]byte("a\n"), MaxConfigNodes+1)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	cfg, ds = Parse(lines)
	runtime.ReadMemStats(&after)
	if cfg != nil || len(ds) != 1 || ds[0].Code != "config-too-large" {
		t.Errorf("%d lines: got %v", MaxConfigNodes+1, ds)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 1<<20 {
		t.Errorf("refusing %d bytes of lines allocated %d bytes", len(lines), alloc)
	}
}

// Aliases and merge keys expand a small file: what they make counts
// against the limits, and the config is refused past them.
func TestAliasExpansionBounded(t *testing.T) {
	lim := defaultLimits()
	lim.maxExpansion, lim.maxMergedPairs = 64<<10, 10_000

	var b strings.Builder
	b.WriteString("shared: &cfg\n  methodConfig:\n")
	for i := range 200 {
		fmt.Fprintf(&b, "    - name: [{service: pkg.S%d}]\n      timeout: 1s\n", i)
	}
	b.WriteString("many: &keys\n")
	for i := range 1000 {
		fmt.Fprintf(&b, "  k%d: v\n", i)
	}
	b.WriteString("zones:\n  - origin: example.test.\n    nameservers: [{name: ns1, addresses: [192.0.2.53]}]\n    services:\n")
	for i := range 30 {
		fmt.Fprintf(&b, "      - name: s%d\n        serviceConfig: *cfg\n", i)
	}
	_, ds, _ := parse([]byte(b.String()), nil, lim)
	if !slices.Contains(codesOf(ds), "config-too-large") || !strings.Contains(fmt.Sprint(ds), "bytes of JSON") {
		t.Errorf("30 uses of an 8 KB alias under a 64 KB budget: got %v", codesOf(ds))
	}

	b.Reset()
	b.WriteString("many: &keys\n")
	for i := range 1000 {
		fmt.Fprintf(&b, "  k%d: v\n", i)
	}
	b.WriteString("zones:\n")
	for i := range 20 {
		fmt.Fprintf(&b, "  - <<: *keys\n    origin: z%d.test.\n", i)
	}
	_, ds, _ = parse([]byte(b.String()), nil, lim)
	if !slices.Contains(codesOf(ds), "config-too-large") || !strings.Contains(fmt.Sprint(ds), "merge keys") {
		t.Errorf("20 merges of 1000 keys under a budget of 10 000: got %v", codesOf(ds))
	}
}

// A config with thousands of mistakes lists 100, errors first, and counts
// the rest in one last diagnostic.
func TestDiagnosticsCapped(t *testing.T) {
	_, ds := Parse(services(1000, true))
	if len(ds) != sc.MaxDiagnostics+1 {
		t.Fatalf("%d diagnostics, want %d", len(ds), sc.MaxDiagnostics+1)
	}
	last := ds[len(ds)-1]
	if e, _ := last.OmittedCounts(); last.Code != "diagnostics-omitted" || e != 900 || !ds.HasErrors() {
		t.Errorf("last diagnostic %+v (%d errors omitted), want 900", last, e)
	}
	for _, d := range ds[:len(ds)-1] {
		if d.Code != "duration" || d.Line == 0 {
			t.Fatalf("listed %+v", d)
		}
	}
}

// Many zones: the nesting check walks each origin's labels instead of
// comparing every pair of zones.
func TestManyZonesLinear(t *testing.T) {
	var b strings.Builder
	b.WriteString("zones:\n")
	for i := range 20_000 {
		fmt.Fprintf(&b, "  - {origin: z%d.test., nameservers: [ns.other.]}\n", i)
	}
	b.WriteString("  - {origin: test., nameservers: [ns.other.]}\n  - {origin: a.z7.test., nameservers: [ns.other.]}\n")
	start := time.Now()
	_, ds := Parse([]byte(b.String()))
	took := time.Since(start)
	var nested []string
	for _, d := range ds {
		if d.Code == "zone-nested" {
			nested = append(nested, d.Message)
		}
	}
	if len(nested) != 2 || !strings.Contains(nested[0], "zone z0.test. lies inside zone test.") || !strings.Contains(nested[1], "zone a.z7.test. lies inside zone z7.test.") {
		t.Errorf("nesting found: %q", nested)
	}
	// Comparing every pair took seconds; wall time on a shared machine is
	// noisy, so the bound is loose.
	if took > 3*time.Second && !raceEnabled {
		t.Errorf("20 000 zones took %v", took)
	}
}

// Time and memory per service stay flat as the config grows (the passes
// are linear): bytes allocated for 4000 services are at most about four
// times those for 1000.
func TestParseLinearInServices(t *testing.T) {
	if raceEnabled {
		t.Skip("costs are measured without the race detector")
	}
	measure := func(n int) float64 {
		text := services(n, false)
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		if cfg, ds := Parse(text); cfg == nil {
			t.Fatalf("%d services: %v", n, ds)
		}
		runtime.ReadMemStats(&after)
		return float64(after.TotalAlloc - before.TotalAlloc)
	}
	small, large := measure(1000), measure(4000)
	t.Logf("1000 services: %.1f MB, 4000: %.1f MB (ratio %.2f)", small/1e6, large/1e6, large/small)
	if large > 4*1.5*small {
		t.Errorf("4x the services allocate %.1fx the bytes", large/small)
	}
}

// BenchmarkParseServices reads configs of 2 500 to 20 000 services: ns/op
// and B/op grow with n, ns/service and B/service stay flat.
func BenchmarkParseServices(b *testing.B) {
	for _, n := range []int{2500, 5000, 10_000, 20_000} {
		text := services(n, false)
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(text)))
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			for b.Loop() {
				if cfg, _ := Parse(text); cfg == nil {
					b.Fatal("invalid")
				}
			}
			runtime.ReadMemStats(&after)
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/service")
			b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/float64(b.N)/float64(n), "B/service")
		})
	}
}

// Long allow and notify lists: each notify target is checked against the
// allow list through an index, with the same answers as Allowed.
func TestLongTransferLists(t *testing.T) {
	var b strings.Builder
	b.WriteString("zones:\n  - origin: example.test.\n    nameservers: [ns.other.]\n    transfer:\n      allow: [")
	for i := range 20_000 {
		fmt.Fprintf(&b, "10.%d.%d.0/24, ", i>>8&255, i&255)
	}
	b.WriteString("2001:db8::/32, 192.0.2.7]\n      notify: [")
	for i := range 20_000 {
		fmt.Fprintf(&b, "10.%d.%d.9, ", i>>8&255, i&255)
	}
	b.WriteString("10.200.0.1, 192.0.2.7, 192.0.2.8, \"[2001:db8::1]:5300\", \"[2001:db9::1]:53\"]\n")
	start := time.Now()
	_, ds := Parse([]byte(b.String()))
	var refused []string
	for _, d := range ds {
		if d.Code == "notify-not-allowed" {
			refused = append(refused, strings.Fields(d.Message)[1])
		}
	}
	if want := []string{"10.200.0.1:53", "192.0.2.8:53", "[2001:db9::1]:53"}; !slices.Equal(refused, want) {
		t.Errorf("refused %v, want %v", refused, want)
	}
	if took := time.Since(start); took > 5*time.Second && !raceEnabled {
		t.Errorf("took %v", took)
	}
}

// nodeEstimateRef is nodeEstimate as first written, byte by byte: the
// table-driven one must count the same.
func nodeEstimateRef(text []byte) int {
	n := 2
	lineStart := true
	for i := 0; i < len(text); i++ {
		c := text[i]
		if c == '\n' {
			lineStart = true
			continue
		}
		if lineStart && c != ' ' && c != '\t' && c != '\r' {
			n++
			if c == '-' && i+2 < len(text) && text[i+1] == '-' && text[i+2] == '-' {
				n += 2
			}
			lineStart = false
		}
		next := byte('\n')
		if i+1 < len(text) {
			next = text[i+1]
		}
		blank := next == ' ' || next == '\t' || next == '\r' || next == '\n'
		switch c {
		case '-':
			if blank {
				n++
			}
		case '?':
			if blank {
				n += 2
			}
		case ':':
			if blank || i > 0 && (text[i-1] == '"' || text[i-1] == '\'') {
				n++
			}
		case '[', '{', ',':
			n += 2
		}
	}
	return n
}

func TestNodeEstimateIsReference(t *testing.T) {
	texts := []string{"", "\n", "a: b", "- - -\n---\n? x\n: y", "{a: [1, 2], \"k\":v}\n  - x\n\t-\r\n", "::--??[[{{,,\n\n  \"a\":1"}
	if b, err := os.ReadFile("../testdata/publisher/policies.yaml"); err == nil {
		texts = append(texts, string(b))
	}
	r := rand.New(rand.NewPCG(1, 2))
	alphabet := []byte("ab \t\r\n-?:[{,\"'#")
	for range 2000 {
		b := make([]byte, r.IntN(64))
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		texts = append(texts, string(b))
	}
	for _, s := range texts {
		if got, want := nodeEstimate([]byte(s)), nodeEstimateRef([]byte(s)); got != want {
			t.Fatalf("nodeEstimate(%q) = %d, the reference %d", s, got, want)
		}
	}
}

func BenchmarkNodeEstimate(b *testing.B) {
	text := bytes.Repeat([]byte("  - name: svc1\n    addresses: [192.0.2.1]\n    serviceConfig: {methodConfig: [{name: [{service: fleet.Service1}], timeout: 1s}]}\n"), 100000)
	b.SetBytes(int64(len(text)))
	for _, f := range []struct {
		name string
		fn   func([]byte) int
	}{{"table", nodeEstimate}, {"reference", nodeEstimateRef}} {
		b.Run(f.name, func(b *testing.B) {
			for b.Loop() {
				f.fn(text)
			}
		})
	}
}

// TestNestedZoneAsInAConfig: NestedZone, which a store checks a new zone
// with, refuses what a config refuses, with its code and message.
func TestNestedZoneAsInAConfig(t *testing.T) {
	_, ds := Parse([]byte("zones:\n  - {origin: test., nameservers: [ns.other.]}\n  - {origin: sub.example.test., nameservers: [ns.other.]}\n  - {origin: x.test., nameservers: [ns.other.]}\n"))
	var inConfig []string
	for _, d := range ds {
		if d.Code == "zone-nested" {
			inConfig = append(inConfig, d.Message)
		}
	}
	line := func(o string) string {
		return map[string]string{"test.": " (line 2)", "sub.example.test.": " (line 3)"}[o]
	}
	var inStore []string
	for _, c := range []struct {
		origin string
		others []string
	}{{"sub.example.test.", []string{"test."}}, {"x.test.", []string{"sub.example.test.", "test.", "x.test."}}} {
		got := NestedZone(c.origin, c.others, line)
		if len(got) != 1 || got[0].Code != "zone-nested" || got[0].Severity != sc.Error {
			t.Fatalf("NestedZone(%s, %v) = %v", c.origin, c.others, got)
		}
		inStore = append(inStore, got[0].Message)
	}
	if strings.Join(inStore, "\n") != strings.Join(inConfig, "\n") {
		t.Errorf("a store says\n%s\na config says\n%s", strings.Join(inStore, "\n"), strings.Join(inConfig, "\n"))
	}
	// The zone that nothing holds, and that holds nothing.
	for _, c := range []struct {
		origin string
		others []string
	}{{"test.", []string{"test.", "other.", "atest."}}, {"a.b.test.", []string{"b.a.test.", "b.test.c."}}} {
		if got := NestedZone(c.origin, c.others, line); got != nil {
			t.Errorf("NestedZone(%s, %v) = %v", c.origin, c.others, got)
		}
	}
	// The root holds every zone; the nearest zone that holds one is named.
	if got := NestedZone(".", []string{"a.test."}, line); len(got) != 1 || !strings.HasPrefix(got[0].Message, "zone a.test. lies inside zone .:") {
		t.Errorf("the root zone: %v", got)
	}
	if got := NestedZone("a.b.test.", []string{"test.", "b.test."}, line); len(got) != 1 || !strings.HasPrefix(got[0].Message, "zone a.b.test. lies inside zone b.test.:") {
		t.Errorf("two zones hold it: %v", got)
	}
}
