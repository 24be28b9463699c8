// Package extract adds request headers computed from the request message,
// as a method's headerExtraction rules in the service config say (our
// extension, after gRPC's "Automatically Setting Metadata Based On Request
// Payload" design): a string field of the request is split on a delimiter,
// the first elements are kept, and the result is sent as a header, so that
// proxies can route by affinity key without decoding the payload.
//
// Rules come from the service config the resolver chose (they follow config
// changes live) or from code, for channels that do not use our resolver;
// the same interceptors apply both. See Rules and Interceptors.
package extract

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/grpc-config-dns/grpc-config-dns/serviceconfig"
)

// Rules are the headerExtraction rules of one service config, with the
// per-method plans compiled from them. A Rules value is immutable once
// built and safe for concurrent use; a config change builds a new one.
type Rules struct {
	table *serviceconfig.HeaderRules
	// methods caches, per method, the matched rules and their plan for the
	// request type they were compiled against, so that a call costs one
	// map lookup and no field-name lookup. It is copied on write: readers
	// take no lock.
	methods atomic.Pointer[map[string]*methodRules]
	mu      sync.Mutex // serialises writers of methods
}

// methodRules is what one method's calls need.
type methodRules struct {
	rules []serviceconfig.HeaderRule
	set   bool  // the matched method config has a headerExtraction field
	plan  *plan // compiled for the request type of the first call, or nil
}

// FromServiceConfig returns the rules of a service config (JSON), as
// published in DNS or given in code. The config should be valid (see
// serviceconfig.ValidateServiceConfig); invalid rules are skipped. It
// returns nil, meaning no rules, when the config has none.
func FromServiceConfig(config []byte) (*Rules, error) {
	t, err := serviceconfig.ParseHeaderRules(config)
	if err != nil {
		return nil, fmt.Errorf("extract: the service config is not JSON: %w", err)
	}
	if t.Empty() {
		return nil, nil
	}
	return &Rules{table: t}, nil
}

// HasRules reports whether r adds any header: some method config has a
// headerExtraction rule.
func (r *Rules) HasRules() bool { return r != nil && r.table.HasRules() }

// New returns rules given in code: a map from method-config name to rules,
// where the name is "pkg.Service/Method" for one method, "pkg.Service/" for
// every method of a service, and "" for every method. Rules must be valid:
// New checks them as the service config rules are checked.
func New(byName map[string][]serviceconfig.HeaderRule) (*Rules, error) {
	t, err := serviceconfig.NewHeaderRules(byName)
	if err != nil {
		return nil, err
	}
	return &Rules{table: t}, nil
}

// lookup returns what calls to method need: the rules of the method
// config that matches it, and whether that config has a headerExtraction
// field at all. Nil means none.
func (r *Rules) lookup(method string) *methodRules {
	if r == nil {
		return nil
	}
	if m := r.methods.Load(); m != nil {
		if mr, ok := (*m)[method]; ok {
			return mr
		}
	}
	rules, set := r.table.Lookup(method)
	mr := &methodRules{rules: rules, set: set}
	r.store(method, mr)
	return mr
}

// plan returns the compiled rules of mr for request type md.
func (r *Rules) plan(method string, mr *methodRules, md protoreflect.MessageDescriptor) (*plan, error) {
	if p := mr.plan; p != nil && p.md == md {
		return p, nil
	}
	p, err := compile(md, mr.rules)
	if err != nil {
		return nil, err
	}
	r.store(method, &methodRules{rules: mr.rules, set: mr.set, plan: p})
	return p, nil
}

func (r *Rules) store(method string, mr *methodRules) {
	r.mu.Lock()
	defer r.mu.Unlock()
	old := r.methods.Load()
	next := make(map[string]*methodRules, 1)
	if old != nil {
		next = make(map[string]*methodRules, len(*old)+1)
		for k, v := range *old {
			next[k] = v
		}
	}
	next[method] = mr
	r.methods.Store(&next)
}

// plan is a method's rules resolved against a request message type.
type plan struct {
	md    protoreflect.MessageDescriptor
	steps []step
}

type step struct {
	rule serviceconfig.HeaderRule
	// path leads from the request message to the string field: every
	// element but the last is a singular message field.
	path []protoreflect.FieldDescriptor
}

// FieldError says why a rule's payloadFieldName does not fit a request
// type. Calls fail with INTERNAL and this message.
type FieldError struct {
	Rule    serviceconfig.HeaderRule
	Message protoreflect.FullName
	Reason  string
}

func (e *FieldError) Error() string {
	return fmt.Sprintf("headerExtraction for header %q: payloadFieldName %q does not fit request type %s: %s",
		e.Rule.HeaderName, e.Rule.PayloadFieldName, e.Message, e.Reason)
}

// compile resolves every rule's field path against md, by protobuf field
// name or JSON name.
func compile(md protoreflect.MessageDescriptor, rules []serviceconfig.HeaderRule) (*plan, error) {
	p := &plan{md: md, steps: make([]step, 0, len(rules))}
	for _, rule := range rules {
		s := step{rule: rule}
		cur := md
		parts := strings.Split(rule.PayloadFieldName, ".")
		for i, name := range parts {
			fail := func(format string, args ...any) error {
				return &FieldError{Rule: rule, Message: md.FullName(), Reason: fmt.Sprintf(format, args...)}
			}
			fd := cur.Fields().ByName(protoreflect.Name(name))
			if fd == nil {
				fd = cur.Fields().ByJSONName(name)
			}
			if fd == nil {
				return nil, fail("%s has no field %q", cur.FullName(), name)
			}
			last := i == len(parts)-1
			switch {
			case fd.IsMap():
				return nil, fail("field %q of %s is a map", name, cur.FullName())
			case fd.IsList():
				return nil, fail("field %q of %s is repeated", name, cur.FullName())
			case !last && fd.Message() == nil:
				return nil, fail("field %q of %s is a %s, not a message, so the path cannot continue", name, cur.FullName(), fd.Kind())
			case last && fd.Kind() != protoreflect.StringKind:
				return nil, fail("field %q of %s is a %s, not a string", name, cur.FullName(), fd.Kind())
			}
			s.path = append(s.path, fd)
			if !last {
				cur = fd.Message()
			}
		}
		p.steps = append(p.steps, s)
	}
	return p, nil
}

// value returns the string at the step's path in m, or false when a
// message on the way or the field itself is unset: Get would return the
// field's declared default (proto2), and an unset field adds no header.
func (s *step) value(m protoreflect.Message) (string, bool) {
	cur := m
	for _, fd := range s.path[:len(s.path)-1] {
		if !cur.Has(fd) {
			return "", false
		}
		cur = cur.Get(fd).Message()
	}
	leaf := s.path[len(s.path)-1]
	if leaf.HasPresence() && !cur.Has(leaf) {
		return "", false
	}
	return cur.Get(leaf).String(), true
}

// headers appends the header name and value of every rule that yields a
// value for m. An unset field, or one that leaves nothing once leading
// delimiters are skipped, adds no header.
func (p *plan) headers(dst []string, m protoreflect.Message) []string {
	for i := range p.steps {
		s := &p.steps[i]
		if v, ok := s.value(m); ok {
			if v, ok = s.rule.Apply(v); ok {
				dst = append(dst, s.rule.HeaderName, v)
			}
		}
	}
	return dst
}
