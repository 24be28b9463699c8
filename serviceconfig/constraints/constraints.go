// Package constraints implements the dynamic parameter constraints of xDS
// TP2 ("Dynamically Generated Cacheable xDS Resources"): a boolean
// expression over a client's dynamic parameters (a string map) built from
// exact-value and exists tests combined with AND, OR and NOT.
//
// A choice of a grpc_config record may carry such an expression in its
// dynamicParameterConstraints field (our extension, README "Dynamic parameters"): the
// whole list of variants is one cacheable DNS answer, and each client picks
// the one its parameters match. Keys an expression does not mention never
// prevent a match.
package constraints

import (
	"slices"
	"strings"

	"github.com/grpc-config-dns/grpc-config-dns/internal/asciijson"
)

// Op is the kind of an expression node.
type Op uint8

// The expression kinds of the DynamicParameterConstraints message.
const (
	// Value matches when the parameter Key is present with exactly Value.
	Value Op = iota + 1
	// Exists matches when the parameter Key is present, with any value.
	Exists
	// And matches when every argument matches; with no arguments it matches
	// every client (the empty conjunction is true).
	And
	// Or matches when some argument matches; with no arguments it matches no
	// client (the empty disjunction is false).
	Or
	// Not matches when its one argument does not.
	Not
)

// MaxDepth bounds the nesting of expressions.
const MaxDepth = 32

// Expr is one DynamicParameterConstraints message.
type Expr struct {
	Op    Op
	Key   string  // Value and Exists
	Value string  // Value
	Args  []*Expr // And and Or: the list; Not: exactly one
}

// Match reports whether params satisfy the expression. It does not
// allocate. Leaves are tested in their parent's loop rather than by a call,
// which halves the cost of the common AND of exact values.
func (e *Expr) Match(params map[string]string) bool {
	switch e.Op {
	case Value, Exists:
		return e.leaf(params)
	case And:
		// The common case, tested in place: an Or costs a call more.
		for _, a := range e.Args {
			switch a.Op {
			case Value:
				if v, ok := params[a.Key]; !ok || v != a.Value {
					return false
				}
			case Exists:
				if _, ok := params[a.Key]; !ok {
					return false
				}
			default:
				if !a.Match(params) {
					return false
				}
			}
		}
		return true
	case Or:
		return anyMatches(e.Args, params)
	case Not:
		return !e.Args[0].Match(params)
	}
	return false
}

// anyMatches reports whether params satisfy some expression of args, the
// arguments of an Or.
func anyMatches(args []*Expr, params map[string]string) bool {
	for _, a := range args {
		switch a.Op {
		case Value:
			if v, ok := params[a.Key]; ok && v == a.Value {
				return true
			}
		case Exists:
			if _, ok := params[a.Key]; ok {
				return true
			}
		default:
			if a.Match(params) {
				return true
			}
		}
	}
	return false
}

func (e *Expr) leaf(params map[string]string) bool {
	v, ok := params[e.Key]
	if e.Op == Exists {
		return ok
	}
	return ok && v == e.Value
}

// Keys returns the parameter keys the expression mentions, sorted.
func (e *Expr) Keys() []string {
	var keys []string
	e.walk(func(x *Expr) {
		if x.Op == Value || x.Op == Exists {
			keys = append(keys, x.Key)
		}
	})
	slices.Sort(keys)
	return slices.Compact(keys)
}

// Values returns, for each key, the values the expression compares it with.
// Each value is listed once, in the order the expression first names it.
func (e *Expr) Values() map[string][]string {
	out := map[string][]string{}
	// A set, so that an OR of thousands of values of one key stays linear.
	seen := map[[2]string]bool{}
	e.walk(func(x *Expr) {
		if x.Op == Value && !seen[[2]string{x.Key, x.Value}] {
			seen[[2]string{x.Key, x.Value}] = true
			out[x.Key] = append(out[x.Key], x.Value)
		}
	})
	return out
}

func (e *Expr) walk(f func(*Expr)) {
	f(e)
	for _, a := range e.Args {
		a.walk(f)
	}
}

// AppendJSON appends the expression in its canonical protobuf JSON form,
// with camelCase field names. The output is ASCII (gRFC A2 records are):
// keys and values outside printable ASCII are written as \u escapes.
func (e *Expr) AppendJSON(dst []byte) []byte {
	switch e.Op {
	case Value:
		dst = append(dst, `{"constraint":{"key":`...)
		dst = asciijson.AppendString(dst, e.Key)
		dst = append(dst, `,"value":`...)
		dst = asciijson.AppendString(dst, e.Value)
		return append(dst, "}}"...)
	case Exists:
		dst = append(dst, `{"constraint":{"key":`...)
		dst = asciijson.AppendString(dst, e.Key)
		return append(dst, `,"exists":{}}}`...)
	case And, Or:
		name := "andConstraints"
		if e.Op == Or {
			name = "orConstraints"
		}
		dst = append(dst, `{"`+name+`":{"constraints":[`...)
		for i, a := range e.Args {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = a.AppendJSON(dst)
		}
		return append(dst, "]}}"...)
	case Not:
		dst = append(dst, `{"notConstraints":`...)
		dst = e.Args[0].AppendJSON(dst)
		return append(dst, '}')
	}
	return dst
}

// String writes the expression for people: env=prod AND NOT version exists.
func (e *Expr) String() string {
	var b strings.Builder
	e.format(&b, false)
	return b.String()
}

func (e *Expr) format(b *strings.Builder, nested bool) {
	switch e.Op {
	case Value:
		b.WriteString(e.Key + "=" + e.Value)
	case Exists:
		b.WriteString(e.Key + " exists")
	case Not:
		b.WriteString("NOT ")
		e.Args[0].format(b, true)
	case And, Or:
		if len(e.Args) == 0 {
			if e.Op == And {
				b.WriteString("TRUE")
			} else {
				b.WriteString("FALSE")
			}
			return
		}
		if nested && len(e.Args) > 1 {
			b.WriteByte('(')
		}
		sep := " AND "
		if e.Op == Or {
			sep = " OR "
		}
		for i, a := range e.Args {
			if i > 0 {
				b.WriteString(sep)
			}
			a.format(b, true)
		}
		if nested && len(e.Args) > 1 {
			b.WriteByte(')')
		}
	}
}
