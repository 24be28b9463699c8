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
	// plans caches one plan per method, for the request type it was
	// compiled against, so that a call pays no field-name lookup. It is
	// copied on write: reads are one map lookup without a lock.
	plans atomic.Pointer[map[string]*plan]
	mu    sync.Mutex // serialises writers of plans
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

// lookup returns the rules for a method and whether the matched method
// config speaks of header extraction at all.
func (r *Rules) lookup(method string) ([]serviceconfig.HeaderRule, bool) {
	if r == nil {
		return nil, false
	}
	return r.table.Lookup(method)
}

// plan returns the compiled rules for method and request type md.
func (r *Rules) plan(method string, rules []serviceconfig.HeaderRule, md protoreflect.MessageDescriptor) (*plan, error) {
	if m := r.plans.Load(); m != nil {
		if p, ok := (*m)[method]; ok && p.md == md {
			return p, nil
		}
	}
	p, err := compile(md, rules)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	next := map[string]*plan{}
	if m := r.plans.Load(); m != nil {
		for k, v := range *m {
			next[k] = v
		}
	}
	next[method] = p
	r.plans.Store(&next)
	return p, nil
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

// headers appends the header name and value of every rule that yields a
// value for m. An unset field, or one that leaves nothing once leading
// delimiters are skipped, adds no header.
func (p *plan) headers(dst []string, m protoreflect.Message) []string {
	for i := range p.steps {
		s := &p.steps[i]
		cur := m
		ok := true
		for _, fd := range s.path[:len(s.path)-1] {
			if !cur.Has(fd) {
				ok = false
				break
			}
			cur = cur.Get(fd).Message()
		}
		if !ok {
			continue
		}
		if v, ok := s.rule.Apply(cur.Get(s.path[len(s.path)-1]).String()); ok {
			dst = append(dst, s.rule.HeaderName, v)
		}
	}
	return dst
}
