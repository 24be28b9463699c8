package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/grpc-config-dns/grpc-config-dns/internal/asciijson"
	sc "github.com/grpc-config-dns/grpc-config-dns/serviceconfig"
)

// doc is a config text being read: its source and the diagnostics so far.
type doc struct {
	src   []byte
	lines []int // byte offset where each line starts
	ds    sc.Diagnostics
	// sigLen is the largest TSIG record a configured key adds to an
	// answer (0 without keys): answers are sized with it.
	sigLen int
}

func newDoc(src []byte) *doc {
	d := &doc{src: src, lines: []int{0}}
	for i, b := range src {
		if b == '\n' {
			d.lines = append(d.lines, i+1)
		}
	}
	return d
}

// pos converts a YAML line and column (1-based, column in characters) to
// the byte offset and the 1-based byte column diagnostics use.
func (d *doc) pos(line, col int) (off, byteCol int) {
	if line < 1 || line > len(d.lines) {
		return -1, 0
	}
	start := d.lines[line-1]
	off = start
	for i := 1; i < col && off < len(d.src) && d.src[off] != '\n'; i++ {
		_, w := utf8.DecodeRune(d.src[off:])
		off += w
	}
	return off, off - start + 1
}

// at makes a diagnostic positioned at n (nil: no position).
func (d *doc) at(n *yaml.Node, path string, code diagCode, format string, args ...any) sc.Diagnostic {
	diag := sc.Diagnostic{Severity: code.severity(), Code: code.String(), Message: fmt.Sprintf(format, args...), Path: path, Offset: -1}
	if n != nil && n.Line > 0 {
		diag.Offset, diag.Column = d.pos(n.Line, n.Column)
		diag.Line = n.Line
	}
	return diag
}

func (d *doc) report(n *yaml.Node, path string, code diagCode, format string, args ...any) {
	d.ds = append(d.ds, d.at(n, path, code, format, args...))
}

var yamlLineRE = regexp.MustCompile(`^yaml: (?:line (\d+): )?(.*)$`)

// parseYAML reads the first YAML (or JSON) document of src.
func (d *doc) parseYAML() *yaml.Node {
	dec := yaml.NewDecoder(bytes.NewReader(d.src))
	var root yaml.Node
	err := dec.Decode(&root)
	if errors.Is(err, io.EOF) {
		d.ds = append(d.ds, sc.Diagnostic{Severity: codeMissingField.severity(), Code: codeMissingField.String(), Offset: 0, Line: 1, Column: 1,
			Message: "the config is empty: it needs a zones: list (see testdata/publisher/example.yaml)"})
		return nil
	}
	if err != nil {
		line, msg := 0, err.Error()
		if m := yamlLineRE.FindStringSubmatch(msg); m != nil {
			line, _ = strconv.Atoi(m[1])
			msg = m[2]
		}
		diag := sc.Diagnostic{Severity: codeYAMLSyntax.severity(), Code: codeYAMLSyntax.String(), Offset: -1, Message: "cannot parse the config: " + msg}
		if line > 0 {
			diag.Line, diag.Column = line, 1
			diag.Offset, _ = d.pos(line, 1)
		}
		d.ds = append(d.ds, diag)
		return nil
	}
	var next yaml.Node
	if err := dec.Decode(&next); err == nil {
		d.report(&next, "", codeYAMLSyntax, "the file holds more than one YAML document: put everything in the first one")
	}
	n := &root
	if n.Kind == yaml.DocumentNode && len(n.Content) == 1 {
		n = n.Content[0]
	}
	return deref(n)
}

// deref follows aliases to the node they name.
func deref(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && i < 64; i++ {
		n = n.Alias
	}
	return n
}

// pair is one key and value of a mapping.
type pair struct{ k, v *yaml.Node }

// pairs returns the members of mapping n, expanding YAML merge keys
// ("<<: *defaults"): keys written in n win over merged ones, and earlier
// merge sources over later ones.
func pairs(n *yaml.Node) []pair {
	return mergedPairs(n, map[*yaml.Node]bool{})
}

// mergedPairs visits each mapping once, so that a mapping merging itself
// (through an alias) or many merges of the same mapping stay finite.
func mergedPairs(n *yaml.Node, visited map[*yaml.Node]bool) []pair {
	if visited[n] {
		return nil
	}
	visited[n] = true
	var own, merged []pair
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind == yaml.ScalarNode && k.Tag == "!!merge" {
			for _, src := range mergeSources(v) {
				merged = append(merged, mergedPairs(src, visited)...)
			}
			continue
		}
		own = append(own, pair{k, v})
		seen[k.Value] = true
	}
	for _, p := range merged {
		if !seen[p.k.Value] {
			seen[p.k.Value] = true
			own = append(own, p)
		}
	}
	return own
}

func mergeSources(v *yaml.Node) []*yaml.Node {
	v = deref(v)
	switch {
	case v == nil:
		return nil
	case v.Kind == yaml.MappingNode:
		return []*yaml.Node{v}
	case v.Kind == yaml.SequenceNode:
		var out []*yaml.Node
		for _, e := range v.Content {
			if e = deref(e); e != nil && e.Kind == yaml.MappingNode {
				out = append(out, e)
			}
		}
		return out
	}
	return nil
}

// field is a key a mapping may hold.
type field struct {
	name string
	fn   func(k, v *yaml.Node, path string)
}

// object walks mapping n: every known key's function is called with its
// node; unknown and duplicate keys are reported. what names the mapping in
// messages. It returns the key node of each key present.
func (d *doc) object(n *yaml.Node, path, what string, fields []field) map[string]*yaml.Node {
	n = deref(n)
	if n == nil || n.Kind != yaml.MappingNode {
		d.report(n, path, codeFieldType, "%s must be a mapping of keys to values, not %s", what, describe(n))
		return nil
	}
	present := map[string]*yaml.Node{}
	known := make([]string, len(fields))
	for i, f := range fields {
		known[i] = f.name
	}
	for _, p := range pairs(n) {
		key := p.k.Value
		sub := path + "/" + escapePointer(key)
		if first, dup := present[key]; dup {
			d.report(p.k, sub, codeYAMLDuplicateKey, "%s has the key %q twice (first at line %d): remove one", what, key, first.Line)
			continue
		}
		present[key] = p.k
		i := slicesIndex(known, key)
		if i < 0 {
			if s := sc.Suggest(key, known); s != "" {
				d.report(p.k, sub, codeUnknownKey, "unknown key %q in %s: did you mean %q?", key, what, s)
			} else {
				d.report(p.k, sub, codeUnknownKey, "unknown key %q in %s: it may hold %s", key, what, strings.Join(known, ", "))
			}
			continue
		}
		fields[i].fn(p.k, p.v, sub)
	}
	return present
}

func slicesIndex(s []string, v string) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}

func escapePointer(s string) string {
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(s)
}

// describe names the type of a node for messages.
func describe(n *yaml.Node) string {
	n = deref(n)
	if n == nil {
		return "nothing"
	}
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!null":
			return "null (an empty value)"
		case "!!bool":
			return "the boolean " + n.Value
		case "!!int", "!!float":
			return "the number " + n.Value
		}
		return fmt.Sprintf("the string %q", n.Value)
	}
	return "an unsupported YAML node"
}

// scalar returns the text of a scalar that is not null.
func (d *doc) scalar(n *yaml.Node, path, what string) (string, bool) {
	n = deref(n)
	if n == nil || n.Kind != yaml.ScalarNode || n.ShortTag() == "!!null" {
		d.report(n, path, codeFieldType, "%s must be a single value, not %s", what, describe(n))
		return "", false
	}
	return n.Value, true
}

// list returns the elements of a sequence; a single scalar counts as a
// one-element list, a convenience for "addresses: 10.0.0.1".
func (d *doc) list(n *yaml.Node, path, what string) []*yaml.Node {
	n = deref(n)
	if n != nil && n.Kind == yaml.ScalarNode && n.ShortTag() != "!!null" {
		return []*yaml.Node{n}
	}
	if n == nil || n.Kind != yaml.SequenceNode {
		d.report(n, path, codeFieldType, "%s must be a list, not %s", what, describe(n))
		return nil
	}
	out := make([]*yaml.Node, len(n.Content))
	for i, e := range n.Content {
		out[i] = deref(e)
	}
	return out
}

func (d *doc) boolean(n *yaml.Node, path, what string) (bool, bool) {
	n = deref(n)
	if n == nil || n.Kind != yaml.ScalarNode || n.ShortTag() != "!!bool" {
		d.report(n, path, codeFieldType, "%s must be true or false, not %s", what, describe(n))
		return false, false
	}
	var b bool
	if err := n.Decode(&b); err != nil {
		d.report(n, path, codeFieldType, "%s must be true or false, not %s", what, describe(n))
		return false, false
	}
	return b, true
}

// duration reads a TTL or timer (seconds or "5m") and checks it against
// [lo, hi].
func (d *doc) duration(n *yaml.Node, path, what string, lo, hi uint64) (uint32, bool) {
	s, ok := d.scalar(n, path, what)
	if !ok {
		return 0, false
	}
	v, err := parseTTL(strings.TrimSpace(s))
	if err != nil {
		d.report(n, path, codeDurationSyntax, "%s: %v", what, err)
		return 0, false
	}
	if v < lo || v > hi {
		d.report(n, path, codeTTLRange, "%s is %d seconds: it must be between %d and %d", what, v, lo, hi)
		return 0, false
	}
	return uint32(v), true
}

// jsonMark records that JSON text from byte off on came from a YAML node.
type jsonMark struct {
	off  int
	node *yaml.Node
}

// jsonValue is a YAML subtree converted to compact JSON.
type jsonValue struct {
	text  []byte
	marks []jsonMark
}

// node returns the YAML node the JSON byte offset off came from.
func (j *jsonValue) node(off int) *yaml.Node {
	i := sort.Search(len(j.marks), func(i int) bool { return j.marks[i].off > off }) - 1
	if i < 0 {
		return nil
	}
	return j.marks[i].node
}

// Limits on a converted subtree: aliases can make a small YAML file expand
// into a huge value ("billion laughs"); no TXT record holds more than 64 KiB.
const (
	maxJSONDepth = 100
	maxJSONSize  = 1 << 20
)

var jsonNumberRE = regexp.MustCompile(`^-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?$`)

// toJSON converts a YAML subtree to compact JSON, recording where each
// value and key came from. Problems (values JSON cannot represent exactly,
// duplicate keys) are reported; ok is false when any was found.
func (d *doc) toJSON(n *yaml.Node, path string) (j *jsonValue, ok bool) {
	j = &jsonValue{}
	c := &converter{d: d, j: j, ok: true}
	c.value(n, path, 0)
	return j, c.ok
}

type converter struct {
	d  *doc
	j  *jsonValue
	ok bool
}

func (c *converter) fail(n *yaml.Node, path string, code diagCode, format string, args ...any) {
	c.ok = false
	c.d.report(n, path, code, format, args...)
}

func (c *converter) mark(n *yaml.Node) {
	c.j.marks = append(c.j.marks, jsonMark{len(c.j.text), n})
}

func (c *converter) value(n *yaml.Node, path string, depth int) {
	if !c.ok {
		return
	}
	orig := n
	n = deref(n)
	if n == nil || depth > maxJSONDepth {
		c.fail(orig, path, codeYAMLValue, "the value nests deeper than %d levels (or its aliases loop): no service config needs that", maxJSONDepth)
		return
	}
	if len(c.j.text) > maxJSONSize {
		c.fail(orig, path, codeYAMLValue, "the value expands to more than %d bytes of JSON (through aliases?): a TXT record holds at most 64 KiB", maxJSONSize)
		return
	}
	c.mark(orig)
	switch n.Kind {
	case yaml.MappingNode:
		c.j.text = append(c.j.text, '{')
		seen := map[string]*yaml.Node{}
		for i, p := range pairs(n) {
			key := p.k.Value
			sub := path + "/" + escapePointer(key)
			if first, dup := seen[key]; dup {
				c.fail(p.k, sub, codeYAMLDuplicateKey, "the key %q appears twice (first at line %d): gRPC clients reject duplicate keys; remove one", key, first.Line)
				return
			}
			seen[key] = p.k
			if i > 0 {
				c.j.text = append(c.j.text, ',')
			}
			c.mark(p.k)
			c.j.text = asciijson.AppendString(c.j.text, key)
			c.j.text = append(c.j.text, ':')
			c.value(p.v, sub, depth+1)
		}
		c.j.text = append(c.j.text, '}')
	case yaml.SequenceNode:
		c.j.text = append(c.j.text, '[')
		for i, e := range n.Content {
			if i > 0 {
				c.j.text = append(c.j.text, ',')
			}
			c.value(e, path+"/"+strconv.Itoa(i), depth+1)
		}
		c.j.text = append(c.j.text, ']')
	case yaml.ScalarNode:
		c.scalar(n, path)
	default:
		c.fail(n, path, codeYAMLValue, "unsupported YAML node")
	}
}

func (c *converter) scalar(n *yaml.Node, path string) {
	switch n.ShortTag() {
	case "!!null":
		c.j.text = append(c.j.text, "null"...)
	case "!!bool":
		var b bool
		if err := n.Decode(&b); err != nil {
			c.fail(n, path, codeYAMLValue, "%q is not a boolean", n.Value)
			return
		}
		c.j.text = strconv.AppendBool(c.j.text, b)
	case "!!int":
		if n.Style == 0 && jsonNumberRE.MatchString(n.Value) {
			c.j.text = append(c.j.text, n.Value...)
			return
		}
		var v int64
		desc := "the number"
		if err := n.Decode(&v); err == nil {
			desc = fmt.Sprintf("the number %d", v)
		}
		c.fail(n, path, codeYAMLValue, "%s is %s in YAML but not a JSON number: write it in plain decimal (leading zeros mean octal in YAML)", n.Value, desc)
	case "!!float":
		var f float64
		if err := n.Decode(&f); err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			c.fail(n, path, codeYAMLValue, "%s has no JSON equivalent: JSON numbers are finite", n.Value)
			return
		}
		if jsonNumberRE.MatchString(n.Value) {
			c.j.text = append(c.j.text, n.Value...)
			return
		}
		c.fail(n, path, codeYAMLValue, "%s is not written as a JSON number: write %s", n.Value, strconv.FormatFloat(f, 'g', -1, 64))
	case "!!binary":
		c.fail(n, path, codeYAMLValue, "binary values have no JSON equivalent: write a string")
	default: // !!str, !!timestamp and unknown tags keep their text
		c.j.text = asciijson.AppendString(c.j.text, n.Value)
	}
}
