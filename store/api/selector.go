package api

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"

	"github.com/grpc-config-dns/grpc-config-dns/store"
)

// Label and field selectors on list and watch (labelSelector,
// fieldSelector), with the grammar and meaning of k8s.io/apimachinery's
// labels and fields packages, written here rather than imported: those
// bring klog and its init into the server for two small parsers.

// requirement is one term of a selector.
type requirement struct {
	key    string
	op     string // "=", "!=", "in", "notin", "exists", "!"
	values []string
}

// selector is a conjunction of requirements on labels or fields.
type selector []requirement

// matches reports whether the values get gives satisfy every
// requirement; get returns a value and whether it is set.
func (s selector) matches(get func(key string) (string, bool)) bool {
	for _, r := range s {
		v, ok := get(r.key)
		switch r.op {
		case "exists":
			if !ok {
				return false
			}
		case "!":
			if ok {
				return false
			}
		case "=":
			if !ok || v != r.values[0] {
				return false
			}
		case "!=":
			if ok && v == r.values[0] {
				return false
			}
		case "in":
			if !ok || !slices.Contains(r.values, v) {
				return false
			}
		case "notin":
			if ok && slices.Contains(r.values, v) {
				return false
			}
		}
	}
	return true
}

var (
	labelName  = regexp.MustCompile(`^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$`)
	dnsSubname = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
)

// checkKey checks a label key: an optional DNS subdomain prefix and a
// slash, then a name of at most 63 characters (Kubernetes' rules).
func checkKey(k string) error {
	name := k
	if prefix, n, ok := strings.Cut(k, "/"); ok {
		if prefix == "" || len(prefix) > 253 || !dnsSubname.MatchString(prefix) {
			return fmt.Errorf("%q: the prefix before / must be a DNS subdomain (lower case, like example.com)", k)
		}
		name = n
	}
	if name == "" || len(name) > 63 || !labelName.MatchString(name) {
		return fmt.Errorf("%q: a label key is at most 63 characters of letters, digits, '-', '_' and '.', starting and ending with a letter or digit, after an optional prefix/", k)
	}
	return nil
}

// checkValue checks a label value: empty, or a label name.
func checkValue(v string) error {
	if v != "" && (len(v) > 63 || !labelName.MatchString(v)) {
		return fmt.Errorf("%q: a label value is empty or at most 63 characters of letters, digits, '-', '_' and '.', starting and ending with a letter or digit", v)
	}
	return nil
}

// parseLabelSelector reads a label selector: requirements separated by
// commas, each "key", "!key", "key=value", "key==value", "key!=value",
// "key in (v1,v2)" or "key notin (v1,v2)".
func parseLabelSelector(s string) (selector, error) {
	var out selector
	p := &lexer{s: s}
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	for {
		r, err := p.requirement()
		if err != nil {
			return nil, err
		}
		out = append(out, r)
		p.space()
		if p.done() {
			return out, nil
		}
		if !p.take(",") {
			return nil, fmt.Errorf("expected ',' after the requirement on %q at offset %d", r.key, p.i)
		}
	}
}

type lexer struct {
	s string
	i int
}

func (p *lexer) done() bool { return p.i >= len(p.s) }

func (p *lexer) space() {
	for p.i < len(p.s) && (p.s[p.i] == ' ' || p.s[p.i] == '\t') {
		p.i++
	}
}

func (p *lexer) take(tok string) bool {
	p.space()
	if strings.HasPrefix(p.s[p.i:], tok) {
		p.i += len(tok)
		return true
	}
	return false
}

// word reads up to a separator: space, comma, parenthesis, '=' or '!'.
func (p *lexer) word() string {
	p.space()
	start := p.i
	for p.i < len(p.s) && !strings.ContainsRune(" \t,()=!", rune(p.s[p.i])) {
		p.i++
	}
	return p.s[start:p.i]
}

func (p *lexer) requirement() (requirement, error) {
	p.space()
	if p.take("!") {
		k := p.word()
		if err := checkKey(k); err != nil {
			return requirement{}, err
		}
		return requirement{key: k, op: "!"}, nil
	}
	k := p.word()
	if k == "" {
		return requirement{}, fmt.Errorf("expected a label key at offset %d", p.i)
	}
	if err := checkKey(k); err != nil {
		return requirement{}, err
	}
	p.space()
	switch {
	case p.done() || p.s[p.i] == ',':
		return requirement{key: k, op: "exists"}, nil
	case p.take("=="), p.take("="):
		v := p.word()
		if err := checkValue(v); err != nil {
			return requirement{}, err
		}
		return requirement{key: k, op: "=", values: []string{v}}, nil
	case p.take("!="):
		v := p.word()
		if err := checkValue(v); err != nil {
			return requirement{}, err
		}
		return requirement{key: k, op: "!=", values: []string{v}}, nil
	}
	op := p.word()
	if op != "in" && op != "notin" {
		return requirement{}, fmt.Errorf("unknown operator %q after %q: use =, ==, !=, in, notin (or the key alone, or !key)", op, k)
	}
	if !p.take("(") {
		return requirement{}, fmt.Errorf("expected '(' after %s", op)
	}
	r := requirement{key: k, op: op}
	if p.take(")") {
		return requirement{}, fmt.Errorf("%s () of %q: the set of values can't be empty", op, k)
	}
	for {
		v := p.word()
		if err := checkValue(v); err != nil {
			return requirement{}, err
		}
		r.values = append(r.values, v)
		if p.take(")") {
			return r, nil
		}
		if !p.take(",") {
			return requirement{}, fmt.Errorf("expected ',' or ')' in the values of %q", k)
		}
	}
}

// fieldNames are the fields a field selector may name, per kind.
var fieldNames = []string{"metadata.name", "metadata.zone"}

// parseFieldSelector reads a field selector: "field=value",
// "field==value" or "field!=value", separated by commas; a value may
// escape ',', '=', '!' and '\' with a backslash.
func parseFieldSelector(s string) (selector, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out selector
	for _, term := range splitUnescaped(s, ',') {
		op, at := "", -1
		for i := 0; i < len(term); i++ {
			if term[i] == '\\' {
				i++
				continue
			}
			if strings.HasPrefix(term[i:], "!=") {
				op, at = "!=", i
				break
			}
			if term[i] == '=' {
				op, at = "=", i
				break
			}
		}
		if at < 0 {
			return nil, fmt.Errorf("%q is not field=value, field==value or field!=value", term)
		}
		key := strings.TrimSpace(term[:at])
		v := term[at+len(op):]
		if op == "=" {
			v = strings.TrimPrefix(v, "=")
		}
		if !slices.Contains(fieldNames, key) {
			return nil, fmt.Errorf("%q is not a known field selector: only %s", key, strings.Join(fieldNames, ", "))
		}
		out = append(out, requirement{key: key, op: op, values: []string{unescape(strings.TrimSpace(v))}})
	}
	return out, nil
}

func splitUnescaped(s string, sep byte) []string {
	var out []string
	start := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case sep:
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}

func unescape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// objectMatch is the match of a list or watch's selectors, nil when it
// has none.
func objectMatch(r *http.Request) (func(*store.Object) bool, error) {
	q := r.URL.Query()
	labels, err := parseLabelSelector(q.Get("labelSelector"))
	if err != nil {
		return nil, &store.Error{Code: http.StatusBadRequest, Reason: store.ReasonBadRequest, Message: fmt.Sprintf("labelSelector %q: %v", q.Get("labelSelector"), err)}
	}
	fields, err := parseFieldSelector(q.Get("fieldSelector"))
	if err != nil {
		return nil, &store.Error{Code: http.StatusBadRequest, Reason: store.ReasonBadRequest, Message: fmt.Sprintf("fieldSelector %q: %v", q.Get("fieldSelector"), err)}
	}
	if labels == nil && fields == nil {
		return nil, nil
	}
	return func(o *store.Object) bool {
		return labels.matches(func(k string) (string, bool) { v, ok := o.Metadata.Labels[k]; return v, ok }) &&
			fields.matches(func(k string) (string, bool) {
				switch k {
				case "metadata.name":
					return o.Metadata.Name, true
				case "metadata.zone":
					return o.Metadata.Zone, true
				}
				return "", false
			})
	}, nil
}

// filterWatch passes the events of a watch that concern objects the
// selector selects, as kube-apiserver does: an object that starts to
// match is ADDED, one that stops is DELETED. selected are the names
// selected when the watch starts (from rv N; a watch from "" or "0" learns
// them from its initial ADDED events).
func filterWatch(ctx context.Context, in <-chan store.Event, match func(*store.Object) bool, selected map[string]bool) <-chan store.Event {
	out := make(chan store.Event, cap(in))
	go func() {
		defer close(out)
		for e := range in {
			o, ok := e.Object.(*store.Object)
			if ok {
				key := o.Metadata.Zone + "/" + o.Metadata.Name
				now, was := match(o), selected[key]
				switch {
				case e.Type == store.Deleted && was:
					delete(selected, key)
				case e.Type == store.Deleted:
					continue
				case now && !was:
					e.Type = store.Added
					selected[key] = true
				case !now && was:
					e.Type = store.Deleted
					delete(selected, key)
				case !now:
					continue
				}
			}
			select {
			case out <- e:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out
}
