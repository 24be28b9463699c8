package serviceconfig

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/grpc-config-dns/grpc-config-dns/serviceconfig/internal/jtree"
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
	// GrpcGoConfig and GrpcGoFailure rewrite them to see what grpc-go sees.
	caseCodes  []rewrite
	caseFields []rewrite
	// goText holds values grpc-go refuses or misreads in a form the spec
	// gives the same meaning (a number written as a string, a policy name
	// in capitals), with the JSON text grpc-go reads as the spec does; goDrop
	// the member keys to leave out for it (an empty loadBalancingConfig,
	// which is unset). GrpcGoConfig applies both.
	goText []rewrite
	goDrop []int32
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
	return &checker{t: t, path: make([]seg, 0, 16)}
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
func (c *checker) report(n int32, code, format string, args ...any) {
	c.refuse(n, code, 0, format, args...)
}

// refuse records a warning about something the spec allows but the clients
// in who reject (the compat gate and GrpcGoFailure ask whether grpc-go is
// among them).
func (c *checker) refuse(n int32, code string, who client, format string, args ...any) {
	sev := severityOf(code)
	if sev == Warning && c.errorsOnly {
		return
	}
	off := -1
	if n >= 0 {
		off = int(c.t.Nodes[n].Start)
	}
	c.diags = append(c.diags, Diagnostic{
		Severity:  sev,
		Code:      code,
		Message:   fmt.Sprintf(format, args...),
		Path:      c.pointer(),
		Offset:    off,
		refusedBy: who,
	})
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
func (c *checker) unknownField(k int32, code, where string, known []string) {
	name := c.t.Str(k)
	for _, f := range known {
		if strings.EqualFold(f, name) && severityOf(code) == Warning {
			c.caseFields = append(c.caseFields, rewrite{k, f})
			c.report(k, "field-case", "field %q in %s is spelled with different case: grpc-go reads it as %q (its JSON field names are case-insensitive), while C-core, grpc-java and grpc-js ignore it; write %q", name, where, f, f)
			return
		}
	}
	msg := fmt.Sprintf("unknown field %q in %s", name, where)
	if s := Suggest(name, known); s != "" {
		msg += fmt.Sprintf(": did you mean %q?", s)
	} else {
		msg += fmt.Sprintf(" (known fields: %s)", strings.Join(known, ", "))
	}
	if severityOf(code) == Warning {
		msg += "; gRPC clients ignore it"
	} else {
		msg += "; remove it"
	}
	c.report(k, code, "%s", msg)
}

// want reports a type mismatch and returns false when node v is not of
// kind k.
func (c *checker) want(v int32, k jtree.Kind, code, what string) bool {
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
		return fmt.Sprintf("%s %s", n.Kind, t.Raw(v))
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
