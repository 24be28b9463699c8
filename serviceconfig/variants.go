package serviceconfig

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/grpc-config-dns/grpc-config-dns/serviceconfig/constraints"
)

// The variant analysis answers questions about every possible client at
// once: can a choice ever be selected, can two variants match the same
// dynamic parameters, is there a parameter set no variant serves. A client
// is abstracted to finitely many cases per criterion: each language and
// hostname the record names plus "another one"; one bucket per percentage
// threshold; for each dynamic parameter key, each value the constraints
// name, "another value" and "absent". The questions are satisfiability
// problems over that space, solved by a depth-first search that evaluates
// every choice in three-valued logic on partial assignments and prunes as
// soon as the answer is decided, so it never enumerates the space blindly.

// analysisBudget bounds the work of one lint run's variant analysis, in
// steps: one per search node, per choice evaluated and per constraint
// node evaluated, so that the cost is bounded whatever the shape of the
// record (many choices make each evaluation of "no earlier choice matches"
// long, not the search deep). Realistic records need a few hundred
// thousand; beyond the budget lint says it gave up.
const analysisBudget = 20_000_000

type tri uint8

const (
	triFalse tri = iota
	triTrue
	triUnknown
)

func triNot(t tri) tri {
	switch t {
	case triFalse:
		return triTrue
	case triTrue:
		return triFalse
	}
	return triUnknown
}

// dimension kinds of the abstract client.
const (
	dimLang = iota
	dimHost
	dimBucket
	dimParam
)

type dimension struct {
	kind int
	key  int // dimParam: index into space.keys
	size int
	// order is the order in which the search tries the values.
	order []int
}

// space is the abstract client space of one record.
type space struct {
	langs, hosts []string
	buckets      []int // representative bucket of each class
	keys         []string
	values       [][]string // per key; then "other" and "absent"
	dims         []dimension
	choices      []vchoice
	// The index of each language, hostname and value (per key) in the
	// lists above.
	langIndex, hostIndex, keyIndex map[string]int
	valueIndex                     []map[string]int
	// all and params list the dimensions of every search over all
	// criteria, and over the parameters alone.
	all, params []int
	// steps is what is left of analysisBudget.
	steps int
	// scratch is the assignment searches work on.
	scratch assignment
}

// vchoice is a choice compiled against the space.
type vchoice struct {
	index int // position in the record
	// langs and hosts are the sorted indexes of the languages and
	// hostnames the choice names, nil when it names none: sets of the size
	// of the choice's own lists, not of the record's.
	langs      []int
	hosts      []int
	percentage int
	expr       *vexpr // nil: no constraints
}

type vexpr struct {
	op   constraints.Op
	key  int
	val  int
	args []*vexpr
}

func (sp *space) other(key int) int  { return len(sp.values[key]) }
func (sp *space) absent(key int) int { return len(sp.values[key]) + 1 }

func newSpace(list []Choice) *space {
	sp := &space{langIndex: map[string]int{}, hostIndex: map[string]int{}, keyIndex: map[string]int{}, steps: analysisBudget}
	for i := range list {
		sp.addCriteria(&list[i])
	}
	sp.buckets = bucketBounds(list)
	for i := range list {
		sp.choices = append(sp.choices, sp.compile(i, &list[i]))
	}
	sp.addDims()
	return sp
}

// addCriteria indexes the languages, hostnames and parameters that choice
// ch names, after those of the choices before it.
func (sp *space) addCriteria(ch *Choice) {
	for _, l := range ch.ClientLanguage {
		if l := strings.ToLower(l); !hasIndex(sp.langIndex, l) {
			sp.langIndex[l] = len(sp.langs)
			sp.langs = append(sp.langs, l)
		}
	}
	for _, h := range ch.ClientHostname {
		if !hasIndex(sp.hostIndex, h) {
			sp.hostIndex[h] = len(sp.hosts)
			sp.hosts = append(sp.hosts, h)
		}
	}
	if ch.Constraints != nil {
		sp.addParams(ch.Constraints)
	}
}

// addParams indexes the keys that e tests and the values it compares them
// with.
func (sp *space) addParams(e *constraints.Expr) {
	// Map order is random; sorted keys keep the witnesses lint prints the
	// same from run to run.
	values := e.Values()
	for _, k := range slices.Sorted(maps.Keys(values)) {
		ki := sp.addKey(k)
		for _, v := range values[k] {
			if !hasIndex(sp.valueIndex[ki], v) {
				sp.valueIndex[ki][v] = len(sp.values[ki])
				sp.values[ki] = append(sp.values[ki], v)
			}
		}
	}
	for _, k := range e.Keys() {
		sp.addKey(k)
	}
}

// addKey returns the index of parameter key k, indexing it if it is new.
func (sp *space) addKey(k string) int {
	ki, ok := sp.keyIndex[k]
	if !ok {
		ki = len(sp.keys)
		sp.keyIndex[k] = ki
		sp.keys = append(sp.keys, k)
		sp.values = append(sp.values, nil)
		sp.valueIndex = append(sp.valueIndex, map[string]int{})
	}
	return ki
}

// bucketBounds are the upper bounds of the percentage buckets that the
// choices of list tell apart: their percentages between 0 and 100, sorted,
// and 100.
func bucketBounds(list []Choice) []int {
	var pcts []int
	seen := map[int]bool{}
	for i := range list {
		if p := list[i].Percentage; p > 0 && p < 100 && !seen[p] {
			seen[p] = true
			pcts = append(pcts, p)
		}
	}
	slices.Sort(pcts)
	return append(pcts, 100)
}

// addDims lays out the dimensions of the space: language, hostname and
// bucket, then a parameter's for each key.
func (sp *space) addDims() {
	sp.dims = append(sp.dims,
		dimension{kind: dimLang, size: len(sp.langs) + 1},
		dimension{kind: dimHost, size: len(sp.hosts) + 1},
		dimension{kind: dimBucket, size: len(sp.buckets)})
	for k := range sp.keys {
		sp.dims = append(sp.dims, dimension{kind: dimParam, key: k, size: len(sp.values[k]) + 2})
	}
	for i := range sp.dims {
		sp.dims[i].order = sp.valueOrder(sp.dims[i])
		sp.all = append(sp.all, i)
		if i >= paramBase {
			sp.params = append(sp.params, i)
		}
	}
}

func hasIndex(m map[string]int, s string) bool {
	_, ok := m[s]
	return ok
}

func (sp *space) compile(i int, ch *Choice) vchoice {
	vc := vchoice{index: i, percentage: ch.Percentage}
	if len(ch.ClientLanguage) > 0 {
		for _, l := range ch.ClientLanguage {
			vc.langs = append(vc.langs, sp.langIndex[strings.ToLower(l)])
		}
		slices.Sort(vc.langs)
	}
	if len(ch.ClientHostname) > 0 {
		for _, h := range ch.ClientHostname {
			vc.hosts = append(vc.hosts, sp.hostIndex[h])
		}
		slices.Sort(vc.hosts)
	}
	if ch.Constraints != nil {
		vc.expr = sp.compileExpr(ch.Constraints)
	}
	return vc
}

func (sp *space) compileExpr(e *constraints.Expr) *vexpr {
	v := &vexpr{op: e.Op}
	if e.Op == constraints.Value || e.Op == constraints.Exists {
		v.key = sp.keyIndex[e.Key]
		if e.Op == constraints.Value {
			v.val = sp.valueIndex[v.key][e.Value]
		}
	}
	for _, a := range e.Args {
		v.args = append(v.args, sp.compileExpr(a))
	}
	return v
}

// assignment is a partial abstract client: one value per dimension, or -1.
type assignment []int

func (sp *space) evalExpr(e *vexpr, a assignment, base int) tri {
	sp.steps--
	switch e.op {
	case constraints.Value, constraints.Exists:
		v := a[base+e.key]
		if v < 0 {
			return triUnknown
		}
		if e.op == constraints.Exists {
			if v == sp.absent(e.key) {
				return triFalse
			}
			return triTrue
		}
		if v == e.val {
			return triTrue
		}
		return triFalse
	case constraints.And:
		r := triTrue
		for _, x := range e.args {
			switch sp.evalExpr(x, a, base) {
			case triFalse:
				return triFalse
			case triUnknown:
				r = triUnknown
			}
		}
		return r
	case constraints.Or:
		r := triFalse
		for _, x := range e.args {
			switch sp.evalExpr(x, a, base) {
			case triTrue:
				return triTrue
			case triUnknown:
				r = triUnknown
			}
		}
		return r
	case constraints.Not:
		return triNot(sp.evalExpr(e.args[0], a, base))
	}
	return triFalse
}

const paramBase = 3 // dimensions before the first parameter key

// evalParams evaluates only the dynamic parameter constraints of choice c.
func (sp *space) evalParams(c *vchoice, a assignment) tri {
	if c.expr == nil {
		return triTrue
	}
	return sp.evalExpr(c.expr, a, paramBase)
}

// eval evaluates every criterion of choice c.
func (sp *space) eval(c *vchoice, a assignment) tri {
	sp.steps--
	r := triTrue
	and := func(t tri) bool {
		if t == triFalse {
			r = triFalse
			return false
		}
		if t == triUnknown {
			r = triUnknown
		}
		return true
	}
	member := func(set []int, v int) tri {
		switch {
		case set == nil:
			return triTrue
		case v < 0:
			return triUnknown
		}
		if _, found := slices.BinarySearch(set, v); found {
			return triTrue
		}
		return triFalse
	}
	if !and(member(c.langs, a[dimLang])) || !and(member(c.hosts, a[dimHost])) {
		return triFalse
	}
	switch {
	case c.percentage < 0 || c.percentage >= 100:
	case c.percentage == 0:
		return triFalse
	case a[dimBucket] < 0:
		r = triUnknown
	case sp.buckets[a[dimBucket]] > c.percentage:
		return triFalse
	}
	if !and(sp.evalParams(c, a)) {
		return triFalse
	}
	return r
}

// searcher looks for an assignment that makes goal true.
type searcher struct {
	sp   *space
	goal func(assignment) tri
	dims []int // dimension indexes to assign, in order
	// named, when set, tries only the values the constraints name.
	named bool
	// maxPresent limits how many parameter keys may be present (-1: no
	// limit), to find the smallest witness.
	maxPresent int
	gaveUp     bool
	a          assignment
}

// exhausted reports whether the analysis budget is spent.
func (sp *space) exhausted() bool { return sp.steps <= 0 }

// run searches. The assignment it returns is valid until the next search.
func (s *searcher) run() (assignment, bool) {
	// One assignment serves every search, and clearing it counts against
	// the budget: a record of thousands of keys has thousands of
	// dimensions, and thousands of pairs of variants to search.
	if s.sp.scratch == nil {
		s.sp.scratch = make(assignment, len(s.sp.dims))
	}
	s.a = s.sp.scratch
	for i := range s.a {
		s.a[i] = -1
	}
	s.sp.steps -= len(s.a)
	if s.dfs(0, 0) {
		return s.a, true
	}
	return nil, false
}

func (s *searcher) dfs(i, present int) bool {
	if s.sp.exhausted() {
		s.gaveUp = true
		return false
	}
	s.sp.steps--
	switch s.goal(s.a) {
	case triFalse:
		return false
	case triTrue:
		return true
	}
	if i == len(s.dims) {
		return false
	}
	di := s.dims[i]
	d := s.sp.dims[di]
	order := d.order
	if s.named {
		order = order[:len(s.sp.values[d.key])]
	}
	for _, v := range order {
		p := present
		if d.kind == dimParam && v != s.sp.absent(d.key) {
			p++
			if s.maxPresent >= 0 && p > s.maxPresent {
				continue
			}
		}
		s.a[di] = v
		if s.dfs(i+1, p) {
			return true
		}
		if s.gaveUp {
			break
		}
	}
	s.a[di] = -1
	return false
}

// valueOrder tries, for a parameter key, the named values first, then
// "absent", then "another value", so that witnesses read naturally.
func (sp *space) valueOrder(d dimension) []int {
	out := make([]int, d.size)
	for i := range out {
		out[i] = i
	}
	if d.kind == dimParam {
		n := len(sp.values[d.key])
		out = out[:0]
		for i := 0; i < n; i++ {
			out = append(out, i)
		}
		out = append(out, sp.absent(d.key), sp.other(d.key))
	}
	return out
}

// minimalWitness finds a satisfying assignment with as few parameter keys
// present as possible.
func (sp *space) minimalWitness(goal func(assignment) tri, dims []int) (assignment, bool, bool) {
	for maxPresent := 0; maxPresent <= len(sp.keys); maxPresent++ {
		s := &searcher{sp: sp, goal: goal, dims: dims, maxPresent: maxPresent}
		a, ok := s.run()
		if ok {
			return a, true, false
		}
		if s.gaveUp {
			return nil, false, true
		}
	}
	return nil, false, false
}

// formatParams writes the parameter part of an assignment: {env=test},
// {env=<another value>}, {} when no key is present.
func (sp *space) formatParams(a assignment) string {
	var parts []string
	for k := range sp.keys {
		v := a[paramBase+k]
		switch {
		case v < 0 || v == sp.absent(k):
		case v == sp.other(k):
			parts = append(parts, sp.keys[k]+"=<another value>")
		default:
			parts = append(parts, sp.keys[k]+"="+sp.values[k][v])
		}
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// lintVariants adds the TP2 best-practice checks and choice reachability.
// Its searches share one budget (analysisBudget); each loop stops when it
// is spent, so that a record of thousands of choices costs the budget, not
// the square of its length.
func lintVariants(c *checker, ch *Choices) {
	if len(ch.List) == 0 {
		return
	}
	v := &variantLint{c: c, ch: ch, sp: newSpace(ch.List), keys: map[int][]string{}}
	for i := range ch.List {
		if ch.List[i].Constraints != nil {
			v.variants = append(v.variants, i)
			v.keys[i] = ch.List[i].Constraints.Keys()
		}
	}
	v.keysets()
	v.overlaps()
	v.gap()
	v.reachability()
	if v.gaveUp {
		c.report(0, codeDynParamsAnalysisIncomplete, "the variant analysis gave up after %d search steps, so overlaps, gaps and unreachable choices may go unreported; simplify the constraints or split the record", analysisBudget)
	}
}

// variantLint is the state of lintVariants' checks.
type variantLint struct {
	c  *checker
	ch *Choices
	sp *space
	// variants are the choices with dynamic parameter constraints; keys
	// the keys each constrains, sorted.
	variants []int
	keys     map[int][]string
	// gaveUp is set when a search ran out of the budget.
	gaveUp bool
}

// at reports about choice i, at its member key ("" or absent: the choice).
func (v *variantLint) at(i int, key string, code diagCode, format string, args ...any) {
	c, t := v.c, v.c.t
	c.pushIdx(v.ch.List[i].elem)
	defer c.pop()
	n := v.ch.List[i].node
	if key != "" {
		if m := t.Get(n, key); m >= 0 {
			c.pushKey(keyNodeOf(t, n, m))
			c.report(m, code, format, args...)
			c.pop()
			return
		}
	}
	c.report(n, code, format, args...)
}

// keysets checks that all variants constrain the same keys (TP2 best
// practice).
func (v *variantLint) keysets() {
	if len(v.variants) < 2 {
		return
	}
	constrainedBy := map[string][]int{} // key → the variants constraining it
	for _, i := range v.variants {
		for _, k := range v.keys[i] {
			constrainedBy[k] = append(constrainedBy[k], i)
		}
	}
	union := slices.Sorted(maps.Keys(constrainedBy))
	for _, i := range v.variants {
		own := v.keys[i]
		if len(own) == len(union) {
			continue // a subset of the union, as large: all of it
		}
		if v.c.full(codeDynParamsKeyset) {
			v.at(i, keyDynamicParameterConstraints, codeDynParamsKeyset, "") // counted only
			continue
		}
		var missing []string
		for _, k := range union {
			if _, found := slices.BinarySearch(own, k); !found {
				missing = append(missing, k)
			}
		}
		var others []int
		for _, k := range missing {
			others = append(others, constrainedBy[k]...)
		}
		slices.Sort(others)
		others = slices.Compact(others)
		what := "choice"
		if len(others) > 1 {
			what = "choices"
		}
		v.at(i, keyDynamicParameterConstraints, codeDynParamsKeyset,
			"choice %d constrains %s but not %s, which %s %s constrain%s: TP2 asks every variant to constrain the same keys, so that a client sending a new key cannot match two variants; constrain %s here too (for clients that do not send it yet: {\"notConstraints\":{\"constraint\":{\"key\":%q,\"exists\":{}}}})",
			i, quoteKeys(own), quoteKeys(missing), what, joinInts(others), map[bool]string{true: "s", false: ""}[len(others) == 1], quoteKeys(missing), missing[0])
	}
}

// overlaps reports two variants that match the same parameters.
func (v *variantLint) overlaps() {
	sp := v.sp
	for x, i := range v.variants {
		for _, j := range v.variants[x+1:] {
			if sp.exhausted() {
				v.gaveUp = true
				return
			}
			ci, cj := &sp.choices[i], &sp.choices[j]
			goal := func(a assignment) tri { return triAnd(sp.eval(ci, a), sp.eval(cj, a)) }
			// Most pairs are disjoint: prove that with one search before
			// looking for the smallest witness of an overlap.
			any := &searcher{sp: sp, goal: goal, dims: sp.all, maxPresent: -1}
			if _, ok := any.run(); !ok {
				v.gaveUp = v.gaveUp || any.gaveUp
				continue
			}
			if v.c.full(codeDynParamsOverlap) {
				v.at(j, keyDynamicParameterConstraints, codeDynParamsOverlap, "") // counted only
				continue
			}
			a, ok, gave := sp.minimalWitness(goal, sp.all)
			v.gaveUp = v.gaveUp || gave
			if ok {
				v.at(j, keyDynamicParameterConstraints, codeDynParamsOverlap,
					"parameters %s match both choice %d and choice %d: the first, choice %d, wins, and choice %d is never used for them; TP2 asks variants to be mutually exclusive, so narrow one of them",
					sp.formatParams(a), i, j, i, j)
			}
		}
	}
}

// gap reports a parameter set over the named keys and values that no
// variant serves. A choice without constraints serves every parameter
// set, so there is a gap only when every choice is a variant.
func (v *variantLint) gap() {
	sp := v.sp
	if len(v.variants) == 0 || len(v.variants) != len(v.ch.List) {
		return
	}
	if sp.exhausted() {
		v.gaveUp = true
		return
	}
	goal := func(a assignment) tri {
		r := triTrue
		for k := range sp.choices {
			switch triNot(sp.evalParams(&sp.choices[k], a)) {
			case triFalse:
				return triFalse
			case triUnknown:
				r = triUnknown
			}
		}
		return r
	}
	s := &searcher{sp: sp, goal: goal, dims: sp.params, named: true, maxPresent: -1}
	if a, ok := s.run(); ok {
		v.at(0, "", codeDynParamsGap,
			"no choice matches parameters %s, so a client sending them gets no service config from this record (TP2: have a variant for every value clients send); add the missing variant, or a last choice without dynamicParameterConstraints",
			sp.formatParams(fillNamed(sp, a)))
	}
	v.gaveUp = v.gaveUp || s.gaveUp
}

// reachability reports the choices no client can select, by every
// criterion.
func (v *variantLint) reachability() {
	sp := v.sp
	for j := range sp.choices {
		if v.ch.List[j].Percentage == 0 || isEmptyOr(v.ch.List[j].Constraints) {
			continue // already reported on its own
		}
		if sp.exhausted() {
			v.gaveUp = true
			return
		}
		cj := &sp.choices[j]
		earlier := sp.choices[:j]
		goal := func(a assignment) tri {
			r := sp.eval(cj, a)
			if r == triFalse {
				return triFalse
			}
			for k := range earlier {
				r = triAnd(r, triNot(sp.eval(&earlier[k], a)))
				if r == triFalse {
					return triFalse
				}
			}
			return r
		}
		s := &searcher{sp: sp, goal: goal, dims: sp.all, maxPresent: -1}
		if _, ok := s.run(); ok {
			continue
		}
		if s.gaveUp {
			v.gaveUp = true
			return
		}
		if v.c.full(codeChoiceUnreachable) {
			// Not shown: skip the searches that would explain it.
			v.at(j, "", codeChoiceUnreachable, "") // counted only
			continue
		}
		v.unreachable(j)
	}
}

// unreachable explains why choice j, which no client can select, is so:
// its criteria contradict each other, or an earlier choice covers it, or
// earlier choices do together.
func (v *variantLint) unreachable(j int) {
	sp := v.sp
	cj := &sp.choices[j]
	earlier := sp.choices[:j]
	self := &searcher{sp: sp, goal: func(a assignment) tri { return sp.eval(cj, a) }, dims: sp.all, maxPresent: -1}
	if _, ok := self.run(); !ok && !self.gaveUp {
		v.at(j, "", codeChoiceUnreachable, "choice %d can never be selected: its criteria contradict each other, so no client matches it; fix or remove it", j)
		return
	}
	var by []int
	for i := range earlier {
		ci := &earlier[i]
		cover := &searcher{sp: sp, goal: func(a assignment) tri { return triAnd(sp.eval(cj, a), triNot(sp.eval(ci, a))) }, dims: sp.all, maxPresent: -1}
		if _, ok := cover.run(); !ok && !cover.gaveUp {
			by = []int{i}
			break
		}
		if sp.exhausted() {
			v.gaveUp = true
			break
		}
	}
	if len(by) == 1 {
		v.at(j, "", codeChoiceUnreachable, "choice %d can never be selected: every client it matches is taken first by choice %d%s; remove it, or move it before choice %d", j, by[0], describeCatchAll(&v.ch.List[by[0]]), by[0])
		return
	}
	for i := range earlier {
		ci := &earlier[i]
		both := &searcher{sp: sp, goal: func(a assignment) tri { return triAnd(sp.eval(cj, a), sp.eval(ci, a)) }, dims: sp.all, maxPresent: -1}
		if _, ok := both.run(); ok {
			by = append(by, i)
		}
		if sp.exhausted() {
			v.gaveUp = true
			break
		}
	}
	v.at(j, "", codeChoiceUnreachable, "choice %d can never be selected: every client it matches is taken first by choices %s together; remove it, or move it earlier", j, joinInts(by))
}

func triAnd(a, b tri) tri {
	if a == triFalse || b == triFalse {
		return triFalse
	}
	if a == triTrue && b == triTrue {
		return triTrue
	}
	return triUnknown
}

// fillNamed gives unassigned keys of a gap witness their first named value,
// so the witness names every key, as the question was asked.
func fillNamed(sp *space, a assignment) assignment {
	out := slices.Clone(a)
	for k := range sp.keys {
		if out[paramBase+k] < 0 && len(sp.values[k]) > 0 {
			out[paramBase+k] = 0
		}
	}
	return out
}

func isEmptyOr(e *constraints.Expr) bool {
	return e != nil && e.Op == constraints.Or && len(e.Args) == 0
}

func describeCatchAll(ch *Choice) string {
	if ch.matchesEveryone() {
		return ", which matches every client"
	}
	return ""
}

// maxListed is how many keys or choices a message names; the rest are
// counted, so that a message stays short whatever the record.
const maxListed = 10

func quoteKeys(keys []string) string {
	if len(keys) == 0 {
		return "no key"
	}
	q := make([]string, 0, min(len(keys), maxListed))
	for _, k := range keys[:min(len(keys), maxListed)] {
		q = append(q, quoteExcerpt(k))
	}
	if len(keys) > maxListed {
		return strings.Join(q, ", ") + fmt.Sprintf(" and %d more", len(keys)-maxListed)
	}
	return strings.Join(q, ", ")
}

func joinInts(xs []int) string {
	s := make([]string, 0, min(len(xs), maxListed))
	for _, x := range xs[:min(len(xs), maxListed)] {
		s = append(s, fmt.Sprint(x))
	}
	if len(xs) > maxListed {
		return strings.Join(s, ", ") + fmt.Sprintf(" and %d more", len(xs)-maxListed)
	}
	if len(s) <= 1 {
		return strings.Join(s, "")
	}
	return strings.Join(s[:len(s)-1], ", ") + " and " + s[len(s)-1]
}
