package policy

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/grpc-config-dns/grpc-config-dns/internal/asciijson"
	"github.com/grpc-config-dns/grpc-config-dns/internal/jtree"
)

// Origin is one layer that set a value: a policy, or the service's own
// config (Kind Own, Policy ""). Path is the JSON pointer of the value in
// that layer: in the policy's default, or in the service's own config.
type Origin struct {
	Policy string `json:"policy,omitempty"`
	Kind   Kind   `json:"kind"`
	Path   string `json:"path"`
}

// value is a JSON value that remembers which layers set it. Objects keep
// their members in order.
type value struct {
	kind jtree.Kind
	raw  []byte   // scalars: the JSON text
	keys []string // objects: decoded keys, parallel to elems
	// elems are an object's member values or an array's elements.
	elems []*value
	from  []Origin
}

func fromTree(t *jtree.Tree, i int32) *value {
	var b builder
	b.reset(t)
	return b.value(i)
}

// builder makes the values of a tree in a few allocations, its slabs,
// which an Apply that keeps no value reuses for the next (builders): a
// publisher applies a stack to each of 100 000 services, and a value and
// two slices for each of their nodes were half of what merging cost.
type builder struct {
	tree jtree.Tree // an Apply's own config, parsed
	t    *jtree.Tree
	vals []value
	ptrs []*value
	keys []string
	// names holds the keys decoded so far, shared: service configs use a
	// few dozen names.
	names map[string]string
}

// builders are the builders of Apply.
var builders = sync.Pool{New: func() any { return new(builder) }}

// reset makes b build values of t. The values built before are b's
// again: those of a kept result must come from a builder of their own.
func (b *builder) reset(t *jtree.Tree) {
	b.t = t
	n := len(t.Nodes)
	if cap(b.vals) < n {
		b.vals, b.ptrs, b.keys = make([]value, 0, n), make([]*value, 0, n), make([]string, 0, n)
	}
	b.vals, b.ptrs, b.keys = b.vals[:0], b.ptrs[:0], b.keys[:0]
	if len(b.names) > 4096 {
		b.names = nil // a config of names of its own: not worth keeping
	}
}

// value builds the value of node i. Each node makes at most one value
// and is at most one element or key, so the slabs, as long as t has
// nodes, never grow: the values' pointers stay valid. Their slices are
// capped, so that a merge appending to one copies it.
func (b *builder) value(i int32) *value {
	t := b.t
	n := &t.Nodes[i]
	b.vals = append(b.vals, value{kind: n.Kind})
	v := &b.vals[len(b.vals)-1]
	switch n.Kind {
	case jtree.Object:
		c := 0
		for k := n.First; k >= 0; k = t.Nodes[t.Nodes[k].Next].Next {
			c++
		}
		v.keys, v.elems = b.takeKeys(c), b.takePtrs(c)
		j := 0
		for k := n.First; k >= 0; j++ {
			e := t.Nodes[k].Next
			v.keys[j] = b.name(k)
			v.elems[j] = b.value(e)
			k = t.Nodes[e].Next
		}
	case jtree.Array:
		c := 0
		for e := n.First; e >= 0; e = t.Nodes[e].Next {
			c++
		}
		v.elems = b.takePtrs(c)
		j := 0
		for e := n.First; e >= 0; e = t.Nodes[e].Next {
			v.elems[j] = b.value(e)
			j++
		}
	default:
		v.raw = t.Raw(i)
	}
	return v
}

func (b *builder) takePtrs(c int) []*value {
	if c == 0 {
		return nil
	}
	at := len(b.ptrs)
	b.ptrs = b.ptrs[:at+c]
	return b.ptrs[at : at+c : at+c]
}

func (b *builder) takeKeys(c int) []string {
	if c == 0 {
		return nil
	}
	at := len(b.keys)
	b.keys = b.keys[:at+c]
	return b.keys[at : at+c : at+c]
}

// name is the decoded key of node k.
func (b *builder) name(k int32) string {
	raw := b.t.Raw(k)
	if s, ok := b.names[string(raw)]; ok {
		return s
	}
	s := b.t.Str(k)
	if b.names == nil {
		b.names = map[string]string{}
	}
	b.names[string(raw)] = s
	return s
}

func (v *value) appendJSON(dst []byte) []byte {
	switch v.kind {
	case jtree.Object:
		dst = append(dst, '{')
		for i, k := range v.keys {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = asciijson.AppendString(dst, k)
			dst = append(dst, ':')
			dst = v.elems[i].appendJSON(dst)
		}
		return append(dst, '}')
	case jtree.Array:
		dst = append(dst, '[')
		for i, e := range v.elems {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = e.appendJSON(dst)
		}
		return append(dst, ']')
	}
	return append(dst, v.raw...)
}

// take is how a merge takes v, set by o over what history set: stamped
// when it tracks who set what, else v itself.
func (v *value) take(o Origin, history []Origin, track bool) *value {
	if !track {
		return v
	}
	return v.stamped(o, history)
}

// stamped copies v with every value's origins set to history, then o at
// the matching path below o.Path. history is who set the value v
// replaces: every value inside v lists them first, so that a list that
// replaced a list still says whose it replaced.
func (v *value) stamped(o Origin, history []Origin) *value {
	c := &value{kind: v.kind, raw: v.raw, keys: slices.Clip(v.keys), from: append(slices.Clip(history), o)}
	if v.elems != nil {
		c.elems = make([]*value, len(v.elems))
		for i, e := range v.elems {
			sub := o
			sub.Path = o.Path + "/" + v.segment(i)
			c.elems[i] = e.stamped(sub, history)
		}
	}
	return c
}

func (v *value) segment(i int) string {
	if v.kind == jtree.Object {
		return escape(v.keys[i])
	}
	return strconv.Itoa(i)
}

func (v *value) member(key string) int {
	return slices.Index(v.keys, key)
}

// merged is dst with src, a layer whose values come from o (o.Path is
// src's own path), merged over it. The rules, everywhere: objects merge
// key by key; at the top of a service config, methodConfig entries merge
// by their name list; any other value replaces the one below, and keeps
// the history of who set it. Who set what is recorded only when track is
// set.
//
// Neither dst nor src is written: the result copies the values on the
// paths the merge changes and shares the rest, so that one stack's
// merged defaults serve each of 100 000 services without a copy each
// (copying them was a quarter of applying a stack).
func merged(dst, src *value, o Origin, configRoot, track bool) *value {
	c := &value{kind: dst.kind, raw: dst.raw, keys: slices.Clip(dst.keys), elems: slices.Clone(dst.elems), from: dst.from}
	if track {
		c.from = append(slices.Clip(dst.from), o)
	}
	for si, key := range src.keys {
		so := o
		if track {
			so.Path = o.Path + "/" + escape(key)
		}
		sv := src.elems[si]
		di := c.member(key)
		switch {
		case di < 0:
			c.keys = append(c.keys, key)
			c.elems = append(c.elems, sv.take(so, nil, track))
		case sv.kind == jtree.Object && c.elems[di].kind == jtree.Object:
			c.elems[di] = merged(c.elems[di], sv, so, false, track)
		case configRoot && key == "methodConfig" && sv.kind == jtree.Array && c.elems[di].kind == jtree.Array:
			c.elems[di] = mergedMethodConfig(c.elems[di], sv, so, track)
		default:
			// The replaced value's origins are every layer that set
			// something in it, in merge order (merging appends to the
			// origins of every value on the way).
			c.elems[di] = sv.take(so, c.elems[di].from, track)
		}
	}
	return c
}

// mergedMethodConfig is dst, a methodConfig list, with a layer's list
// merged over it, written as merged writes: an entry whose name list
// names the same methods as an entry below merges into it key by key;
// any other entry is added.
func mergedMethodConfig(dst, src *value, o Origin, track bool) *value {
	c := &value{kind: dst.kind, elems: slices.Clone(dst.elems), from: dst.from}
	if track {
		c.from = append(slices.Clip(dst.from), o)
	}
	index := map[string]int{}
	for i, e := range c.elems {
		if k, ok := methodKey(e); ok {
			if _, dup := index[k]; !dup {
				index[k] = i
			}
		}
	}
	for si, e := range src.elems {
		so := o
		if track {
			so.Path = o.Path + "/" + strconv.Itoa(si)
		}
		k, ok := methodKey(e)
		if di, found := index[k]; ok && found && c.elems[di].kind == jtree.Object {
			c.elems[di] = merged(c.elems[di], e, so, false, track)
			continue
		}
		if ok {
			index[k] = len(c.elems)
		}
		c.elems = append(c.elems, e.take(so, nil, track))
	}
	return c
}

// methodKey identifies a methodConfig entry by the methods it names: its
// name list's {service, method} pairs, decoded and sorted. As in gRPC
// (service_config.proto: "value \"\", value `null`, and not present are
// the same"), an empty or null service or method is an absent one, so
// {service: X, method: ""} and {service: X} are one entry. Entries
// without a name list are never merged.
func methodKey(e *value) (string, bool) {
	if e.kind != jtree.Object {
		return "", false
	}
	i := e.member("name")
	if i < 0 || e.elems[i].kind != jtree.Array {
		return "", false
	}
	var names []string
	for _, n := range e.elems[i].elems {
		if n.kind != jtree.Object {
			return "", false
		}
		var svc, method string
		for j, k := range n.keys {
			switch k {
			case "service":
				svc = nameKey(n.elems[j])
			case "method":
				method = nameKey(n.elems[j])
			}
		}
		names = append(names, svc+"\x00"+method)
	}
	slices.Sort(names)
	return strings.Join(names, "\x01"), true
}

// nameKey is the part of a methodKey for a service or method value: a
// string's decoded text, "" for an empty string or null, and the JSON
// text, marked, for other values (which validation then reports).
func nameKey(v *value) string {
	switch v.kind {
	case jtree.Null:
		return ""
	case jtree.String:
		if !slices.Contains(v.raw, '\\') {
			return string(v.raw[1 : len(v.raw)-1])
		}
		var s string
		if err := json.Unmarshal(v.raw, &s); err == nil {
			return s
		}
	}
	return "\x02" + string(v.raw)
}

// Field is one value of a final config and the layers that set it, in
// merge order: the last one's value is the one published.
type Field struct {
	Path    string   `json:"path"`
	Value   []byte   `json:"-"`
	Origins []Origin `json:"origins"`
}

// fields lists v's leaves (scalars and empty objects or lists), in
// document order, below path.
func (v *value) fields(path string, out []Field) []Field {
	if len(v.elems) == 0 {
		return append(out, Field{Path: path, Value: v.appendJSON(nil), Origins: v.from})
	}
	for i, e := range v.elems {
		out = e.fields(path+"/"+v.segment(i), out)
	}
	return out
}

// at returns the deepest value on the way to JSON pointer path.
func (v *value) at(path string) *value {
	if path == "" || path[0] != '/' {
		return v
	}
	for _, seg := range strings.Split(path[1:], "/") {
		seg = strings.NewReplacer("~1", "/", "~0", "~").Replace(seg)
		i := -1
		if v.kind == jtree.Object {
			i = v.member(seg)
		} else if n, err := strconv.Atoi(seg); err == nil && v.kind == jtree.Array && n >= 0 && n < len(v.elems) {
			i = n
		}
		if i < 0 {
			break
		}
		v = v.elems[i]
	}
	return v
}

// Leaves lists the leaves of JSON document js (scalars, empty objects and
// lists) in document order, without origins.
func Leaves(js []byte) ([]Field, error) {
	t, err := jtree.Parse(js)
	if err != nil {
		return nil, err
	}
	return fromTree(t, 0).fields("", nil), nil
}
