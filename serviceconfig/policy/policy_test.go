package policy

import (
	"bytes"
	"github.com/grpc-config-dns/grpc-config-dns/internal/cputime"

	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

func mustParse(t testing.TB, src string) *Policy {
	t.Helper()
	p, probs := Parse([]byte(src))
	if len(probs) > 0 {
		t.Fatalf("Parse(%s): %v", src, probs)
	}
	return p
}

func mustSet(t testing.TB, srcs ...string) *Set {
	t.Helper()
	var ps []*Policy
	for _, s := range srcs {
		ps = append(ps, mustParse(t, s))
	}
	s, err := NewSet(ps)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func apply(t testing.TB, st *Stack, own string) *Result {
	t.Helper()
	r, err := st.Apply([]byte(own), strings.HasPrefix(own, "["))
	if err != nil {
		t.Fatal(err)
	}
	sameTracked(t, r)
	return r
}

// sameTracked fails t unless r's config is the one its merge that records
// who set what makes.
func sameTracked(t testing.TB, r *Result) {
	t.Helper()
	if tracked := r.tracked().appendJSON(nil); !bytes.Equal(tracked, r.JSON) {
		t.Fatalf("Apply gives %s; with who set what recorded, %s", r.JSON, tracked)
	}
}

func winner(r *Result, path string) string {
	os := r.Origins(path)
	if len(os) == 0 {
		return "?"
	}
	if o := os[len(os)-1]; o.Kind != Own {
		return o.Policy
	}
	return "own"
}

// The seed's issue 9151: a specific policy must win over a general one
// whatever their names. aaa sorts first by name and is general; bbb is
// specific. And the other way round: the specific one's name sorting
// first changes nothing.
func TestSpecificWinsWhateverTheNames(t *testing.T) {
	for _, names := range [][2]string{{"aaa", "bbb"}, {"zzz", "bbb"}} {
		general, specific := names[0], names[1]
		s := mustSet(t,
			`{"name":"`+general+`","targetRef":{"kind":"Zone"},"default":{"retryThrottling":{"maxTokens":10,"tokenRatio":0.1}}}`,
			`{"name":"`+specific+`","targetRef":{"kind":"Service","name":"backend"},"default":{"retryThrottling":{"maxTokens":50}}}`,
		)
		backend := apply(t, s.StackFor(Target{Name: "backend"}), `{}`)
		if got, want := string(backend.JSON), `{"retryThrottling":{"maxTokens":50,"tokenRatio":0.1}}`; got != want {
			t.Errorf("%v: backend = %s, want %s", names, got, want)
		}
		if w := winner(backend, "/retryThrottling/maxTokens"); w != specific {
			t.Errorf("%v: maxTokens set by %s, want %s", names, w, specific)
		}
		if os := backend.Origins("/retryThrottling/maxTokens"); len(os) != 2 || os[0].Policy != general {
			t.Errorf("%v: maxTokens origins %+v, want %s then %s", names, os, general, specific)
		}
		other := apply(t, s.StackFor(Target{Name: "frontend"}), `{}`)
		if got, want := string(other.JSON), `{"retryThrottling":{"maxTokens":10,"tokenRatio":0.1}}`; got != want {
			t.Errorf("%v: frontend = %s, want %s", names, got, want)
		}
	}
}

// The seed's MeshTrafficPermission example: a Zone-wide rule for all,
// and a label-selected exception for backend.
func TestLabelExceptionOverZoneDefault(t *testing.T) {
	s := mustSet(t,
		`{"name":"aaa","targetRef":{"kind":"Zone"},"default":{"loadBalancingConfig":[{"pick_first":{}}]}}`,
		`{"name":"bbb","targetRef":{"kind":"Service","labels":{"app":"backend"}},"default":{"loadBalancingConfig":[{"round_robin":{}}]}}`,
	)
	for _, c := range []struct {
		t    Target
		want string
	}{
		{Target{Name: "backend", Labels: map[string]string{"app": "backend"}}, `{"loadBalancingConfig":[{"round_robin":{}}]}`},
		{Target{Name: "web", Labels: map[string]string{"app": "web"}}, `{"loadBalancingConfig":[{"pick_first":{}}]}`},
		{Target{Name: "db"}, `{"loadBalancingConfig":[{"pick_first":{}}]}`},
	} {
		if got := string(apply(t, s.StackFor(c.t), `{}`).JSON); got != c.want {
			t.Errorf("%s = %s, want %s", c.t.Name, got, c.want)
		}
	}
}

// The seed's sparse example: my-service, labeled-service and
// other-service; four policies. other-service is named by no policy and
// shares the zone's stack with every service that only zone policies
// select.
func TestSparseRules(t *testing.T) {
	s := mustSet(t,
		`{"name":"conf1","targetRef":{"kind":"Zone"},"default":{"a":1}}`,
		`{"name":"conf2","targetRef":{"kind":"Service","labels":{"a-common-label":"foo"}},"default":{"b":2}}`,
		`{"name":"conf3","targetRef":{"kind":"Service","name":"my-service"},"default":{"c":3}}`,
		`{"name":"conf4","targetRef":{"kind":"Service","labels":{"another-common-label":"foo"}},"default":{"d":4}}`,
	)
	targets := []Target{
		{Name: "my-service", Labels: map[string]string{"a-common-label": "foo"}},
		{Name: "labeled-service", Labels: map[string]string{"a-common-label": "foo", "another-common-label": "foo"}},
		{Name: "other-service", Labels: map[string]string{}},
	}
	stacks := map[string]*Stack{}
	for _, tg := range targets {
		stacks[tg.Name] = s.StackFor(tg)
	}
	want := map[string]string{
		"my-service":      `{"a":1,"b":2,"c":3}`,
		"labeled-service": `{"a":1,"b":2,"d":4}`,
		"other-service":   `{"a":1}`,
	}
	for name, w := range want {
		if got := string(apply(t, stacks[name], `{}`).JSON); got != w {
			t.Errorf("%s = %s, want %s", name, got, w)
		}
	}
	if stacks["other-service"] != s.StackFor(Target{Name: "unlabelled-service"}) {
		t.Error("other-service does not share the zone's stack")
	}
	if stacks["my-service"] == stacks["labeled-service"] {
		t.Error("two services selected by different policies share a stack")
	}
	var names []string
	for _, p := range stacks["labeled-service"].Policies {
		names = append(names, p.Name)
	}
	if got := strings.Join(names, ","); got != "conf1,conf2,conf4" {
		t.Errorf("labeled-service merges %s, want conf1,conf2,conf4", got)
	}
}

// The seed's Inspect example: every value's origins, in merge order, and
// the service's own config last, inside every choice.
func TestOriginsInsideChoices(t *testing.T) {
	s := mustSet(t,
		`{"name":"mt-1","targetRef":{"kind":"Zone"},"default":{"methodConfig":[{"name":[{"service":"echo.Echo"}],"timeout":"1s","waitForReady":true}]}}`,
		`{"name":"mt-2","targetRef":{"kind":"Service","name":"backend"},"default":{"methodConfig":[{"name":[{"service":"echo.Echo"}],"timeout":"2s"},{"name":[{"service":"other.Other"}],"timeout":"5s"}]}}`,
		`{"name":"lb","targetRef":{"kind":"Zone"},"default":{"loadBalancingConfig":[{"pick_first":{}}]}}`,
	)
	own := `[{"clientLanguage":["GO"],"percentage":10,"serviceConfig":{"methodConfig":[{"name":[{"service":"echo.Echo"}],"timeout":"3s"}],"loadBalancingConfig":[{"round_robin":{}}]}},{"serviceConfig":{}}]`
	r := apply(t, s.StackFor(Target{Name: "backend"}), own)
	want := `[{"clientLanguage":["GO"],"percentage":10,"serviceConfig":{"loadBalancingConfig":[{"round_robin":{}}],"methodConfig":[{"name":[{"service":"echo.Echo"}],"timeout":"3s","waitForReady":true},{"name":[{"service":"other.Other"}],"timeout":"5s"}]}},` +
		`{"serviceConfig":{"loadBalancingConfig":[{"pick_first":{}}],"methodConfig":[{"name":[{"service":"echo.Echo"}],"timeout":"2s","waitForReady":true},{"name":[{"service":"other.Other"}],"timeout":"5s"}]}}]`
	if string(r.JSON) != want {
		t.Fatalf("JSON =\n%s\nwant\n%s", r.JSON, want)
	}
	got := originsOf(r)
	for path, w := range map[string]string{
		"/0/serviceConfig/methodConfig/0/timeout":      "mt-1/methodConfig/0/timeout mt-2/methodConfig/0/timeout own/0/serviceConfig/methodConfig/0/timeout",
		"/0/serviceConfig/methodConfig/0/waitForReady": "mt-1/methodConfig/0/waitForReady",
		"/1/serviceConfig/methodConfig/1/timeout":      "mt-2/methodConfig/1/timeout",
		"/0/percentage": "own/0/percentage",
		// A list that replaced a list: the service's own overrode lb's,
		// and the name list of a merged entry overrode mt-1's and mt-2's.
		"/0/serviceConfig/loadBalancingConfig/0/round_robin": "lb/loadBalancingConfig own/0/serviceConfig/loadBalancingConfig/0/round_robin",
		"/1/serviceConfig/loadBalancingConfig/0/pick_first":  "lb/loadBalancingConfig/0/pick_first",
		"/0/serviceConfig/methodConfig/0/name/0/service":     "mt-1/methodConfig/0/name mt-2/methodConfig/0/name own/0/serviceConfig/methodConfig/0/name/0/service",
	} {
		if got[path] != w {
			t.Errorf("origins of %s = %q, want %q", path, got[path], w)
		}
	}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// originsOf lists, per field of r, its origins as "policy/path" words
// ("own/path" for the service's own config), in merge order.
func originsOf(r *Result) map[string]string {
	got := map[string]string{}
	for _, f := range r.Fields() {
		var ws []string
		for _, o := range f.Origins {
			ws = append(ws, cmpOr(o.Policy, "own")+o.Path)
		}
		got[f.Path] = strings.Join(ws, " ")
	}
	return got
}

func TestMergeRules(t *testing.T) {
	for _, c := range []struct {
		name, policy, own, want string
		// origins are the expected origins of some fields, as originsOf
		// writes them: a value that replaced another keeps who set the
		// replaced one.
		origins map[string]string
	}{
		{"objects merge key by key", `{"retryThrottling":{"maxTokens":1,"tokenRatio":0.5}}`, `{"retryThrottling":{"maxTokens":2}}`, `{"retryThrottling":{"maxTokens":2,"tokenRatio":0.5}}`,
			map[string]string{"/retryThrottling/maxTokens": "p/retryThrottling/maxTokens own/retryThrottling/maxTokens", "/retryThrottling/tokenRatio": "p/retryThrottling/tokenRatio"}},
		{"other lists replace", `{"loadBalancingConfig":[{"pick_first":{}},{"round_robin":{}}]}`, `{"loadBalancingConfig":[{"weighted_round_robin":{}}]}`, `{"loadBalancingConfig":[{"weighted_round_robin":{}}]}`,
			map[string]string{"/loadBalancingConfig/0/weighted_round_robin": "p/loadBalancingConfig own/loadBalancingConfig/0/weighted_round_robin"}},
		{"a list replacing a list inside a merged entry keeps who set the replaced one",
			`{"methodConfig":[{"name":[{"service":"a"}],"retryPolicy":{"maxAttempts":3,"retryableStatusCodes":["UNAVAILABLE"]}}]}`,
			`{"methodConfig":[{"name":[{"service":"a"}],"retryPolicy":{"retryableStatusCodes":["ABORTED","UNAVAILABLE"]}}]}`,
			`{"methodConfig":[{"name":[{"service":"a"}],"retryPolicy":{"maxAttempts":3,"retryableStatusCodes":["ABORTED","UNAVAILABLE"]}}]}`,
			map[string]string{
				"/methodConfig/0/retryPolicy/retryableStatusCodes/0": "p/methodConfig/0/retryPolicy/retryableStatusCodes own/methodConfig/0/retryPolicy/retryableStatusCodes/0",
				"/methodConfig/0/retryPolicy/retryableStatusCodes/1": "p/methodConfig/0/retryPolicy/retryableStatusCodes own/methodConfig/0/retryPolicy/retryableStatusCodes/1",
				"/methodConfig/0/name/0/service":                     "p/methodConfig/0/name own/methodConfig/0/name/0/service",
				"/methodConfig/0/retryPolicy/maxAttempts":            "p/methodConfig/0/retryPolicy/maxAttempts",
			}},
		{"same methods merge whatever the order of names", `{"methodConfig":[{"name":[{"service":"a"},{"service":"b","method":"M"}],"timeout":"1s"}]}`, `{"methodConfig":[{"name":[{"service":"b","method":"M"},{"service":"a"}],"waitForReady":true}]}`, `{"methodConfig":[{"name":[{"service":"b","method":"M"},{"service":"a"}],"timeout":"1s","waitForReady":true}]}`, nil},
		{"other methods are added", `{"methodConfig":[{"name":[{"service":"a"}],"timeout":"1s"}]}`, `{"methodConfig":[{"name":[{"service":"a","method":"M"}],"timeout":"2s"}]}`, `{"methodConfig":[{"name":[{"service":"a"}],"timeout":"1s"},{"name":[{"service":"a","method":"M"}],"timeout":"2s"}]}`, nil},
		{"null replaces", `{"retryThrottling":{"maxTokens":1}}`, `{"retryThrottling":null}`, `{"retryThrottling":null}`,
			map[string]string{"/retryThrottling": "p/retryThrottling own/retryThrottling"}},
		{"a scalar replaces an object", `{"x":{"y":1}}`, `{"x":2}`, `{"x":2}`, nil},
		{"an empty method is no method", `{"methodConfig":[{"name":[{"service":"a","method":""}],"timeout":"1s"}]}`, `{"methodConfig":[{"name":[{"service":"a"}],"waitForReady":true}]}`, `{"methodConfig":[{"name":[{"service":"a"}],"timeout":"1s","waitForReady":true}]}`, nil},
		{"no method is an empty method", `{"methodConfig":[{"name":[{"service":"a"}],"timeout":"1s"}]}`, `{"methodConfig":[{"name":[{"service":"a","method":""}],"waitForReady":true}]}`, `{"methodConfig":[{"name":[{"service":"a","method":""}],"timeout":"1s","waitForReady":true}]}`, nil},
		{"an empty service is no service", `{"methodConfig":[{"name":[{}],"timeout":"1s"}]}`, `{"methodConfig":[{"name":[{"service":"","method":""}],"waitForReady":true}]}`, `{"methodConfig":[{"name":[{"service":"","method":""}],"timeout":"1s","waitForReady":true}]}`, nil},
		{"names compare decoded", `{"methodConfig":[{"name":[{"service":"\u0061"}],"timeout":"1s"}]}`, `{"methodConfig":[{"name":[{"service":"a"}],"waitForReady":true}]}`, `{"methodConfig":[{"name":[{"service":"a"}],"timeout":"1s","waitForReady":true}]}`, nil},
		{"a null method is no method", `{"methodConfig":[{"name":[{"service":"a","method":null}],"timeout":"1s"}]}`, `{"methodConfig":[{"name":[{"service":"a"}],"waitForReady":true}]}`, `{"methodConfig":[{"name":[{"service":"a"}],"timeout":"1s","waitForReady":true}]}`, nil},
		{"new keys keep the order they are written in", `{"b":1,"a":2}`, `{"c":3}`, `{"b":1,"a":2,"c":3}`, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := mustSet(t, `{"name":"p","targetRef":{"kind":"Zone"},"default":`+c.policy+`}`)
			r := apply(t, s.StackFor(Target{Name: "x"}), c.own)
			if got := string(r.JSON); got != c.want {
				t.Errorf("got  %s\nwant %s", got, c.want)
			}
			got := originsOf(r)
			for path, w := range c.origins {
				if got[path] != w {
					t.Errorf("origins of %s = %q, want %q", path, got[path], w)
				}
			}
		})
	}
}

func TestParseProblems(t *testing.T) {
	for _, c := range []struct{ src, path, code, says string }{
		{`[]`, "", CodeField, "must be an object"},
		{`{"name":"x","targetRef":{"kind":"Zone"}}`, "", CodeField, `no default`},
		{`{"name":"X y","targetRef":{"kind":"Zone"},"default":{}}`, "/name", CodeName, "lower-case"},
		{`{"name":"x","targetRef":{"kind":"Mesh"},"default":{}}`, "/targetRef/kind", CodeTargetRef, "use Zone or Service"},
		{`{"name":"x","targetRef":{"kind":"Service"},"default":{}}`, "/targetRef", CodeTargetRef, `needs "name"`},
		{`{"name":"x","targetRef":{"kind":"Service","name":"a","labels":{"a":"b"}},"default":{}}`, "/targetRef/labels", CodeTargetRef, "not both"},
		{`{"name":"x","targetRef":{"kind":"Service","labels":{}},"default":{}}`, "/targetRef/labels", CodeTargetRef, "Zone"},
		{`{"name":"x","targetRef":{"kind":"Service","labels":{"a b":"c"}},"default":{}}`, "/targetRef/labels/a b", CodeLabel, "label key"},
		{`{"name":"x","targetRef":{"kind":"Zone","name":"a"},"default":{}}`, "/targetRef", CodeTargetRef, "remove"},
		{`{"name":"x","targetRef":{"kind":"Zone"},"default":[]}`, "/default", CodeDefault, "must be an object"},
		{`{"name":"x","targetRef":{"kind":"Zone"},"default":{"percentage":5}}`, "/default/percentage", CodeDefault, "belongs to a choice"},
		{`{"name":"x","targetRef":{"kind":"Zone"},"default":{},"spec":1}`, "/spec", CodeField, "unknown key"},
		{`{"name":"x","name":"y"}`, "", CodeSyntax, "not valid JSON"},
	} {
		p, probs := Parse([]byte(c.src))
		if p != nil || len(probs) == 0 {
			t.Errorf("Parse(%s) accepted it", c.src)
			continue
		}
		found := false
		for _, pr := range probs {
			if pr.Path == c.path && pr.Code == c.code && strings.Contains(pr.Message, c.says) {
				found = true
			}
		}
		if !found {
			t.Errorf("Parse(%s) = %v, want a %s at %q saying %q", c.src, probs, c.code, c.path, c.says)
		}
	}
}

func TestDuplicateNamesRefused(t *testing.T) {
	a := mustParse(t, `{"name":"x","targetRef":{"kind":"Zone"},"default":{}}`)
	b := mustParse(t, `{"name":"x","targetRef":{"kind":"Service","name":"s"},"default":{}}`)
	if _, err := NewSet([]*Policy{a, b}); err == nil || !strings.Contains(err.Error(), `"x"`) {
		t.Errorf("NewSet with a name twice: %v", err)
	}
}

// fleet makes n services with labels and m policies of every kind.
func fleet(n, m int) ([]*Policy, []Target, [][]byte) {
	var ps []*Policy
	for i := range m {
		var ref string
		switch i % 3 {
		case 0:
			ref = `{"kind":"Zone"}`
		case 1:
			ref = fmt.Sprintf(`{"kind":"Service","labels":{"team":"t%d"}}`, i%7)
		default:
			ref = fmt.Sprintf(`{"kind":"Service","name":"svc-%d"}`, (i*37)%n)
		}
		def := fmt.Sprintf(`{"methodConfig":[{"name":[{"service":"s%d.S"}],"timeout":"%ds"},{"name":[{"service":"echo.Echo"}],"maxRequestMessageBytes":%d}],"retryThrottling":{"maxTokens":%d},"loadBalancingConfig":[{"round_robin":{}}]}`, i%5, i+1, 1000+i, i+1)
		p, probs := Parse(fmt.Appendf(nil, `{"name":"p-%02d","targetRef":%s,"default":%s}`, i, ref, def))
		if len(probs) > 0 {
			panic(fmt.Sprint(probs))
		}
		ps = append(ps, p)
	}
	var ts []Target
	var owns [][]byte
	for i := range n {
		ts = append(ts, Target{Name: fmt.Sprintf("svc-%d", i), Labels: map[string]string{"team": fmt.Sprintf("t%d", i%7), "tier": "web"}})
		owns = append(owns, fmt.Appendf(nil, `[{"clientLanguage":["GO"],"percentage":%d,"serviceConfig":{"methodConfig":[{"name":[{"service":"echo.Echo"}],"timeout":"%dms"}]}},{"serviceConfig":{}}]`, i%100, i))
	}
	return ps, ts, owns
}

// A property: the order in which policies are listed never changes any
// service's config or origins.
func TestShuffledPoliciesSameResults(t *testing.T) {
	ps, ts, owns := fleet(60, 30)
	// Same kind, same target, names that sort otherwise than listed.
	for i, n := range []string{"zz", "aa", "mm"} {
		ps = append(ps, mustParse(t, fmt.Sprintf(`{"name":%q,"targetRef":{"kind":"Service","labels":{"tier":"web"}},"default":{"retryThrottling":{"tokenRatio":0.%d}}}`, n, i+1)))
	}
	results := func(ps []*Policy) string {
		s, err := NewSet(ps)
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		for i, tg := range ts {
			r, err := s.StackFor(tg).Apply(owns[i], true)
			if err != nil {
				t.Fatal(err)
			}
			sameTracked(t, r)
			js, _ := json.Marshal(r.Fields())
			fmt.Fprintf(&b, "%s %s %s\n", tg.Name, r.JSON, js)
		}
		return b.String()
	}
	want := results(ps)
	rng := rand.New(rand.NewPCG(1, 2))
	for range 50 {
		shuffled := append([]*Policy(nil), ps...)
		rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		if got := results(shuffled); got != want {
			t.Fatalf("shuffling the policies changed a result")
		}
	}
}

func TestStackForMatchesSelects(t *testing.T) {
	ps, ts, _ := fleet(50, 20)
	s, _ := NewSet(ps)
	for _, tg := range ts {
		var want []string
		for _, p := range ps {
			if p.Selects(tg) {
				want = append(want, p.Name)
			}
		}
		var got []string
		st := s.StackFor(tg)
		for _, p := range st.Policies {
			got = append(got, p.Name)
		}
		if !reflect.DeepEqual(sorted(got), sorted(want)) {
			t.Errorf("%s: selected %v, want %v", tg.Name, got, want)
		}
		for i := 1; i < len(got); i++ {
			a, b := st.Policies[i-1], st.Policies[i]
			if Less(a, b) >= 0 {
				t.Errorf("%s: %s before %s", tg.Name, a.Name, b.Name)
			}
		}
	}
}

func sorted(s []string) []string { return slices.Sorted(slices.Values(s)) }

// BenchmarkResolve300x50 is the measure: the final config and
// origins of 300 services under 50 policies, per snapshot.
func BenchmarkResolve300x50(b *testing.B) {
	ps, ts, owns := fleet(300, 50)
	b.ReportAllocs()
	for b.Loop() {
		resolveSnapshot(b, ps, ts, owns)
	}
}

func resolveSnapshot(tb testing.TB, ps []*Policy, ts []Target, owns [][]byte) {
	s, err := NewSet(ps)
	if err != nil {
		tb.Fatal(err)
	}
	for i, tg := range ts {
		if _, err := s.StackFor(tg).Apply(owns[i], true); err != nil {
			tb.Fatal(err)
		}
	}
}

// TestResolveBudget keeps the benchmark's promise under go test: 300
// services × 50 policies within 100 ms (generous for -race).
func TestResolveBudget(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector slows the code several times")
	}
	ps, ts, owns := fleet(300, 50)
	// CPU time, not wall time: CI runs other test packages beside this
	// one on two cores, and wall time then measures them too.
	var cpu time.Duration
	r := testing.Benchmark(func(b *testing.B) {
		start := cputime.Process()
		for b.Loop() {
			resolveSnapshot(b, ps, ts, owns)
		}
		cpu = cputime.Process() - start
	})
	per := cpu / time.Duration(max(r.N, 1))
	t.Logf("300 services x 50 policies: %v of CPU per snapshot (%v of wall time)", per, r.T/time.Duration(max(r.N, 1)))
	if per.Milliseconds() >= 100 {
		t.Errorf("resolving a snapshot took %v of CPU, want < 100ms", per)
	}
}

// TestApplyLeavesTheStackAlone: one stack serves every service it
// selects, at once on a publisher's cores, and a merge shares the stack's
// values rather than copying them. Each service's result, and who set
// each of its values, must be what a stack of its own gives, and the
// stack's defaults must stay as they were (under -race: nothing writes
// them).
func TestApplyLeavesTheStackAlone(t *testing.T) {
	policies := []string{
		`{"name":"zone","targetRef":{"kind":"Zone"},"default":{"methodConfig":[{"name":[{}],"waitForReady":true,"retryPolicy":{"maxAttempts":3,"retryableStatusCodes":["UNAVAILABLE"]}},{"name":[{"service":"a"}],"timeout":"1s"}],"retryThrottling":{"maxTokens":10,"tokenRatio":0.1}}}`,
		`{"name":"lb","targetRef":{"kind":"Service","labels":{"team":"t"}},"default":{"loadBalancingConfig":[{"round_robin":{}}],"retryThrottling":{"tokenRatio":0.5}}}`,
	}
	owns := []string{
		`{"methodConfig":[{"name":[{}],"retryPolicy":{"maxAttempts":5}}]}`,
		`{"methodConfig":[{"name":[{"service":"a"}],"timeout":"2s"},{"name":[{"service":"b"}],"timeout":"3s"}]}`,
		`{"retryThrottling":{"maxTokens":1},"loadBalancingConfig":[{"pick_first":{}}]}`,
		`{"retryThrottling":null,"methodConfig":null}`,
		`[{"serviceConfig":{"methodConfig":[{"name":[{}],"timeout":"4s"}]}},{"clientLanguage":["go"],"serviceConfig":{"retryThrottling":{"tokenRatio":1}}}]`,
		`{}`,
	}
	target := Target{Name: "svc", Labels: map[string]string{"team": "t"}}
	shared := mustSet(t, policies...).StackFor(target)
	defaults := string(shared.Defaults())
	type result struct{ json, origins string }
	want := make([]result, len(owns))
	for i, own := range owns {
		r := apply(t, mustSet(t, policies...).StackFor(target), own)
		want[i] = result{string(r.JSON), fmt.Sprint(originsOf(r))}
	}
	var wg sync.WaitGroup
	errs := make(chan string, 8*len(owns))
	for g := range 8 {
		wg.Go(func() {
			for k := range 20 * len(owns) {
				i := (g + k) % len(owns)
				r, err := shared.Apply([]byte(owns[i]), strings.HasPrefix(owns[i], "["))
				if err != nil {
					errs <- err.Error()
					return
				}
				if got := (result{string(r.JSON), fmt.Sprint(originsOf(r))}); got != want[i] {
					errs <- fmt.Sprintf("%s:\ngot  %+v\nwant %+v", owns[i], got, want[i])
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	if got := string(shared.Defaults()); got != defaults {
		t.Errorf("the stack's defaults changed:\ngot  %s\nwant %s", got, defaults)
	}
}
