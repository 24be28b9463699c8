package serviceconfig

import (
	"github.com/grpc-config-dns/grpc-config-dns/internal/cputime"

	"bytes"
	"fmt"
	"math/big"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"
	"time"
)

// The schema sees long numbers through schemaNumber: it must judge the
// stand-in as it would the number, against every bound the schema can set.
func TestSchemaNumberKeepsWhatTheSchemaChecks(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	digits := func(n int, nonzero bool) string {
		var b strings.Builder
		for i := 0; i < n; i++ {
			d := byte('0' + r.IntN(10))
			if nonzero && (i == 0 || i == n-1) && d == '0' {
				d = '7'
			}
			b.WriteByte(d)
		}
		return b.String()
	}
	cases := []string{
		strings.Repeat("9", 100), "-" + strings.Repeat("9", 100),
		"0." + strings.Repeat("0", 100) + "1", "5." + strings.Repeat("0", 100),
		"5." + strings.Repeat("0", 100) + "1", "4." + strings.Repeat("9", 100),
		"100." + strings.Repeat("0", 80) + "1", "100" + strings.Repeat("0", 80) + "e-80",
		"1" + strings.Repeat("0", 80) + "e-81", "1" + strings.Repeat("0", 80) + "e-79",
		strings.Repeat("0", 100), "-0." + strings.Repeat("0", 100), "1" + strings.Repeat("0", 70) + "e99999",
		"1" + strings.Repeat("0", 70) + "e-99999", "0." + strings.Repeat("0", 70) + "1e70", "8388608." + strings.Repeat("0", 70),
		"8388607." + strings.Repeat("9", 70), "8388608" + strings.Repeat("0", 70) + "E-70",
	}
	for i := 0; i < 2000; i++ {
		s := digits(1+r.IntN(40), true)
		if r.IntN(2) == 0 {
			s += "." + digits(1+r.IntN(60), false)
		}
		if r.IntN(2) == 0 {
			s += "e" + []string{"", "+", "-"}[r.IntN(3)] + digits(1+r.IntN(2), false)
		}
		if r.IntN(3) == 0 {
			s = "-" + s
		}
		for len(s) <= maxSchemaNumber {
			s = strings.Replace(s, ".", "."+digits(8, false), 1)
			if !strings.Contains(s, ".") {
				s = strings.Replace(s, "e", ".0000000000000000e", 1)
				if !strings.Contains(s, ".") {
					s += "." + strings.Repeat("0", 30)
				}
			}
		}
		cases = append(cases, s)
	}
	// Exponents big.Rat itself cannot take.
	if got := schemaNumber([]byte("1e" + strings.Repeat("9", 80))); got != "1e31" {
		t.Errorf("1e999…: stand-in %q", got)
	}
	if got := schemaNumber([]byte("-1.5E-" + strings.Repeat("9", 80))); got != "-1e-31" {
		t.Errorf("-1.5e-999…: stand-in %q", got)
	}
	bounds := []int64{0, 1, 2, 5, 16, 100, 1000, 8388608, -1, -100}
	for _, s := range cases {
		got := schemaNumber([]byte(s))
		if len(got) > 2*maxSchemaNumber {
			t.Errorf("%.40s…: stand-in %q is long", s, got)
		}
		want, ok1 := new(big.Rat).SetString(s)
		stand, ok2 := new(big.Rat).SetString(got)
		if !ok1 || !ok2 {
			t.Fatalf("%.40s… or %q does not parse", s, got)
		}
		if want.Sign() != stand.Sign() || want.IsInt() != stand.IsInt() {
			t.Errorf("%.60s…: stand-in %q differs in sign or integer-ness", s, got)
		}
		for _, b := range bounds {
			bb := new(big.Rat).SetInt64(b)
			if want.Cmp(bb) != stand.Cmp(bb) {
				t.Errorf("%.60s…: stand-in %q compares differently with %d", s, got, b)
			}
		}
	}
}

// hostileChoices are choice lists of n choices of the shapes that used to
// cost lint the square of n (40 000 of them: 10-54 s).
var hostileChoices = []struct {
	name string
	gen  func(i int) string
	tail string
}{
	// Distinct hostnames: one dimension of the variant analysis each.
	{"hostnames", func(i int) string { return fmt.Sprintf(`{"clientHostname":["h%d"],"serviceConfig":{}}`, i) }, `,{"serviceConfig":{}}`},
	// An error in every choice, reported by the rules and by the schema.
	{"unknown-keys", func(i int) string { return fmt.Sprintf(`{"clientHostnam":["h%d"],"serviceConfig":{}}`, i) }, ""},
	// A warning in every choice's config, and percentages to search.
	{"warnings", func(i int) string { return fmt.Sprintf(`{"percentage":%d,"serviceConfig":{"foo":1}}`, i%99+1) }, `,{"serviceConfig":{}}`},
	// Every choice after the first unreachable.
	{"unreachable", func(int) string { return `{"serviceConfig":{}}` }, ""},
	// One dynamic parameter key per variant.
	{"keysets", func(i int) string {
		return fmt.Sprintf(`{"dynamicParameterConstraints":{"constraint":{"key":"k%d","value":"v"}},"serviceConfig":{}}`, i)
	}, ""},
}

func choiceList(n int, gen func(int) string, tail string) []byte {
	var b strings.Builder
	b.WriteByte('[')
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(gen(i))
	}
	b.WriteString(tail)
	b.WriteByte(']')
	return []byte(b.String())
}

// lintCost lints text and returns the bytes allocated and the time taken
// (the least of three runs, against a noisy machine).
func lintCost(text []byte) (alloc float64, took time.Duration) {
	took = time.Hour
	// The best of five: a shared machine stalls single runs.
	for range 5 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		// CPU time: other test packages run beside this one in CI.
		start := cputime.Process()
		Lint(text, LintOptions{})
		took = min(took, cputime.Process()-start)
		runtime.ReadMemStats(&after)
		alloc = float64(after.TotalAlloc - before.TotalAlloc)
	}
	return alloc, took
}

// Lint's time and memory grow linearly with the number of choices: four
// times the choices cost at most about four times as much (slack 1.5x for
// memory, 3x for time on a shared machine), where the quadratic passes
// cost sixteen times.
func TestLintLinearInChoices(t *testing.T) {
	if raceEnabled {
		t.Skip("costs are measured without the race detector")
	}
	for _, h := range hostileChoices {
		small, large := choiceList(1000, h.gen, h.tail), choiceList(4000, h.gen, h.tail)
		as, ts := lintCost(small)
		al, tl := lintCost(large)
		t.Logf("%-12s 1000 choices: %6.1f MB %8v; 4000: %6.1f MB %8v (x%.1f, x%.1f)", h.name, as/1e6, ts, al/1e6, tl, al/as, float64(tl)/float64(ts))
		if al > 4*1.5*as {
			t.Errorf("%s: 4x the choices allocate %.1fx the bytes", h.name, al/as)
		}
		// Quadratic is 16x; linear measured 1.6-5.9x on a loaded machine.
		if tl > 12*ts && tl > 100*time.Millisecond {
			t.Errorf("%s: 4x the choices take %.1fx the time", h.name, float64(tl)/float64(ts))
		}
		if tl > 5*time.Second {
			t.Errorf("%s: lint of 4000 choices took %v", h.name, tl)
		}
	}
}

// BenchmarkLintChoices lints each hostile shape at 1000 to 8000 choices:
// ns/choice and B/choice stay flat (compare the sizes of one run).
func BenchmarkLintChoices(b *testing.B) {
	for _, h := range hostileChoices {
		for _, n := range []int{1000, 2000, 4000, 8000} {
			text := choiceList(n, h.gen, h.tail)
			b.Run(fmt.Sprintf("shape=%s/n=%d", h.name, n), func(b *testing.B) {
				b.ReportAllocs()
				b.SetBytes(int64(len(text)))
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				for b.Loop() {
					Lint(text, LintOptions{})
				}
				runtime.ReadMemStats(&after)
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/choice")
				b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/float64(b.N)/float64(n), "B/choice")
			})
		}
	}
}

// A number of a million digits (or a huge exponent) costs lint about as
// much as any other million bytes; it took 2.6 s through big.Rat.
func TestHugeNumbersCheap(t *testing.T) {
	if raceEnabled {
		t.Skip("costs are measured without the race detector")
	}
	for _, num := range []string{
		strings.Repeat("9", 1_000_000),
		"0." + strings.Repeat("1", 1_000_000),
		"1e" + strings.Repeat("9", 1_000_000),
		"-" + strings.Repeat("1", 500_000) + "." + strings.Repeat("2", 500_000) + "e-77",
	} {
		for _, field := range []string{`"methodConfig":[{"name":[{}],"maxRequestMessageBytes":%s}]`, `"retryThrottling":{"maxTokens":10,"tokenRatio":%s}`} {
			text := []byte(`[{"serviceConfig":{` + fmt.Sprintf(field, num) + `}}]`)
			alloc, took := lintCost(text)
			_, ds := Lint(text, LintOptions{})
			if took > time.Second || alloc > 20*float64(len(text)) {
				t.Errorf("%.20s… in %.30s: lint took %v and %.1f MB", num, field, took, alloc/1e6)
			}
			for _, d := range ds {
				if len(d.Message) > 1000 {
					t.Errorf("%.20s…: a message of %d bytes: %.100s", num, len(d.Message), d.Message)
				}
			}
		}
	}
}

// Lint lists at most MaxDiagnostics diagnostics, errors before warnings,
// and one last that counts the others.
func TestLintDiagnosticsCapped(t *testing.T) {
	// 300 warnings (unknown service config fields) before 20 errors.
	text := choiceList(300, func(i int) string { return fmt.Sprintf(`{"serviceConfig":{"f%d":1}}`, i) },
		strings.Repeat(`,{"clientHostnam":[],"serviceConfig":{}}`, 20))
	_, ds := Lint(text, LintOptions{})
	if len(ds) != MaxDiagnostics+1 {
		t.Fatalf("%d diagnostics, want %d", len(ds), MaxDiagnostics+1)
	}
	errs := 0
	for _, d := range ds[:MaxDiagnostics] {
		if d.Severity == Error {
			errs++
		}
		if d.Code == omittedCode || d.Line == 0 {
			t.Fatalf("listed %+v", d)
		}
	}
	last := ds[MaxDiagnostics]
	if e, w := last.OmittedCounts(); last.Code != omittedCode || errs < 20 || e != 0 || w < 200 || !strings.Contains(last.Message, fmt.Sprint(w)) {
		t.Errorf("%d errors listed; last %+v", errs, last)
	}
	// The same through the resolver's path: ParseChoices keeps errors only.
	_, err := ParseChoices(choiceList(5000, func(i int) string { return `{"clientHostnam":[],"serviceConfig":{}}` }, ""))
	if err == nil || !strings.Contains(err.Error(), "(and 4999 more errors)") {
		t.Errorf("ParseChoices: %v", err)
	}
}

// Text that no record can fit is refused before any work proportional to
// it.
func TestRecordTextTooLarge(t *testing.T) {
	text := choiceList(30_000, func(i int) string { return fmt.Sprintf(`{"clientHostname":["host-%d"],"serviceConfig":{}}`, i) }, "")
	if len(text) <= MaxRecordText {
		t.Fatalf("only %d bytes", len(text))
	}
	if _, ds := Lint(text, LintOptions{}); len(ds) != 1 || ds[0].Code != "input-too-large" || ds[0].Line != 1 {
		t.Errorf("Lint: %+v", ds)
	}
	if ch, ds := choicesFromText(text); ch != nil || len(ds) != 1 || ds[0].Code != "input-too-large" {
		t.Errorf("choicesFromText: %+v", ds)
	}
	if ds, _ := lintJSON(text, KindChoices, LintOptions{}); len(ds) != 1 || ds[0].Code != "input-too-large" {
		t.Errorf("lintJSON: %+v", ds)
	}
	// A large JSON object is a publisher config if "zones" is among its
	// members, wherever it is, without being parsed.
	obj := []byte(`{"server":{},"x":"` + strings.Repeat("a", MaxRecordText) + `","zones":[]}`)
	if k := DetectKind(obj); k != KindPublisher {
		t.Errorf("a large object with zones: %v", k)
	}
	if k := DetectKind(append([]byte(`{"x":{"zones":1},"y":"`), append(bytes.Repeat([]byte("a"), MaxRecordText), `"}`...)...)); k != KindServiceConfig {
		t.Errorf("a large object with zones nested: %v", k)
	}
}

// attributeRef is the reading of RFC 1464 attribute names that attribute
// replaces, which built the name whatever its length.
func attributeRef(s string) (value string, ok, exact bool) {
	if strings.HasPrefix(s, Attribute+"=") {
		return s[len(Attribute)+1:], true, true
	}
	var name []byte
	trailing := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '`' && i+1 < len(s):
			i++
			name = append(name, s[i])
			trailing = 0
		case c == '=':
			name = name[:len(name)-trailing]
			if strings.EqualFold(string(name), Attribute) {
				return s[i+1:], true, false
			}
			return "", false, false
		case (c == ' ' || c == '\t') && len(name) == 0:
		case c == ' ' || c == '\t':
			name = append(name, c)
			trailing++
		default:
			name = append(name, c)
			trailing = 0
		}
	}
	return "", false, false
}

func TestAttributeMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	pieces := []string{"grpc_config", "GRPC_config", "g", "rpc", "_", "config", " ", "\t", "`", "=", "x", "`=", "` ", "K", "é"}
	for range 100_000 {
		var b strings.Builder
		for range r.IntN(8) {
			b.WriteString(pieces[r.IntN(len(pieces))])
		}
		s := b.String()
		v, ok, exact := attributeValue(s)
		rv, rok, rexact := attributeRef(s)
		if v != rv || ok != rok || exact != rexact {
			t.Fatalf("%q: got %q %v %v, want %q %v %v", s, v, ok, exact, rv, rok, rexact)
		}
		if eq, ok2, _ := attribute([]byte(s)); ok2 != ok || ok && s[eq+1:] != v {
			t.Fatalf("%q: []byte form differs", s)
		}
	}
}

// The cap on diagnostics does not hide from the publisher's compat gate
// that grpc-go refuses a config: a warning naming a client that refuses
// the config is listed even past the cap, when no listed one names it.
func TestCapKeepsRefusals(t *testing.T) {
	var b strings.Builder
	for i := range 2 * MaxDiagnostics {
		fmt.Fprintf(&b, `"f%d":1,`, i)
	}
	cfg := `{` + b.String() + `"retryThrottling":{"maxTokens":"10","tokenRatio":0.1}}`
	ch, err := ParseChoices([]byte(`[{"serviceConfig":` + cfg + `}]`))
	if err != nil {
		t.Fatal(err)
	}
	rec, ds := Publish(Source{JSON: []byte(`[{"serviceConfig":` + cfg + `}]`), Kind: KindChoices}, PublishOptions{Clients: ClientGo})
	if rec != nil || !strings.Contains(ds.Err().Error(), "written as a string") {
		t.Errorf("a refusal past the cap is lost: %v", ds)
	}
	if got := string(ch.GrpcGoConfig(0)); !strings.Contains(got, `"maxTokens":10`) {
		t.Errorf("GrpcGoConfig: %.100s", got)
	}
}

// An input beyond MaxInputSize is refused by its size, with a diagnostic
// that says how large it is when that is known.
func TestInputTooLarge(t *testing.T) {
	for _, tc := range []struct {
		size int64
		want string
	}{
		{MaxInputSize + 1, "the input is 67108865 bytes, more than 67108864 bytes (64 MiB)"},
		{-1, "the input is more than 67108864 bytes (64 MiB)"},
	} {
		d := InputTooLarge(tc.size)
		if d.Code != CodeInputTooLarge || d.Severity != Error || d.Offset != -1 || !strings.HasPrefix(d.Message, tc.want) {
			t.Errorf("InputTooLarge(%d) = %+v, want %s… [%s]", tc.size, d, tc.want, CodeInputTooLarge)
		}
	}
}

// The exported codes are registered, with the severity callers expect of
// them (errors: a tool refuses the input).
func TestExportedCodesRegistered(t *testing.T) {
	registered := map[string]Severity{}
	for _, c := range Codes() {
		registered[c.Code] = c.Severity
	}
	for _, code := range []string{CodeInputTooLarge, CodeGrpcGoChannelFailure, CodeMisspelledField} {
		if sev, ok := registered[code]; !ok || sev != Error {
			t.Errorf("%s: registered %v, severity %v; want a registered error", code, ok, sev)
		}
	}
}
