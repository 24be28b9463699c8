package policy

import (
	"fmt"
	"slices"
	"strings"

	"github.com/grpc-config-dns/grpc-config-dns/internal/jtree"
)

// Kind is what a TargetRef selects by. Kinds are ordered by specificity:
// a more specific kind merges later and wins.
type Kind uint8

// The kinds of TargetRef, least specific first, and Own: the service's
// own config, the most specific layer, in Origins.
const (
	KindZone Kind = iota + 1
	KindLabels
	KindName
	Own
)

func (k Kind) String() string {
	switch k {
	case KindZone:
		return "Zone"
	case KindLabels:
		return "Service by labels"
	case KindName:
		return "Service by name"
	case Own:
		return "the service's own config"
	}
	return "invalid"
}

// MarshalText writes a kind as a stable id for tools: Zone,
// ServiceByLabels, ServiceByName or Own.
func (k Kind) MarshalText() ([]byte, error) {
	switch k {
	case KindZone:
		return []byte("Zone"), nil
	case KindLabels:
		return []byte("ServiceByLabels"), nil
	case KindName:
		return []byte("ServiceByName"), nil
	case Own:
		return []byte("Own"), nil
	}
	return nil, fmt.Errorf("invalid policy kind %d", k)
}

// UnmarshalText reads a kind as MarshalText writes it (inspect --server
// reads the admin API's JSON).
func (k *Kind) UnmarshalText(b []byte) error {
	for _, c := range []Kind{KindZone, KindLabels, KindName, Own} {
		if t, _ := c.MarshalText(); string(t) == string(b) {
			*k = c
			return nil
		}
	}
	return fmt.Errorf("policy kind %q is none of Zone, ServiceByLabels, ServiceByName, Own", b)
}

// TargetRef selects the services a policy applies to.
type TargetRef struct {
	Kind Kind
	// Name is the service's name, for KindName. Callers that qualify
	// names (the publisher makes them absolute) rewrite it after Parse.
	Name string
	// Labels are the labels a service must all carry, for KindLabels.
	Labels map[string]string
}

// Policy is a partial service config and the services it applies to.
type Policy struct {
	Name      string
	TargetRef TargetRef
	// Default is the partial service config, a compact JSON object.
	Default []byte
	def     *value
}

// Target is what selection looks at in a service.
type Target struct {
	Name   string
	Labels map[string]string
}

// Selects reports whether p applies to service t.
func (p *Policy) Selects(t Target) bool {
	switch p.TargetRef.Kind {
	case KindZone:
		return true
	case KindName:
		return p.TargetRef.Name == t.Name
	case KindLabels:
		for k, v := range p.TargetRef.Labels {
			if got, ok := t.Labels[k]; !ok || got != v {
				return false
			}
		}
		return true
	}
	return false
}

// Problem is something wrong with a policy: Path is the JSON pointer of
// the value in the policy's JSON, Offset the byte offset there (-1 when
// unknown), Code a stable kebab-case id.
type Problem struct {
	Path    string
	Offset  int
	Code    string
	Message string
}

func (p Problem) String() string {
	return fmt.Sprintf("%s (at %s) [%s]", p.Message, p.Path, p.Code)
}

// Problem codes.
const (
	CodeSyntax    = "policy-syntax"
	CodeField     = "policy-field"
	CodeName      = "policy-name"
	CodeTargetRef = "policy-target-ref"
	CodeDefault   = "policy-default"
	CodeLabel     = "label-syntax"
)

// Limits that keep hostile policies cheap.
const (
	MaxPolicySize = 64 << 10
	MaxNameLen    = 253
	MaxLabels     = 64
)

// choiceKeys are members of a choice, not of a service config: a policy's
// default is the service config inside choices.
var choiceKeys = []string{"clientLanguage", "percentage", "clientHostname", "serviceConfig", "dynamicParameterConstraints"}

// Parse reads a policy written as JSON:
//
//	{"name": "retries", "targetRef": {"kind": "Zone"}, "default": {…}}
//
// targetRef is {"kind": "Zone"}, {"kind": "Service", "name": "echo"} or
// {"kind": "Service", "labels": {"team": "payments"}}. It returns the
// policy, or nil and at least one problem. Parse never panics and costs
// time linear in src.
func Parse(src []byte) (*Policy, []Problem) {
	if len(src) > MaxPolicySize {
		return nil, []Problem{{Path: "", Offset: 0, Code: CodeSyntax, Message: fmt.Sprintf("the policy is %d bytes, more than %d: a policy's default ends up in a TXT record, which cannot be that large", len(src), MaxPolicySize)}}
	}
	t, err := jtree.Parse(src)
	if err != nil {
		e := err.(*jtree.Error)
		return nil, []Problem{{Path: "", Offset: e.Offset, Code: CodeSyntax, Message: "the policy is not valid JSON: " + e.Msg}}
	}
	r := &reader{t: t}
	p := r.policy()
	if len(r.problems) > 0 {
		return nil, r.problems
	}
	return p, nil
}

type reader struct {
	t        *jtree.Tree
	problems []Problem
}

func (r *reader) fail(node int32, path, code, format string, args ...any) {
	off := -1
	if node >= 0 {
		off = int(r.t.Nodes[node].Start)
	}
	r.problems = append(r.problems, Problem{Path: path, Offset: off, Code: code, Message: fmt.Sprintf(format, args...)})
}

// members calls fn for every member of object obj; unknown keys are
// problems that list the known ones.
func (r *reader) members(obj int32, path, what string, known []string, fn func(key string, v int32, path string)) bool {
	if r.t.Nodes[obj].Kind != jtree.Object {
		r.fail(obj, path, CodeField, "%s must be an object, not %s", what, r.t.Nodes[obj].Kind)
		return false
	}
	for k := r.t.Nodes[obj].First; k >= 0; {
		v := r.t.Nodes[k].Next
		key := r.t.Str(k)
		sub := path + "/" + escape(key)
		if slices.Contains(known, key) {
			fn(key, v, sub)
		} else {
			r.fail(k, sub, CodeField, "unknown key %q in %s: it may hold %s", key, what, strings.Join(known, ", "))
		}
		k = r.t.Nodes[v].Next
	}
	return true
}

func (r *reader) str(v int32, path, what string) (string, bool) {
	if r.t.Nodes[v].Kind != jtree.String {
		r.fail(v, path, CodeField, "%s must be a string, not %s", what, r.t.Nodes[v].Kind)
		return "", false
	}
	return r.t.Str(v), true
}

func (r *reader) policy() *Policy {
	p := &Policy{}
	var nameNode, refNode, defNode int32 = -1, -1, -1
	ok := r.members(0, "", "a policy", []string{"name", "targetRef", "default"}, func(key string, v int32, path string) {
		switch key {
		case "name":
			nameNode = v
			if s, ok := r.str(v, path, "the policy name"); ok {
				if msg := CheckName(s); msg != "" {
					r.fail(v, path, CodeName, "policy name %q: %s", s, msg)
				}
				p.Name = s
			}
		case "targetRef":
			refNode = v
			p.TargetRef = r.targetRef(v, path)
		case "default":
			defNode = v
			p.def, p.Default = r.defaultConfig(v, path)
		}
	})
	if !ok {
		return nil
	}
	for _, m := range []struct {
		node int32
		key  string
		fix  string
	}{
		{nameNode, "name", `add "name": a name unique in the zone, like "retries"`},
		{refNode, "targetRef", `add "targetRef": {"kind": "Zone"}, {"kind": "Service", "name": …} or {"kind": "Service", "labels": {…}}`},
		{defNode, "default", `add "default": the partial service config the policy applies, like {"methodConfig": […]}`},
	} {
		if m.node < 0 {
			r.fail(0, "", CodeField, "the policy has no %s: %s", m.key, m.fix)
		}
	}
	return p
}

func (r *reader) targetRef(obj int32, path string) TargetRef {
	var ref TargetRef
	m := refMembers{kind: -1, name: -1, labels: -1}
	kind := ""
	if !r.members(obj, path, "targetRef", []string{"kind", "name", "labels"}, func(key string, v int32, sub string) {
		switch key {
		case "kind":
			m.kind = v
			kind, _ = r.str(v, sub, "targetRef.kind")
		case "name":
			m.name = v
			ref.Name = r.targetName(v, sub)
		case "labels":
			m.labels = v
			ref.Labels = r.labels(v, sub)
		}
	}) {
		return ref
	}
	switch {
	case m.kind < 0:
		r.fail(obj, path, CodeTargetRef, `targetRef has no kind: write "kind": "Zone" (every service of the zone) or "kind": "Service" (with "name" or "labels")`)
	case kind == "Zone":
		ref.Kind = KindZone
		if m.name >= 0 || m.labels >= 0 {
			r.fail(obj, path, CodeTargetRef, `a targetRef of kind Zone selects every service of the zone: remove "name" and "labels", or make it "kind": "Service"`)
		}
	case kind == "Service":
		ref.Kind = r.serviceRefKind(obj, path, m, ref.Labels)
	default:
		if r.t.Nodes[m.kind].Kind == jtree.String {
			r.fail(m.kind, path+"/kind", CodeTargetRef, "targetRef.kind %q is not a kind: use Zone or Service", kind)
		}
	}
	return ref
}

// refMembers are the nodes of the members of a targetRef, -1 for those
// absent.
type refMembers struct{ kind, name, labels int32 }

// targetName reads targetRef.name, v, or "" when it is not a string.
func (r *reader) targetName(v int32, path string) string {
	s, ok := r.str(v, path, "targetRef.name")
	if !ok {
		return ""
	}
	if s == "" {
		r.fail(v, path, CodeTargetRef, "targetRef.name is empty: name the service, like \"echo\"")
	}
	return s
}

// serviceRefKind is the kind of the targetRef of kind Service obj, with
// members m and labels read: KindName or KindLabels, or 0 when it has
// both or neither.
func (r *reader) serviceRefKind(obj int32, path string, m refMembers, labels map[string]string) Kind {
	switch {
	case m.name >= 0 && m.labels >= 0:
		r.fail(m.labels, path+"/labels", CodeTargetRef, `a targetRef of kind Service has either "name" or "labels", not both: write two policies`)
	case m.name >= 0:
		return KindName
	case m.labels >= 0:
		if len(labels) == 0 && r.t.Nodes[m.labels].Kind == jtree.Object {
			r.fail(m.labels, path+"/labels", CodeTargetRef, `targetRef.labels is empty, which would select every service: use "kind": "Zone" for that`)
		}
		return KindLabels
	default:
		r.fail(obj, path, CodeTargetRef, `a targetRef of kind Service needs "name" (one service) or "labels" (the services carrying them)`)
	}
	return 0
}

func (r *reader) labels(obj int32, path string) map[string]string {
	out := map[string]string{}
	if r.t.Nodes[obj].Kind != jtree.Object {
		r.fail(obj, path, CodeField, "labels must be an object of label keys to values, not %s", r.t.Nodes[obj].Kind)
		return out
	}
	n := 0
	for k := r.t.Nodes[obj].First; k >= 0; {
		v := r.t.Nodes[k].Next
		key := r.t.Str(k)
		sub := path + "/" + escape(key)
		if n++; n > MaxLabels {
			r.fail(k, sub, CodeLabel, "more than %d labels: select with fewer", MaxLabels)
			break
		}
		if s, ok := r.str(v, sub, "a label value"); ok {
			if msg := CheckLabel(key, s); msg != "" {
				r.fail(k, sub, CodeLabel, "%s", msg)
			}
			out[key] = s
		}
		k = r.t.Nodes[v].Next
	}
	return out
}

func (r *reader) defaultConfig(v int32, path string) (*value, []byte) {
	if r.t.Nodes[v].Kind != jtree.Object {
		r.fail(v, path, CodeDefault, "default must be an object (a partial service config, like {\"methodConfig\": […]}), not %s", r.t.Nodes[v].Kind)
		return nil, nil
	}
	for k := r.t.Nodes[v].First; k >= 0; k = r.t.Nodes[r.t.Nodes[k].Next].Next {
		if key := r.t.Str(k); slices.Contains(choiceKeys, key) {
			r.fail(k, path+"/"+escape(key), CodeDefault, "%q belongs to a choice, not to a service config: a policy's default is the service config inside every choice; write the service's choices in the service", key)
		}
	}
	val := fromTree(r.t, v)
	return val, val.appendJSON(nil)
}

// CheckName returns what is wrong with a policy name, or "": names are
// what Kubernetes calls DNS subdomain names (lower-case letters, digits,
// '-' and '.', starting and ending with a letter or digit, at most 253
// characters), so that they fit in a URL path and sort predictably.
func CheckName(s string) string {
	switch {
	case s == "":
		return "the name is empty"
	case len(s) > MaxNameLen:
		return fmt.Sprintf("the name is %d characters, more than %d", len(s), MaxNameLen)
	case !alnum(s[0]) || !alnum(s[len(s)-1]):
		return "a name starts and ends with a lower-case letter or digit"
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !alnum(c) && c != '-' && c != '.' {
			return fmt.Sprintf("%q is not allowed: use lower-case letters, digits, '-' and '.'", c)
		}
	}
	return ""
}

func alnum(c byte) bool { return 'a' <= c && c <= 'z' || '0' <= c && c <= '9' }

// CheckLabel returns what is wrong with a label, or "": keys are 1 to 63
// letters, digits, '-', '_', '.' and '/', values 0 to 63 of the same but
// '/' (as Kubernetes labels, loosely).
func CheckLabel(key, val string) string {
	ok := func(s string, slash bool) bool {
		for i := 0; i < len(s); i++ {
			c := s[i]
			if !alnum(c) && !('A' <= c && c <= 'Z') && c != '-' && c != '_' && c != '.' && (c != '/' || !slash) {
				return false
			}
		}
		return true
	}
	switch {
	case key == "" || len(key) > 63:
		return fmt.Sprintf("label key %q must be 1 to 63 characters", key)
	case !ok(key, true):
		return fmt.Sprintf("label key %q: use letters, digits, '-', '_', '.' and '/'", key)
	case len(val) > 63 || !ok(val, false):
		return fmt.Sprintf("label %s: value %q must be at most 63 letters, digits, '-', '_' and '.'", key, val)
	}
	return ""
}

// escape escapes a JSON pointer segment (RFC 6901).
func escape(s string) string {
	if !strings.ContainsAny(s, "~/") {
		return s
	}
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(s)
}
