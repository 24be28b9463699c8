package serviceconfig

import (
	"fmt"
	"strings"

	"github.com/grpc-config-dns/grpc-config-dns/internal/jtree"
)

// HeaderRule is one entry of a method's headerExtraction list (our
// extension; the "metadata from request payload" design): take the string
// field PayloadFieldName of the request, skip leading Delimiter bytes, keep
// the first NumElementsToKeep elements split on Delimiter, and send them,
// re-joined, as the header HeaderName.
type HeaderRule struct {
	PayloadFieldName  string
	Delimiter         byte
	NumElementsToKeep int
	HeaderName        string
}

// Apply turns a field value into the header value, and reports false when
// the result is empty (no header is added then).
func (r HeaderRule) Apply(field string) (string, bool) {
	d := r.Delimiter
	i := 0
	for i < len(field) && field[i] == d {
		i++ // leading delimiters do not count and are not copied
	}
	rest := field[i:]
	if rest == "" {
		return "", false
	}
	// Find where element number NumElementsToKeep starts, then cut before
	// the delimiter that ends it: strings.Split and Join without the copies.
	pos := 0
	for k := 1; k < r.NumElementsToKeep; k++ {
		j := strings.IndexByte(rest[pos:], d)
		if j < 0 {
			return rest, true // fewer elements than asked: keep them all
		}
		pos += j + 1
	}
	if j := strings.IndexByte(rest[pos:], d); j >= 0 {
		return rest[:pos+j], true
	}
	return rest, true
}

// HeaderRules holds the headerExtraction rules of one service config,
// indexed the way gRPC matches method configs.
type HeaderRules struct {
	entries map[string]headerEntry // "/svc/method", "/svc/" or ""
}

type headerEntry struct {
	rules []HeaderRule
	set   bool // the method config has a headerExtraction field
}

// ParseHeaderRules reads the headerExtraction rules of a service config
// (JSON). The config should have been validated; rules that are not valid
// are skipped. A nil *HeaderRules holds no rules.
func ParseHeaderRules(config []byte) (*HeaderRules, error) {
	t, err := jtree.Parse(config)
	if err != nil {
		return nil, err
	}
	hr := &HeaderRules{entries: map[string]headerEntry{}}
	if t.Nodes[0].Kind != jtree.Object {
		return hr, nil
	}
	mcs := t.Get(0, "methodConfig")
	if mcs < 0 || t.Nodes[mcs].Kind != jtree.Array {
		return hr, nil
	}
	for mc := t.Nodes[mcs].First; mc >= 0; mc = t.Nodes[mc].Next {
		if t.Nodes[mc].Kind == jtree.Object {
			hr.addNames(t, mc, methodHeaderEntry(t, mc))
		}
	}
	return hr, nil
}

// methodHeaderEntry reads the headerExtraction rules of the method config
// mc, leaving out those that are not valid.
func methodHeaderEntry(t *jtree.Tree, mc int32) headerEntry {
	var e headerEntry
	he := t.Get(mc, "headerExtraction")
	if he < 0 || t.Nodes[he].Kind != jtree.Array {
		return e
	}
	e.set = true
	for r := t.Nodes[he].First; r >= 0; r = t.Nodes[r].Next {
		if rule, ok := headerRule(t, r); ok {
			e.rules = append(e.rules, rule)
		}
	}
	return e
}

// addNames files e under the key of each name of the method config mc.
func (hr *HeaderRules) addNames(t *jtree.Tree, mc int32, e headerEntry) {
	names := t.Get(mc, "name")
	if names < 0 || t.Nodes[names].Kind != jtree.Array {
		return
	}
	for n := t.Nodes[names].First; n >= 0; n = t.Nodes[n].Next {
		if t.Nodes[n].Kind != jtree.Object {
			continue
		}
		service, method := strField(t, n, "service"), strField(t, n, "method")
		key := ""
		if service != "" {
			key = "/" + service + "/" + method
		}
		hr.entries[key] = e
	}
}

func strField(t *jtree.Tree, obj int32, key string) string {
	if v := t.Get(obj, key); v >= 0 && t.Nodes[v].Kind == jtree.String {
		return t.Str(v)
	}
	return ""
}

func headerRule(t *jtree.Tree, r int32) (HeaderRule, bool) {
	if t.Nodes[r].Kind != jtree.Object {
		return HeaderRule{}, false
	}
	rule := HeaderRule{
		PayloadFieldName: strField(t, r, "payloadFieldName"),
		HeaderName:       strField(t, r, "headerName"),
	}
	d := strField(t, r, "delimiterCharacter")
	n := int64(0)
	if v := t.Get(r, "numElementsToKeep"); v >= 0 {
		n, _ = t.Int(v)
	}
	if len(d) != 1 || d[0] < 0x20 || d[0] > 0x7e || n < 1 || checkFieldPath(rule.PayloadFieldName) != nil || checkHeaderName(rule.HeaderName) != nil {
		return HeaderRule{}, false
	}
	rule.Delimiter, rule.NumElementsToKeep = d[0], int(n)
	return rule, true
}

// Lookup returns the rules for a call to fullMethod ("/pkg.Service/Method"),
// matching method configs as gRPC does: the exact method, else the
// service's default, else the global default. set reports whether the
// matched method config has a headerExtraction field at all.
func (hr *HeaderRules) Lookup(fullMethod string) (rules []HeaderRule, set bool) {
	if hr == nil {
		return nil, false
	}
	if e, ok := hr.entries[fullMethod]; ok {
		return e.rules, e.set
	}
	if i := strings.LastIndexByte(fullMethod, '/'); i > 0 {
		if e, ok := hr.entries[fullMethod[:i+1]]; ok {
			return e.rules, e.set
		}
	}
	if e, ok := hr.entries[""]; ok {
		return e.rules, e.set
	}
	return nil, false
}

// HasRules reports whether some method config has a headerExtraction rule
// (Empty is false for a config whose method configs merely exist).
func (hr *HeaderRules) HasRules() bool {
	if hr == nil {
		return false
	}
	for _, e := range hr.entries {
		if len(e.rules) > 0 {
			return true
		}
	}
	return false
}

// Empty reports whether the config has no headerExtraction field at all.
func (hr *HeaderRules) Empty() bool { return hr == nil || len(hr.entries) == 0 }

// NewHeaderRules builds rules from code: a map from method-config name
// ("pkg.Service/Method", "pkg.Service/" or "" for every method) to rules,
// checked as the service config's rules are.
func NewHeaderRules(byName map[string][]HeaderRule) (*HeaderRules, error) {
	hr := &HeaderRules{entries: map[string]headerEntry{}}
	for name, rules := range byName {
		key := ""
		if name != "" {
			service, method, ok := strings.Cut(name, "/")
			if !ok || service == "" || strings.Contains(method, "/") {
				return nil, fmt.Errorf("header rules: %q is not a method-config name: write \"pkg.Service/Method\", \"pkg.Service/\" or \"\"", name)
			}
			key = "/" + service + "/" + method
		}
		seen := map[string]bool{}
		for i, r := range rules {
			where := fmt.Sprintf("header rules for %q, rule %d", name, i)
			if err := checkFieldPath(r.PayloadFieldName); err != nil {
				return nil, fmt.Errorf("%s: payloadFieldName: %v", where, err)
			}
			if r.Delimiter < 0x20 || r.Delimiter > 0x7e {
				return nil, fmt.Errorf("%s: the delimiter must be one printable ASCII character", where)
			}
			if r.NumElementsToKeep < 1 {
				return nil, fmt.Errorf("%s: NumElementsToKeep must be at least 1, not %d", where, r.NumElementsToKeep)
			}
			if err := checkHeaderName(r.HeaderName); err != nil {
				return nil, fmt.Errorf("%s: headerName: %v", where, err)
			}
			if seen[r.HeaderName] {
				return nil, fmt.Errorf("%s: header %q is extracted twice; every headerName must be unique", where, r.HeaderName)
			}
			seen[r.HeaderName] = true
		}
		hr.entries[key] = headerEntry{rules: rules, set: true}
	}
	return hr, nil
}
