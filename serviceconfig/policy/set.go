package policy

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/grpc-config-dns/grpc-config-dns/internal/jtree"
)

// Set is the policies of one zone, indexed for selection. It is safe for
// concurrent use.
type Set struct {
	zone   []*Policy // KindZone, by name
	labels []*Policy // KindLabels, by name
	byName map[string][]*Policy

	mu     sync.Mutex
	stacks map[string]*Stack // by the names of the policies selected
}

// Less orders policies for merging: by the specificity of their
// TargetRef's kind, then by name.
func Less(a, b *Policy) int {
	return cmp.Or(cmp.Compare(a.TargetRef.Kind, b.TargetRef.Kind), strings.Compare(a.Name, b.Name))
}

// NewSet indexes ps, which Parse made (or which carry a Default that
// parses as a JSON object). Two policies of one name are an error: their
// order would depend on how they were listed.
func NewSet(ps []*Policy) (*Set, error) {
	s := &Set{byName: map[string][]*Policy{}, stacks: map[string]*Stack{}}
	seen := map[string]bool{}
	for _, p := range ps {
		if seen[p.Name] {
			return nil, fmt.Errorf("policy %q is defined twice: policy names are unique in a zone", p.Name)
		}
		seen[p.Name] = true
		if p.def == nil {
			t, err := jtree.Parse(p.Default)
			if err != nil || t.Nodes[0].Kind != jtree.Object {
				return nil, fmt.Errorf("policy %q: default is not a JSON object", p.Name)
			}
			p.def = fromTree(t, 0)
		}
		switch p.TargetRef.Kind {
		case KindZone:
			s.zone = append(s.zone, p)
		case KindLabels:
			s.labels = append(s.labels, p)
		case KindName:
			s.byName[p.TargetRef.Name] = append(s.byName[p.TargetRef.Name], p)
		default:
			return nil, fmt.Errorf("policy %q has no valid targetRef", p.Name)
		}
	}
	slices.SortFunc(s.zone, Less)
	slices.SortFunc(s.labels, Less)
	for _, l := range s.byName {
		slices.SortFunc(l, Less)
	}
	return s, nil
}

// Len is the number of policies in s.
func (s *Set) Len() int {
	n := len(s.zone) + len(s.labels)
	for _, l := range s.byName {
		n += len(l)
	}
	return n
}

// Select returns the policies that apply to t, in merge order. It costs
// the number of label policies, not of all policies.
func (s *Set) Select(t Target) []*Policy {
	out := slices.Clip(s.zone)
	for _, p := range s.labels {
		if p.Selects(t) {
			out = append(out, p)
		}
	}
	return append(out, s.byName[t.Name]...)
}

// StackFor returns the merged policies that apply to t. Services selected
// by the same policies share one Stack, computed once.
func (s *Set) StackFor(t Target) *Stack {
	sel := s.Select(t)
	key := stackKey(sel)
	s.mu.Lock()
	defer s.mu.Unlock()
	if st, ok := s.stacks[key]; ok {
		return st
	}
	st := newStack(sel)
	s.stacks[key] = st
	return st
}

func stackKey(sel []*Policy) string {
	var b strings.Builder
	for _, p := range sel {
		b.WriteString(p.Name)
		b.WriteByte(0)
	}
	return b.String()
}

// Unused returns the policies that select none of targets, by name. A
// reload of 100 000 services asks it: each label policy looks at the
// targets until one is selected, and a name policy at a set of names.
func (s *Set) Unused(targets []Target) []*Policy {
	var out []*Policy
	if len(targets) == 0 {
		out = append(out, s.zone...)
	}
	for _, p := range s.labels {
		if !slices.ContainsFunc(targets, p.Selects) {
			out = append(out, p)
		}
	}
	named := func(name string) bool {
		return slices.ContainsFunc(targets, func(t Target) bool { return t.Name == name })
	}
	if len(s.byName) > 8 { // more names than are worth a scan each
		names := make(map[string]bool, len(targets))
		for _, t := range targets {
			names[t.Name] = true
		}
		named = func(name string) bool { return names[name] }
	}
	for name, l := range s.byName {
		if !named(name) {
			out = append(out, l...)
		}
	}
	slices.SortFunc(out, Less)
	return out
}

// Stack is the policies that apply to some services, merged in order.
type Stack struct {
	Policies []*Policy
	merged   *value
}

func newStack(sel []*Policy) *Stack {
	st := &Stack{Policies: sel, merged: &value{kind: jtree.Object}}
	for _, p := range sel {
		st.merged = merged(st.merged, p.def, Origin{Policy: p.Name, Kind: p.TargetRef.Kind}, true, true)
	}
	st.merged.from = nil // the root is every layer's; say so only for fields
	return st
}

// Empty reports whether no policy applies.
func (st *Stack) Empty() bool { return st == nil || len(st.Policies) == 0 }

// Defaults is the merged defaults of the stack's policies, as compact JSON.
func (st *Stack) Defaults() []byte { return st.merged.appendJSON(nil) }

// Result is a service's final config and where each value came from.
type Result struct {
	// JSON is the final config: a choice list when the service's own
	// config was one, else a service config object. Compact.
	JSON []byte

	// Who set each value is found again on demand (tracked): a publisher
	// applies a stack to every service and asks it only of a config it
	// refuses, and keeping it made Apply twice as costly.
	st      *Stack
	own     []byte
	choices bool
	root    *value
}

// tracked is the final config with the layers that set each value.
func (r *Result) tracked() *value {
	if r.root == nil {
		r.root, _ = r.st.apply(new(builder), r.own, r.choices, true)
	}
	return r.root
}

// Fields lists every leaf of the final config (scalars, empty objects
// and lists) with the layers that set it, in merge order.
func (r *Result) Fields() []Field { return r.tracked().fields("", nil) }

// Origins returns the layers that set the value at JSON pointer path of
// the final config, or of the nearest value above it that exists.
func (r *Result) Origins(path string) []Origin { return r.tracked().at(path).from }

// Apply merges the stack under own, the service's own config: a service
// config object, or (choices) a list of choices, into each of whose
// serviceConfig the stack merges. own must be JSON; values of other
// types are left for validation to report. Fields and Origins read own
// again: it must not change while r is in use. A Result is not safe for
// concurrent use.
func (st *Stack) Apply(own []byte, choices bool) (*Result, error) {
	b := builders.Get().(*builder)
	defer builders.Put(b)
	root, err := st.apply(b, own, choices, false)
	if err != nil {
		return nil, err
	}
	// root is b's, and b the next Apply's: only its JSON is kept.
	return &Result{JSON: root.appendJSON(nil), st: st, own: own, choices: choices}, nil
}

// apply is Apply's merge, recording who set each value when track is set.
// Without it, own's values are taken into the result as they are: own is
// the last layer, so nothing merges into them after. own's values are
// b's.
func (st *Stack) apply(b *builder, own []byte, choices, track bool) (*value, error) {
	if err := b.tree.Reset(own); err != nil {
		return nil, fmt.Errorf("the service's own config is not JSON: %w", err)
	}
	b.reset(&b.tree)
	src := b.value(0)
	self := Origin{Kind: Own}
	switch {
	case !choices && src.kind == jtree.Object:
		return st.withOwn(src, self, track), nil
	case choices && src.kind == jtree.Array:
		root := src.take(self, nil, track)
		for i, c := range src.elems {
			j := c.member("serviceConfig")
			if c.kind != jtree.Object || j < 0 || c.elems[j].kind != jtree.Object {
				continue
			}
			o := self
			if track {
				o.Path = fmt.Sprintf("/%d/serviceConfig", i)
			}
			root.elems[i].elems[j] = st.withOwn(c.elems[j], o, track)
		}
		return root, nil
	}
	return src.take(self, nil, track), nil
}

func (st *Stack) withOwn(own *value, o Origin, track bool) *value {
	below := &value{kind: jtree.Object}
	if st != nil {
		below = st.merged
	}
	v := merged(below, own, o, true, track)
	if track {
		v.from = []Origin{o}
	}
	return v
}
