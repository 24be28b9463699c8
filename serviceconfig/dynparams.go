package serviceconfig

import (
	"fmt"
	"slices"
	"strings"

	"github.com/grpc-config-dns/grpc-config-dns/internal/jtree"
	"github.com/grpc-config-dns/grpc-config-dns/serviceconfig/constraints"
)

// keyDynamicParameterConstraints is our extension of the A2 choice: the
// TP2 DynamicParameterConstraints message in protobuf JSON form.
const keyDynamicParameterConstraints = "dynamicParameterConstraints"

// Field names of DynamicParameterConstraints, camelCase first; protobuf
// JSON parsers accept the original proto names too.
var constraintFields = []string{"constraint", "andConstraints", "orConstraints", "notConstraints"}

var protoNames = map[string]string{
	"and_constraints": "andConstraints",
	"or_constraints":  "orConstraints",
	"not_constraints": "notConstraints",
}

// parseConstraints reads the message at node v (nesting level depth).
// It returns nil when the message is malformed; problems go to c.
func parseConstraints(c *checker, v int32, depth int) *constraints.Expr {
	t := c.t
	const code = codeDynParamsConstraint
	if !c.want(v, jtree.Object, code, "a dynamic parameter constraint") {
		return nil
	}
	if depth > constraints.MaxDepth {
		c.report(v, codeDynParamsTooDeep, "dynamic parameter constraints nest more than %d levels deep; flatten them (AND and OR take lists)", constraints.MaxDepth)
		return nil
	}
	if t.Nodes[v].Len != 1 {
		if t.Nodes[v].Len == 0 {
			c.report(v, code, "an empty constraint matches nothing definite: set exactly one of constraint, andConstraints, orConstraints or notConstraints")
		} else {
			c.report(v, code, "a constraint must set exactly one of constraint, andConstraints, orConstraints or notConstraints, not %d; combine them with andConstraints", t.Nodes[v].Len)
		}
		// Still look inside, to report problems there too.
	}
	var out *constraints.Expr
	c.members(v, func(k, val int32) {
		name := t.Str(k)
		if canon, ok := protoNames[name]; ok {
			name = canon
		}
		var e *constraints.Expr
		switch name {
		case "constraint":
			e = parseSingleConstraint(c, val)
		case "andConstraints", "orConstraints":
			e = parseConstraintList(c, val, name, depth)
		case "notConstraints":
			if arg := parseConstraints(c, val, depth+1); arg != nil {
				e = &constraints.Expr{Op: constraints.Not, Args: []*constraints.Expr{arg}}
			}
		default:
			if c.full(code) {
				c.report(k, code, "") // counted only
				return
			}
			msg := fmt.Sprintf("unknown field %s in a dynamic parameter constraint", quoteExcerpt(name))
			if s := Suggest(normalizeName(name), lowerAll(constraintFields)); s != "" {
				s = constraintFields[slices.Index(lowerAll(constraintFields), s)]
				msg += fmt.Sprintf(": did you mean %q?", s)
			} else {
				msg += ": use constraint, andConstraints, orConstraints or notConstraints"
			}
			c.report(k, code, "%s", msg)
			return
		}
		if t.Nodes[v].Len == 1 {
			out = e
		}
	})
	return out
}

// parseSingleConstraint reads {"key":K,"value":V} or {"key":K,"exists":{}}.
func parseSingleConstraint(c *checker, v int32) *constraints.Expr {
	t := c.t
	const code = codeDynParamsConstraint
	if !c.want(v, jtree.Object, code, "constraint") {
		return nil
	}
	e := &constraints.Expr{}
	ok := true
	hasKey := false
	c.members(v, func(k, val int32) {
		fieldOK := false
		switch {
		case t.Is(k, "key"):
			hasKey = true
			fieldOK = constraintKey(c, e, val)
		case t.Is(k, "value"):
			fieldOK = constraintValue(c, e, k, val)
		case t.Is(k, "exists"):
			fieldOK = constraintExists(c, e, k, val)
		default:
			unknownConstraintField(c, k)
		}
		ok = ok && fieldOK
	})
	if !hasKey {
		c.report(v, code, "the constraint has no key: write {\"key\":\"env\",\"value\":\"prod\"} or {\"key\":\"env\",\"exists\":{}}")
		ok = false
	}
	if e.Op == 0 && hasKey {
		c.report(v, code, "the constraint on %q says neither value nor exists: add \"value\":\"…\" or \"exists\":{}", e.Key)
		ok = false
	}
	if !ok {
		return nil
	}
	return e
}

// constraintKey reads constraint.key, val, into e, and reports false when
// it reported a problem.
func constraintKey(c *checker, e *constraints.Expr, val int32) bool {
	const code = codeDynParamsConstraint
	if !c.want(val, jtree.String, code, "constraint.key") {
		return false
	}
	if e.Key = c.t.Str(val); e.Key == "" {
		c.report(val, code, "constraint.key must not be empty: name a dynamic parameter, like \"env\"")
		return false
	}
	return true
}

// constraintValue reads constraint.value, member k with value val, into
// e, and reports false when it reported a problem.
func constraintValue(c *checker, e *constraints.Expr, k, val int32) bool {
	const code = codeDynParamsConstraint
	if !constraintOp(c, e, k, constraints.Value) {
		return false
	}
	if !c.want(val, jtree.String, code, "constraint.value") {
		return false
	}
	if e.Value = c.t.Str(val); e.Value == "" {
		c.report(val, code, "constraint.value must not be empty; to match a key sent with any value, use \"exists\":{}")
		return false
	}
	return true
}

// constraintExists reads constraint.exists, member k with value val, into
// e, and reports false when it reported a problem.
func constraintExists(c *checker, e *constraints.Expr, k, val int32) bool {
	const code = codeDynParamsConstraint
	if !constraintOp(c, e, k, constraints.Exists) {
		return false
	}
	if !c.want(val, jtree.Object, code, "constraint.exists") {
		return false
	}
	if c.t.Nodes[val].Len != 0 {
		c.report(val, code, "constraint.exists takes no fields: write \"exists\":{}")
		return false
	}
	return true
}

// constraintOp sets the test of e, which member k (value or exists) names,
// and reports false when the other one set it already.
func constraintOp(c *checker, e *constraints.Expr, k int32, op constraints.Op) bool {
	if e.Op != 0 {
		c.report(k, codeDynParamsConstraint, "a constraint sets either value or exists, not both")
		return false
	}
	e.Op = op
	return true
}

// unknownConstraintField reports member k of a constraint, which is none
// of its fields, suggesting the closest.
func unknownConstraintField(c *checker, k int32) {
	const code = codeDynParamsConstraint
	if c.full(code) {
		c.report(k, code, "") // counted only
		return
	}
	name := c.t.Str(k)
	msg := fmt.Sprintf("unknown field %s in a constraint", quoteExcerpt(name))
	if s := Suggest(name, []string{"key", "value", "exists"}); s != "" {
		msg += fmt.Sprintf(": did you mean %q?", s)
	} else {
		msg += ": a constraint holds key and either value or exists"
	}
	c.report(k, code, "%s", msg)
}

// parseConstraintList reads {"constraints":[…]}, the ConstraintList message.
func parseConstraintList(c *checker, v int32, name string, depth int) *constraints.Expr {
	t := c.t
	const code = codeDynParamsConstraint
	op := constraints.And
	if name == "orConstraints" {
		op = constraints.Or
	}
	if t.Nodes[v].Kind == jtree.Array {
		c.report(v, code, "%s is a ConstraintList message: write {\"constraints\":[…]} around the list", name)
		return nil
	}
	if !c.want(v, jtree.Object, code, name) {
		return nil
	}
	e := &constraints.Expr{Op: op, Args: []*constraints.Expr{}}
	ok := true
	var list int32 = -1
	c.members(v, func(k, val int32) {
		if !t.Is(k, "constraints") {
			c.report(k, code, "unknown field %q in %s: it holds only \"constraints\", a list", t.Str(k), name)
			ok = false
			return
		}
		list = val
		if !c.want(val, jtree.Array, code, name+".constraints") {
			ok = false
			return
		}
		c.elements(val, func(_ int, el int32) {
			a := parseConstraints(c, el, depth+1)
			if a == nil {
				ok = false
				return
			}
			e.Args = append(e.Args, a)
		})
	})
	if ok && len(e.Args) == 0 {
		n := list
		if n < 0 {
			n = v
		}
		if op == constraints.And {
			c.report(n, codeDynParamsEmptyAnd, "an empty andConstraints is true: it matches every client; say so by leaving dynamicParameterConstraints out, or list the constraints")
		} else {
			c.report(n, codeDynParamsEmptyOr, "an empty orConstraints is false: it matches no client, so this choice is never selected; list the alternatives")
		}
	}
	if !ok {
		return nil
	}
	return e
}

func lowerAll(xs []string) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = strings.ToLower(x)
	}
	return out
}
