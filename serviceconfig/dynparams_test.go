package serviceconfig

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/grpc-config-dns/grpc-config-dns/internal/jtree"
	"github.com/grpc-config-dns/grpc-config-dns/serviceconfig/constraints"
)

// TP2's constraint examples, in protobuf JSON form.
const (
	envProd      = `{"constraint":{"key":"env","value":"prod"}}`
	envTest      = `{"constraint":{"key":"env","value":"test"}}`
	envProdV1    = `{"andConstraints":{"constraints":[{"constraint":{"key":"env","value":"prod"}},{"constraint":{"key":"version","value":"v1"}}]}}`
	envProdV2    = `{"andConstraints":{"constraints":[{"constraint":{"key":"env","value":"prod"}},{"constraint":{"key":"version","value":"v2"}}]}}`
	envProdNoVer = `{"andConstraints":{"constraints":[{"constraint":{"key":"env","value":"prod"}},{"notConstraints":{"constraint":{"key":"version","exists":{}}}}]}}`
	prodOrTest   = `{"orConstraints":{"constraints":[{"constraint":{"key":"env","value":"prod"}},{"constraint":{"key":"env","value":"test"}}]}}`
	qaOrTest     = `{"orConstraints":{"constraints":[{"constraint":{"key":"env","value":"qa"}},{"constraint":{"key":"env","value":"test"}}]}}`
)

// The 4-variant table of TP2's final example.
var tp2Table = []string{
	`{"andConstraints":{"constraints":[{"notConstraints":{"constraint":{"key":"env","value":"prod"}}},{"notConstraints":{"constraint":{"key":"version","value":"v1"}}}]}}`,
	`{"andConstraints":{"constraints":[{"constraint":{"key":"env","value":"prod"}},{"notConstraints":{"constraint":{"key":"version","value":"v1"}}}]}}`,
	`{"andConstraints":{"constraints":[{"notConstraints":{"constraint":{"key":"env","value":"prod"}}},{"constraint":{"key":"version","value":"v1"}}]}}`,
	`{"andConstraints":{"constraints":[{"constraint":{"key":"env","value":"prod"}},{"constraint":{"key":"version","value":"v1"}}]}}`,
}

func params(kv ...string) map[string]string {
	m := map[string]string{}
	for _, p := range kv {
		k, v, _ := strings.Cut(p, "=")
		m[k] = v
	}
	return m
}

func mustConstraints(t testing.TB, s string) *constraints.Expr {
	t.Helper()
	e, err := parseConstraintsJSON([]byte(s))
	if err != nil {
		t.Fatalf("parseConstraintsJSON(%s): %v", s, err)
	}
	return e
}

func TestConstraintMatch(t *testing.T) {
	for _, tc := range []struct {
		expr   string
		params map[string]string
		want   bool
	}{
		{envProd, params("env=prod"), true},
		{envProd, params("env=test"), false},
		{envProd, params(), false},
		// Unconstrained parameters never prevent a match.
		{envProd, params("env=prod", "version=v1"), true},
		{envProdV1, params("env=prod", "version=v1"), true},
		{envProdV1, params("env=prod", "version=v2"), false},
		{envProdV1, params("env=prod"), false},
		{envProdNoVer, params("env=prod"), true},
		{envProdNoVer, params("env=prod", "version=v1"), false},
		{envProdNoVer, params("env=prod", "version="), false},
		{prodOrTest, params("env=test"), true},
		{prodOrTest, params("env=qa"), false},
		{`{"constraint":{"key":"v","exists":{}}}`, params("v="), true},
		{`{"andConstraints":{"constraints":[]}}`, params(), true},
		{`{"orConstraints":{"constraints":[]}}`, params("env=prod"), false},
		{`{"notConstraints":` + envProd + `}`, params(), true},
	} {
		if got := mustConstraints(t, tc.expr).Match(tc.params); got != tc.want {
			t.Errorf("%s on %v = %v, want %v", tc.expr, tc.params, got, tc.want)
		}
	}
}

func TestConstraintProtoNamesWrittenCamelCase(t *testing.T) {
	in := `[{"dynamicParameterConstraints":{"or_constraints":{"constraints":[{"not_constraints":{"constraint":{"key":"a","exists":{}}}},{"and_constraints":{"constraints":[]}}]}},"serviceConfig":{}}]`
	ch, err := ParseChoices([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	want := `[{"dynamicParameterConstraints":{"orConstraints":{"constraints":[{"notConstraints":{"constraint":{"key":"a","exists":{}}}},{"andConstraints":{"constraints":[]}}]}},"serviceConfig":{}}]`
	if got := string(ch.Compact()); got != want {
		t.Errorf("Compact =\n%s\nwant\n%s", got, want)
	}
}

func TestConstraintErrors(t *testing.T) {
	deep := envProd
	for i := 0; i < constraints.MaxDepth; i++ {
		deep = `{"notConstraints":` + deep + `}`
	}
	for _, tc := range []struct{ in, code, msg string }{
		{`{}`, "dynparams-constraint", "exactly one"},
		{`{"constraint":{"key":"a","value":"b"},"notConstraints":` + envProd + `}`, "dynparams-constraint", "exactly one"},
		{`{"constraint":{"key":"","value":"b"}}`, "dynparams-constraint", "key must not be empty"},
		{`{"constraint":{"key":"a","value":""}}`, "dynparams-constraint", "value must not be empty"},
		{`{"constraint":{"key":"a","value":"b","exists":{}}}`, "dynparams-constraint", "not both"},
		{`{"constraint":{"key":"a"}}`, "dynparams-constraint", "neither value nor exists"},
		{`{"constraint":{"value":"b"}}`, "dynparams-constraint", "no key"},
		{`{"constraint":{"key":"a","exists":true}}`, "dynparams-constraint", "must be an object"},
		{`{"constraint":{"key":"a","exists":{"x":1}}}`, "dynparams-constraint", "takes no fields"},
		{`{"andConstraints":[` + envProd + `]}`, "dynparams-constraint", `{"constraints":[…]}`},
		{`{"not_constraint":` + envProd + `}`, "dynparams-constraint", `did you mean "notConstraints"?`},
		{`{"orConstraint":{"constraints":[]}}`, "dynparams-constraint", `did you mean "orConstraints"?`},
		{`{"constraint":{"key":"a","valeu":"b"}}`, "dynparams-constraint", `did you mean "value"?`},
		{deep, "dynparams-too-deep", "32 levels"},
		{`"env=prod"`, "dynparams-constraint", "must be an object"},
	} {
		_, err := parseConstraintsJSON([]byte(tc.in))
		ie, ok := err.(*InvalidError)
		if !ok {
			t.Errorf("parseConstraintsJSON(%s) = %v, want %s", tc.in, err, tc.code)
			continue
		}
		d := ie.Diagnostics[0]
		if d.Code != tc.code || !strings.Contains(d.Message, tc.msg) {
			t.Errorf("parseConstraintsJSON(%s): %s %q, want %s mentioning %q", tc.in, d.Code, d.Message, tc.code, tc.msg)
		}
	}
}

// record builds a choice list whose choice i carries exprs[i] ("" for none)
// and a service config naming it, so the chosen variant is visible.
func record(exprs ...string) string {
	var parts []string
	for i, e := range exprs {
		dp := ""
		if e != "" {
			dp = `"dynamicParameterConstraints":` + e + `,`
		}
		parts = append(parts, fmt.Sprintf(`{%s"serviceConfig":{"healthCheckConfig":{"serviceName":"variant-%d"}}}`, dp, i))
	}
	return "[" + strings.Join(parts, ",") + "]"
}

func lintCodes(t *testing.T, rec string) ([]string, Diagnostics) {
	t.Helper()
	_, ds := Lint([]byte(rec), LintOptions{})
	var codes []string
	for _, d := range ds {
		codes = append(codes, d.Code)
	}
	return codes, ds
}

// notAboutVariants are the warnings that do not judge the variants
// themselves: the answer's size, and what other gRPC clients do with our
// extension key (TestExtensionKeyWarning covers it) or with a list that has
// no catch-all choice.
func notAboutVariants(code string) bool {
	return strings.HasPrefix(code, "txt-size") || code == "choice-extension-key" || code == "choices-no-catch-all"
}

// wantLint checks that lint reports exactly codes about the variants.
func wantLint(t *testing.T, name, rec string, codes ...string) Diagnostics {
	t.Helper()
	got, ds := lintCodes(t, rec)
	got = slices.DeleteFunc(got, notAboutVariants)
	ds = slices.DeleteFunc(ds, func(d Diagnostic) bool { return notAboutVariants(d.Code) })
	slices.Sort(got)
	slices.Sort(codes)
	if !slices.Equal(got, codes) {
		t.Errorf("%s: lint codes %v, want %v", name, got, codes)
		for _, d := range ds {
			t.Logf("  %s", d)
		}
	}
	return ds
}

func selectFor(t *testing.T, rec string, kv ...string) int {
	t.Helper()
	ch, err := ParseChoices([]byte(rec))
	if err != nil {
		t.Fatal(err)
	}
	return ch.Select(Client{Language: "go", Bucket: 1, Params: params(kv...)})
}

func TestTP2FourVariantTable(t *testing.T) {
	rec := record(tp2Table...)
	for _, env := range []string{"prod", "canary", "test"} {
		for _, ver := range []string{"v1", "v2", "v3"} {
			want := 0
			if env == "prod" {
				want |= 1
			}
			if ver == "v1" {
				want |= 2
			}
			if got := selectFor(t, rec, "env="+env, "version="+ver); got != want {
				t.Errorf("{env=%s, version=%s}: variant %d, want %d", env, ver, got, want)
			}
		}
	}
	wantLint(t, "4-variant table", rec)
}

// TP2 "Transition Scenarios": each step, which variant each client gets, and
// whether lint is clean (TP2: well-formed) or warns (TP2: ambiguous).
func TestTP2Transitions(t *testing.T) {
	basic := record(envProd, envTest)
	t.Run("basic", func(t *testing.T) {
		wantLint(t, "basic", basic)
		if selectFor(t, basic, "env=prod") != 0 || selectFor(t, basic, "env=test") != 1 {
			t.Error("wrong variant")
		}
	})
	t.Run("clients add the new key first", func(t *testing.T) {
		// The server is unchanged; the new key does not affect matching.
		for _, c := range []struct {
			env, ver string
			want     int
		}{{"prod", "v1", 0}, {"prod", "v2", 0}, {"test", "v1", 1}, {"test", "v2", 1}} {
			if got := selectFor(t, basic, "env="+c.env, "version="+c.ver); got != c.want {
				t.Errorf("{env=%s, version=%s}: %d, want %d", c.env, c.ver, got, c.want)
			}
		}
	})
	t.Run("server replaces one variant by two", func(t *testing.T) {
		rec := record(envProdV1, envProdV2, envTest)
		for _, c := range []struct {
			env, ver string
			want     int
		}{{"prod", "v1", 0}, {"prod", "v2", 1}, {"test", "v1", 2}, {"test", "v2", 2}} {
			if got := selectFor(t, rec, "env="+c.env, "version="+c.ver); got != c.want {
				t.Errorf("{env=%s, version=%s}: %d, want %d", c.env, c.ver, got, c.want)
			}
		}
		// No overlap and no gap. TP2's best practice asks every variant to
		// constrain the same keys, which the env=test variant of TP2's own
		// example does not: lint says so, and only that.
		ds := wantLint(t, "replace", rec, "dynparams-keyset")
		if len(ds) > 0 && !strings.Contains(ds[0].Message, `choice 2 constrains "env" but not "version"`) {
			t.Errorf("keyset message: %s", ds[0].Message)
		}
	})
	t.Run("server adds the key first, without exists: ambiguous", func(t *testing.T) {
		rec := record(envProd, envProdV1)
		ds := wantLint(t, "ambiguous", rec, "dynparams-keyset", "dynparams-overlap", "choice-unreachable")
		for _, d := range ds {
			if d.Code == "dynparams-overlap" && !strings.Contains(d.Message, "parameters {env=prod, version=v1} match both choice 0 and choice 1: the first, choice 0, wins") {
				t.Errorf("overlap message: %s", d.Message)
			}
			if d.Code == "choice-unreachable" && !strings.Contains(d.Message, "taken first by choice 0") {
				t.Errorf("unreachable message: %s", d.Message)
			}
		}
		// Older clients get the old variant; newer ones hit the ambiguity,
		// which first-match resolves to choice 0.
		if selectFor(t, rec, "env=prod") != 0 || selectFor(t, rec, "env=prod", "version=v1") != 0 {
			t.Error("wrong variant")
		}
	})
	t.Run("server adds the key first, with exists", func(t *testing.T) {
		rec := record(envProdNoVer, envProdV1)
		wantLint(t, "exists", rec)
		if selectFor(t, rec, "env=prod") != 0 || selectFor(t, rec, "env=prod", "version=v1") != 1 || selectFor(t, rec, "env=prod", "version=v2") != -1 {
			t.Error("wrong variant")
		}
	})
	t.Run("overlapping values", func(t *testing.T) {
		ds := wantLint(t, "overlap", record(prodOrTest, qaOrTest), "dynparams-overlap")
		if len(ds) > 0 && !strings.Contains(ds[0].Message, "parameters {env=test} match both choice 0 and choice 1") {
			t.Errorf("overlap message: %s", ds[0].Message)
		}
	})
}

func TestLintGapAndEmptyLists(t *testing.T) {
	// env is named with prod and qa; {env=qa, version=v1} matches nothing.
	ds := wantLint(t, "gap", record(envProdV1, `{"andConstraints":{"constraints":[{"constraint":{"key":"env","value":"qa"}},{"notConstraints":{"constraint":{"key":"version","value":"v1"}}}]}}`), "dynparams-gap")
	if len(ds) > 0 && !strings.Contains(ds[0].Message, "no choice matches parameters {env=qa, version=v1}") {
		t.Errorf("gap message: %s", ds[0].Message)
	}
	// A last choice without constraints catches everything: no gap.
	wantLint(t, "catch-all", record(envProd, ""))
	wantLint(t, "empty and", record(`{"andConstraints":{"constraints":[]}}`), "dynparams-empty-and")
	wantLint(t, "empty or", record(`{"orConstraints":{"constraints":[]}}`, ""), "dynparams-empty-or")
}

// Other clients reject or ignore our extension: lint says so, once.
func TestExtensionKeyWarning(t *testing.T) {
	got, _ := lintCodes(t, record(tp2Table...))
	n := 0
	for _, c := range got {
		if c == "choice-extension-key" {
			n++
		}
	}
	if n != 1 {
		t.Errorf("got %d choice-extension-key warnings, want 1", n)
	}
}

func TestLintUnreachable(t *testing.T) {
	for _, tc := range []struct {
		name, rec, msg string
	}{
		{"catch-all in the middle", `[{"clientLanguage":["java"],"serviceConfig":{}},{"serviceConfig":{}},{"clientLanguage":["GO"],"serviceConfig":{}}]`, "choice 2 can never be selected: every client it matches is taken first by choice 1, which matches every client"},
		{"smaller percentage after a larger one", `[{"percentage":50,"serviceConfig":{}},{"percentage":30,"serviceConfig":{}},{"serviceConfig":{}}]`, "choice 1 can never be selected: every client it matches is taken first by choice 0"},
		{"language subset", `[{"clientLanguage":["GO","java"],"serviceConfig":{}},{"clientLanguage":["GO"],"clientHostname":["h"],"serviceConfig":{}},{"serviceConfig":{}}]`, "taken first by choice 0"},
		{"two choices together", `[{"clientLanguage":["GO"],"serviceConfig":{}},{"clientLanguage":["java"],"serviceConfig":{}},{"clientLanguage":["GO","java"],"serviceConfig":{}},{"serviceConfig":{}}]`, "taken first by choices 0 and 1 together"},
		{"contradiction", `[{"dynamicParameterConstraints":{"andConstraints":{"constraints":[` + envProd + `,` + envTest + `]}},"serviceConfig":{}},{"serviceConfig":{}}]`, "criteria contradict each other"},
	} {
		ds := wantLint(t, tc.name, tc.rec, "choice-unreachable")
		if len(ds) > 0 && !strings.Contains(ds[0].Message, tc.msg) {
			t.Errorf("%s: %s", tc.name, ds[0].Message)
		}
	}
	// Reachable: a larger percentage after a smaller one.
	wantLint(t, "reachable", `[{"percentage":30,"serviceConfig":{}},{"percentage":50,"serviceConfig":{}},{"serviceConfig":{}}]`)
}

// naiveMatch evaluates the canonical JSON form of constraints directly, as
// a second, independent implementation.
func naiveMatch(v any, p map[string]string) bool {
	m := v.(map[string]any)
	if c, ok := m["constraint"].(map[string]any); ok {
		got, present := p[c["key"].(string)]
		if _, ok := c["exists"]; ok {
			return present
		}
		return present && got == c["value"]
	}
	if a, ok := m["andConstraints"].(map[string]any); ok {
		for _, x := range a["constraints"].([]any) {
			if !naiveMatch(x, p) {
				return false
			}
		}
		return true
	}
	if o, ok := m["orConstraints"].(map[string]any); ok {
		for _, x := range o["constraints"].([]any) {
			if naiveMatch(x, p) {
				return true
			}
		}
		return false
	}
	return !naiveMatch(m["notConstraints"], p)
}

func randomExpr(r *rand.Rand, depth int) *constraints.Expr {
	keys, vals := []string{"a", "b", "c"}, []string{"x", "y"}
	if depth > 3 || r.IntN(3) == 0 {
		if r.IntN(3) == 0 {
			return &constraints.Expr{Op: constraints.Exists, Key: keys[r.IntN(3)]}
		}
		return &constraints.Expr{Op: constraints.Value, Key: keys[r.IntN(3)], Value: vals[r.IntN(2)]}
	}
	switch r.IntN(3) {
	case 0:
		return &constraints.Expr{Op: constraints.Not, Args: []*constraints.Expr{randomExpr(r, depth+1)}}
	default:
		e := &constraints.Expr{Op: constraints.And, Args: []*constraints.Expr{}}
		if r.IntN(2) == 0 {
			e.Op = constraints.Or
		}
		for n := r.IntN(4); n > 0; n-- {
			e.Args = append(e.Args, randomExpr(r, depth+1))
		}
		return e
	}
}

// The compiled matcher agrees with the naive evaluator on random trees and
// parameter maps, and the JSON form survives a round trip.
func TestMatchAgreesWithNaiveEvaluator(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 3000; i++ {
		e := randomExpr(r, 0)
		js := e.AppendJSON(nil)
		var v any
		if err := json.Unmarshal(js, &v); err != nil {
			t.Fatal(err)
		}
		back, err := parseConstraintsJSON(js)
		if err != nil {
			t.Fatalf("%s: %v", js, err)
		}
		for j := 0; j < 10; j++ {
			p := map[string]string{}
			for _, k := range []string{"a", "b", "c", "d"} {
				switch r.IntN(4) {
				case 0:
					p[k] = "x"
				case 1:
					p[k] = "y"
				case 2:
					p[k] = "z"
				}
			}
			want := naiveMatch(v, p)
			if e.Match(p) != want || back.Match(p) != want {
				t.Fatalf("%s on %v: Match %v, naive %v", js, p, e.Match(p), want)
			}
		}
	}
}

func TestSelectExplainsConstraints(t *testing.T) {
	ch, err := ParseChoices([]byte(record(tp2Table...)))
	if err != nil {
		t.Fatal(err)
	}
	v := ch.Explain(Client{Language: "go", Bucket: 1, Params: params("env=prod", "version=v1")})
	if got := v[3].String(); !strings.Contains(got, "selected") || !strings.Contains(got, "dynamic parameters {env=prod, version=v1} match env=prod AND version=v1") {
		t.Errorf("verdict 3: %s", got)
	}
	if got := v[0].String(); !strings.Contains(got, "NO: dynamic parameters {env=prod, version=v1} do not match NOT env=prod AND NOT version=v1") {
		t.Errorf("verdict 0: %s", got)
	}
}

func FuzzParseConstraints(f *testing.F) {
	for _, s := range append([]string{envProd, envProdNoVer, prodOrTest, `{"or_constraints":{"constraints":[]}}`}, tp2Table...) {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := parseConstraintsJSON(b)
		if err != nil {
			return
		}
		out := e.AppendJSON(nil)
		for _, c := range out {
			if c < 0x20 || c >= 0x7f {
				t.Fatalf("AppendJSON of %s wrote byte 0x%02x: records must be printable ASCII: %s", b, c, out)
			}
		}
		back, err := parseConstraintsJSON(out)
		if err != nil || back.String() != e.String() {
			t.Fatalf("round trip of %s: %v", b, err)
		}
	})
}

// 64 variants over 8 keys of 5 values: every variant constrains every key.
func bigVariantRecord() string {
	r := rand.New(rand.NewPCG(3, 4))
	seen := map[string]bool{}
	var exprs []string
	for len(exprs) < 64 {
		var cs, sig []string
		for k := 0; k < 8; k++ {
			v := r.IntN(5)
			sig = append(sig, fmt.Sprint(v))
			if v == 4 {
				cs = append(cs, fmt.Sprintf(`{"notConstraints":{"constraint":{"key":"k%d","exists":{}}}}`, k))
				continue
			}
			cs = append(cs, fmt.Sprintf(`{"constraint":{"key":"k%d","value":"v%d"}}`, k, v))
		}
		if s := strings.Join(sig, ""); !seen[s] {
			seen[s] = true
			exprs = append(exprs, `{"andConstraints":{"constraints":[`+strings.Join(cs, ",")+`]}}`)
		}
	}
	return record(exprs...)
}

func TestVariantAnalysisIsFast(t *testing.T) {
	rec := []byte(bigVariantRecord())
	start := time.Now()
	_, ds := Lint(rec, LintOptions{})
	elapsed := time.Since(start)
	for _, d := range ds {
		if d.Code == "dynparams-analysis-incomplete" || d.Code == "dynparams-overlap" || d.Code == "choice-unreachable" {
			t.Errorf("unexpected %s: %s", d.Code, d.Message)
		}
	}
	t.Logf("lint of 64 variants x 8 keys x 5 values: %v", elapsed)
}

func BenchmarkMatchAnd4(b *testing.B) {
	e := mustConstraints(b, `{"andConstraints":{"constraints":[{"constraint":{"key":"env","value":"prod"}},{"constraint":{"key":"version","value":"v1"}},{"constraint":{"key":"zone","value":"eu-west1"}},{"constraint":{"key":"tier","exists":{}}}]}}`)
	p := params("env=prod", "version=v1", "zone=eu-west1", "tier=gold", "team=storage")
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if !e.Match(p) {
			b.Fatal("no match")
		}
	}
}

func BenchmarkVariantAnalysis64x8x5(b *testing.B) {
	rec := []byte(bigVariantRecord())
	ch, err := ParseChoices(rec)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		c := newChecker(ch.tree)
		lintVariants(c, ch)
	}
}

// parseConstraintsJSON parses a DynamicParameterConstraints message on its
// own, in its protobuf JSON form, such as {"constraint":{"key":"env","value":"prod"}}.
// The error, if any, is an *InvalidError. Only tests parse a message
// alone: records hold constraints inside choices.
func parseConstraintsJSON(data []byte) (*constraints.Expr, error) {
	t, err := jtree.Parse(data)
	if err != nil {
		return nil, Diagnostics{syntaxDiagnostic(err)}.Err()
	}
	c := newChecker(t)
	c.errorsOnly = true
	e := parseConstraints(c, 0, 1)
	if err := c.diags.Err(); err != nil {
		return nil, err
	}
	return e, nil
}
