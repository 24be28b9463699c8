package serviceconfig

import (
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/grpc-config-dns/grpc-config-dns/internal/jtree"
)

// checker walks a parsed tree, keeping the JSON pointer of the current value
// so that diagnostics can say where they are. Pointer text is only rendered
// when something is reported, so a clean walk allocates nothing for it.
type checker struct {
	t     *jtree.Tree
	diags Diagnostics
	path  []seg
	// errorsOnly skips warnings: the resolver only needs to know whether a
	// record is usable.
	errorsOnly bool
	// shortFractions collects the duration strings with 1 to 8 fraction
	// digits, which grpc-js misreads, for NineDigitDurations.
	shortFractions []int32
	// nullMembers collects the key nodes of the members whose value is
	// null where proto3 JSON reads null as absent, which grpc-java and
	// grpc-js reject, for OmitNulls.
	nullMembers []int32
	// caseCodes collects the status code names that are not upper-case,
	// which grpc-go rejects, and caseFields the member names that differ
	// from a known field only in case, which grpc-go reads as that field:
	// GrpcGoConfig rewrites them to give grpc-go what the spec reads.
	caseCodes  []rewrite
	caseFields []rewrite
	// shown counts the errors and warnings in diags; past MaxDiagnostics
	// of a severity, report only counts them on the diagnostic at index
	// omitted (-1 until there is one), so that an input with thousands of
	// mistakes costs no more messages than one with a hundred.
	shown   [2]int
	omitted int
	// refusers are the clients named as refusing the config by the
	// diagnostics listed.
	refusers client
	// goText holds values grpc-go refuses or misreads in a form the spec
	// gives the same meaning (a number written as a string, a policy name
	// in capitals), with the JSON text grpc-go reads as the spec does; goDrop
	// the member keys to leave out for it (an empty loadBalancingConfig,
	// which is unset). GrpcGoConfig applies both.
	goText []rewrite
	goDrop []int32
	// quiet are codes whose diagnostics the caller drops
	// (LintOptions.quiet).
	quiet codeSet
	// inList is set while checking a choice list, whose pointers start
	// with the choice's index.
	inList bool
	// misreads, when misreadsSet, are the clients the next refuse names as
	// misreading (misread).
	misreads    client
	misreadsSet bool
}

// rewrite is a node and the canonical text grpc-go takes it for.
type rewrite struct {
	node  int32
	canon string
}

// seg is one step of a JSON pointer: an object member (key is the key
// node) or an array element (key < 0, idx is the index).
type seg struct {
	key int32
	idx int32
}

func newChecker(t *jtree.Tree) *checker {
	return &checker{t: t, path: make([]seg, 0, 16), omitted: -1}
}

// checkers are lent to the two walks Publish makes of every record: their
// structs and paths were a tenth of what a first start of 100 000
// services allocates.
var checkers = sync.Pool{New: func() any { return &checker{path: make([]seg, 0, 16)} }}

// borrowChecker is newChecker, from checkers: give it back with giveBack.
// Only its path (which never leaves it) is reused, so the slices it hands
// out (diags, shortFractions, …) stay the caller's.
func borrowChecker(t *jtree.Tree) *checker {
	c := checkers.Get().(*checker)
	*c = checker{t: t, path: c.path[:0], omitted: -1}
	return c
}

// giveBack returns a borrowed checker: it must not be used afterwards.
func (c *checker) giveBack() {
	if cap(c.path) <= 64 { // not one a deep record grew
		*c = checker{path: c.path[:0]}
		checkers.Put(c)
	}
}

func (c *checker) pushKey(k int32) { c.path = append(c.path, seg{key: k}) }
func (c *checker) pushIdx(i int)   { c.path = append(c.path, seg{key: -1, idx: int32(i)}) }
func (c *checker) pop()            { c.path = c.path[:len(c.path)-1] }

func (c *checker) pointer() string {
	var b strings.Builder
	for _, s := range c.path {
		b.WriteByte('/')
		if s.key < 0 {
			b.WriteString(strconv.Itoa(int(s.idx)))
			continue
		}
		k := c.t.Str(s.key)
		k = strings.ReplaceAll(k, "~", "~0")
		b.WriteString(strings.ReplaceAll(k, "/", "~1"))
	}
	return b.String()
}

// report records a diagnostic about node n (a value or a key node) at the
// current path.
func (c *checker) report(n int32, code diagCode, format string, args ...any) {
	c.refuse(n, code, 0, format, args...)
}

// refuse records a warning about something the spec allows but the clients
// in who reject (the verdict asks whether a declared client is among them,
// judge).
//
// The clients that misread the value are clientEffects', unless misread
// called it. (A parameter for them, passed at the hundred call sites that
// report and refuse are inlined at, cost a gRPC client of the resolver
// kilobytes: TestClientSize.)
func (c *checker) refuse(n int32, code diagCode, who client, format string, args ...any) {
	misreads := codeMisreads[code]
	if c.misreadsSet {
		misreads, c.misreadsSet = c.misreads, false
	}
	sev := code.severity()
	if sev == Warning && c.errorsOnly {
		return
	}
	// Past the cap, a warning that names a client refusing the config is
	// still listed when no listed one names it, so that the message says
	// which; and the clients of every one left out are kept on the count
	// (refusedBy of diagnostics-omitted), which the verdict takes as a
	// refusal by them: a refusal is never lost to the cap, though one left
	// out may be of a choice the client never picks, or a rewritten value
	// (the verdict errs on the side of refusing a record of a hundred
	// problems).
	if c.full(code) && (who|misreads == 0 || (who|misreads)&^c.refusers == 0) {
		if c.omitted < 0 {
			c.omitted = len(c.diags)
			c.diags = append(c.diags, Omitted(0, 0))
		}
		c.diags[c.omitted].omitted[sev-Error]++
		c.diags[c.omitted].refusedBy |= who | misreads
		return
	}
	c.shown[sev-Error]++
	c.refusers |= who | misreads
	off := -1
	if n >= 0 {
		off = int(c.t.Nodes[n].Start)
	}
	var choice int32
	if c.inList && len(c.path) > 0 && c.path[0].key < 0 {
		choice = c.path[0].idx + 1
	}
	if c.quiet.has(code) {
		c.diags = append(c.diags, Diagnostic{Severity: sev, Code: code.String(), Offset: off, refusedBy: who, misreadBy: misreads, choice: choice})
		return
	}
	for i, a := range args {
		// Raw JSON goes into messages as written: a hostile number or
		// string must not make every message as long as the record.
		if b, ok := a.([]byte); ok {
			args[i] = excerpt(b)
		}
	}
	c.diags = append(c.diags, Diagnostic{
		Severity:  sev,
		Code:      code.String(),
		Message:   fmt.Sprintf(format, args...),
		Path:      c.pointer(),
		Offset:    off,
		refusedBy: who,
		misreadBy: misreads,
		choice:    choice,
	})
}

// misread is refuse, with the clients that misread the value told by the
// rule rather than by the code (clientEffects).
func (c *checker) misread(n int32, code diagCode, who, misreads client, format string, args ...any) {
	c.misreads, c.misreadsSet = misreads, true
	c.refuse(n, code, who, format, args...)
}

// full reports whether diagnostics of code's severity are no longer
// listed, only counted: callers skip the work of building a message (a
// "did you mean") that would not be shown.
func (c *checker) full(code diagCode) bool {
	sev := code.severity()
	return c.shown[sev-Error] >= MaxDiagnostics
}

// quoteExcerpt is %q of s, shortened like excerpt when s is long.
func quoteExcerpt(s string) string {
	if len(s) <= maxExcerpt {
		return strconv.Quote(s)
	}
	return fmt.Sprintf("%s… (%d bytes)", strconv.Quote(s[:maxExcerpt-16]), len(s))
}

// excerptString is excerpt of a string.
func excerptString(s string) string {
	if len(s) <= maxExcerpt {
		return s
	}
	return fmt.Sprintf("%s… (%d bytes)", s[:maxExcerpt-16], len(s))
}

// maxExcerpt is the longest piece of the input quoted in a message.
const maxExcerpt = 64

// excerpt returns raw text for a message, shortened when long: what a
// reader needs to recognise the value, and how long it is.
func excerpt(b []byte) string {
	if len(b) <= maxExcerpt {
		return string(b)
	}
	return fmt.Sprintf("%s… (%d bytes)", b[:maxExcerpt-16], len(b))
}

func (c *checker) kind(n int32) jtree.Kind { return c.t.Nodes[n].Kind }

// members calls f for each member of object obj with the member's path
// pushed.
func (c *checker) members(obj int32, f func(k, v int32)) {
	t := c.t
	for k := t.Nodes[obj].First; k >= 0; {
		v := t.Nodes[k].Next
		c.pushKey(k)
		f(k, v)
		c.pop()
		k = t.Nodes[v].Next
	}
}

// elements calls f for each element of array arr with its index pushed.
func (c *checker) elements(arr int32, f func(i int, e int32)) {
	i := 0
	for e := c.t.Nodes[arr].First; e >= 0; e = c.t.Nodes[e].Next {
		c.pushIdx(i)
		f(i, e)
		c.pop()
		i++
	}
}

// unknownField reports a member name that the schema at hand does not
// define, suggesting the closest known one.
func (c *checker) unknownField(k int32, code diagCode, where string, known []string) {
	name := c.t.Str(k)
	for _, f := range known {
		if strings.EqualFold(f, name) && code.severity() == Warning {
			c.caseFields = append(c.caseFields, rewrite{k, f})
			// One diagnostic: to the spec the name is unknown (so the JSON
			// Schema's unknown-field there is this one, mergeSchema), and
			// what each client does is the problem. No suggestion: the
			// publisher's misspelled-field gate is for names no client
			// reads.
			c.report(k, codeFieldCase, "field %q in %s is unknown to the spec, which names it %q: grpc-go reads it as that field (its JSON field names are case-insensitive), while C-core, grpc-java and grpc-js ignore it; write %q", name, where, f, f)
			return
		}
	}
	if c.full(code) || c.errorsOnly && code.severity() == Warning {
		c.report(k, code, "") // not shown: skip the suggestion
		return
	}
	msg := fmt.Sprintf("unknown field %s in %s", quoteExcerpt(name), where)
	s := Suggest(name, known)
	if s != "" {
		msg += fmt.Sprintf(": did you mean %q?", s)
	} else {
		msg += fmt.Sprintf(" (known fields: %s)", strings.Join(known, ", "))
	}
	if code.severity() == Warning {
		msg += "; gRPC clients ignore it"
	} else {
		msg += "; remove it"
	}
	before := len(c.diags)
	c.report(k, code, "%s", msg)
	if s != "" && code == codeUnknownField && len(c.diags) == before+1 {
		// For the publisher's gate (misspelled-field).
		c.diags[before].suggestion = s
	}
}

// want reports a type mismatch and returns false when node v is not of
// kind k.
func (c *checker) want(v int32, k jtree.Kind, code diagCode, what string) bool {
	if c.kind(v) == k {
		return true
	}
	c.report(v, code, "%s must be %s, not %s", what, article(k), describeKind(c.t, v))
	return false
}

func article(k jtree.Kind) string {
	switch k {
	case jtree.Array:
		return "a list"
	case jtree.Object:
		return "an object"
	case jtree.Bool:
		return "true or false"
	case jtree.Number:
		return "a number"
	case jtree.String:
		return "a string"
	}
	return k.String()
}

// describeKind names the JSON type of v, with a short excerpt so that the
// author recognises it.
func describeKind(t *jtree.Tree, v int32) string {
	n := t.Nodes[v]
	switch n.Kind {
	case jtree.Null:
		return "null"
	case jtree.Bool, jtree.Number:
		return fmt.Sprintf("%s %s", n.Kind, excerpt(t.Raw(v)))
	case jtree.String:
		raw := t.Raw(v)
		if len(raw) > 40 {
			return "a string"
		}
		return "the string " + string(raw)
	case jtree.Array:
		return "a list"
	case jtree.Object:
		return "an object"
	}
	return "invalid"
}
