package main

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"sync"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/grpc-config-dns/grpc-config-dns/model"
	"github.com/grpc-config-dns/grpc-config-dns/serviceconfig/schema"
)

// explain prints the fields of the specs of zones, services and policies
// as kubectl explain prints those of Kubernetes objects (issue 31). What
// it says is read from the JSON Schemas that editors use, embedded in
// the binary (model.PublisherSchema and the gRPC service config schema
// it refers to): a field is described in one place.

func init() { extraCommands = append(extraCommands, explainCmd) }

func explainCmd(e *env) *cobra.Command {
	var recursive bool
	cmd := &cobra.Command{
		Use:   "explain KIND[.FIELD]... [--recursive]",
		Short: "Describe the fields of zone, service and policy specs",
		Long: `Describe a kind of object (zone, service or policy) or one field of its
spec, as kubectl explain does: the field's type and description, the values
it may take, and its own fields, each with its type and the first line of
its description (-required- marks those a spec must give). A path goes
through lists to the fields of their items, and into the gRPC service
config:

  grpc-config-dns explain service
  grpc-config-dns explain service.serviceConfig.methodConfig.retryPolicy
  grpc-config-dns explain zone.dnssec.kskLifetime

The path may start with spec (service.spec.port). --recursive prints the
fields of the fields, down to the leaves. Everything is read from the JSON
Schemas of the project (model/publisher.schema.json and
serviceconfig/schema/grpc-config.schema.json), which editors use too; the
publisher's own checks (lint) go further than they do.

Exit status: 0 described; 2 no such kind or field (with the names there are).`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageErr("explain takes one KIND[.FIELD]...: the kinds are %s", strings.Join(explainKindNames(), ", "))
			}
			return nil
		},
		ValidArgsFunction: completeExplain,
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := loadSchemas()
			if err != nil {
				return err
			}
			x, err := s.resolve(args[0])
			if err != nil {
				return err
			}
			s.write(e.stdout, x, recursive)
			return nil
		},
	}
	cmd.Flags().BoolVar(&recursive, "recursive", false, "print the fields of every field, down to the leaves")
	return cmd
}

// explainKind is a kind of store object whose spec explain describes.
type explainKind struct {
	name, plural string
	// ptr is the JSON pointer, in the publisher schema, of the schema of
	// such an object in a publisher config.
	ptr string
	// hidden are the fields of that schema that the object's spec does
	// not have, with the kinds of object they are instead.
	hidden map[string]string
	// named is the field required in a publisher config that the spec
	// may leave out: the object's name says it.
	named string
	// note follows the description of the kind.
	note string
}

var explainKinds = []*explainKind{
	{name: "zone", plural: "zones", ptr: "/$defs/zone", hidden: map[string]string{"policies": "policy", "services": "service"}, named: "origin",
		note: "A zone object's spec has no services or policies: they are objects of their own (explain service, explain policy)."},
	{name: "service", plural: "services", ptr: "/$defs/service", named: "name"},
	{name: "policy", plural: "policies", ptr: "/$defs/zone/properties/policies/items", named: "name"},
}

func explainKindNames() []string {
	var names []string
	for _, k := range explainKinds {
		names = append(names, k.name)
	}
	return names
}

// schemaDoc is one JSON Schema document, known by its $id.
type schemaDoc struct {
	id   string
	root map[string]any
}

// schemaNode is the schema m, at JSON pointer ptr of doc.
type schemaNode struct {
	doc *schemaDoc
	ptr string
	m   map[string]any
}

// loc says where n is: its document's $id and its JSON pointer.
func (n schemaNode) loc() string { return n.doc.id + "#" + n.ptr }

// child is the schema at key (and further keys) under n.
func (n schemaNode) child(keys ...string) (schemaNode, bool) {
	for _, k := range keys {
		m, ok := n.m[k].(map[string]any)
		if !ok {
			return schemaNode{}, false
		}
		n = schemaNode{doc: n.doc, ptr: n.ptr + "/" + escapePointer(k), m: m}
	}
	return n, true
}

// alternatives are the schemas of n's list keyword key (oneOf, anyOf,
// allOf).
func (n schemaNode) alternatives(key string) []schemaNode {
	list, _ := n.m[key].([]any)
	var out []schemaNode
	for i, v := range list {
		if m, ok := v.(map[string]any); ok {
			out = append(out, schemaNode{doc: n.doc, ptr: fmt.Sprintf("%s/%s/%d", n.ptr, key, i), m: m})
		}
	}
	return out
}

func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// schemaSet holds the documents explain reads, by $id.
type schemaSet struct {
	docs      map[string]*schemaDoc
	publisher *schemaDoc
}

var loadSchemas = sync.OnceValues(func() (*schemaSet, error) {
	s := &schemaSet{docs: map[string]*schemaDoc{}}
	for _, b := range [][]byte{model.PublisherSchema, schema.ServiceConfig} {
		var root map[string]any
		if err := json.Unmarshal(b, &root); err != nil {
			// Both are embedded and tested: this is a bug.
			return nil, fmt.Errorf("an embedded JSON schema does not parse: %v", err)
		}
		id, _ := root["$id"].(string)
		s.docs[id] = &schemaDoc{id: id, root: root}
	}
	s.publisher = s.docs[model.PublisherSchemaID]
	if s.publisher == nil || s.docs[schema.ServiceConfigID] == nil {
		return nil, fmt.Errorf("the embedded JSON schemas do not have the $id they should")
	}
	return s, nil
})

// at is the schema at JSON pointer ptr ("" or "/a/b") of doc.
func (s *schemaSet) at(doc *schemaDoc, ptr string) (schemaNode, bool) {
	n := schemaNode{doc: doc, m: doc.root}
	if ptr == "" {
		return n, true
	}
	var keys []string
	for _, k := range strings.Split(strings.TrimPrefix(ptr, "/"), "/") {
		keys = append(keys, strings.ReplaceAll(strings.ReplaceAll(k, "~1", "/"), "~0", "~"))
	}
	// Pointers into lists (oneOf/0) are not followed: $refs name $defs.
	return n.child(keys...)
}

// deref is the schema n's $ref names, if it has one.
func (s *schemaSet) deref(n schemaNode) (schemaNode, bool) {
	ref, ok := n.m["$ref"].(string)
	if !ok {
		return schemaNode{}, false
	}
	base, frag, _ := strings.Cut(ref, "#")
	doc := n.doc
	if base != "" {
		if doc = s.docs[base]; doc == nil {
			return schemaNode{}, false
		}
	}
	return s.at(doc, frag)
}

// maxSchemaDepth bounds the $refs and nested schemas followed from one
// schema: those of the project nest a few levels.
const maxSchemaDepth = 12

// schemaField is a field of an object schema.
type schemaField struct {
	name     string
	node     schemaNode
	required bool
}

// fields are the fields of the values n describes, by name: its
// properties, those of the schemas it refers to or combines, and for a
// list those of its items. A field is required when every value must
// have it.
func (s *schemaSet) fields(n schemaNode) []schemaField {
	byName := map[string]schemaNode{}
	required := map[string]bool{}
	var walk func(n schemaNode, depth int, must bool)
	walk = func(n schemaNode, depth int, must bool) {
		if depth > maxSchemaDepth {
			return
		}
		if props, ok := n.child("properties"); ok {
			for name := range props.m {
				if _, seen := byName[name]; seen {
					continue
				}
				if f, ok := props.child(name); ok {
					byName[name] = f
				}
			}
		}
		if must {
			list, _ := n.m["required"].([]any)
			for _, r := range list {
				if name, ok := r.(string); ok {
					required[name] = true
				}
			}
		}
		if r, ok := s.deref(n); ok {
			walk(r, depth+1, must)
		}
		for _, a := range n.alternatives("allOf") {
			walk(a, depth+1, must)
		}
		for _, key := range []string{"oneOf", "anyOf"} {
			for _, a := range n.alternatives(key) {
				walk(a, depth+1, false)
			}
		}
		if items, ok := n.child("items"); ok {
			walk(items, depth+1, must)
		}
	}
	walk(n, 0, true)
	out := make([]schemaField, 0, len(byName))
	for name, f := range byName {
		out = append(out, schemaField{name: name, node: f, required: required[name]})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// typeOf is the type of the values n describes, as explain prints it:
// string, integer, number, boolean, object, []T for a list of T, and
// A|B for either.
func (s *schemaSet) typeOf(n schemaNode) string { return s.typeAt(n, 0) }

func (s *schemaSet) typeAt(n schemaNode, depth int) string {
	if depth > maxSchemaDepth {
		return "any"
	}
	var types []string
	switch t := n.m["type"].(type) {
	case string:
		types = []string{t}
	case []any:
		for _, v := range t {
			if name, ok := v.(string); ok {
				types = append(types, name)
			}
		}
	}
	if len(types) > 0 {
		for i, t := range types {
			if t != "array" {
				continue
			}
			item := "any"
			if items, ok := n.child("items"); ok {
				item = s.typeAt(items, depth+1)
			}
			if strings.Contains(item, "|") {
				item = "(" + item + ")"
			}
			types[i] = "[]" + item
		}
		return strings.Join(types, "|")
	}
	if r, ok := s.deref(n); ok {
		return s.typeAt(r, depth+1)
	}
	var union []string
	add := func(t string) {
		for _, one := range strings.Split(t, "|") {
			if !slices.Contains(union, one) {
				union = append(union, one)
			}
		}
	}
	if enum, ok := n.m["enum"].([]any); ok {
		for _, v := range enum {
			add(jsonTypeOf(v))
		}
		return strings.Join(union, "|")
	}
	for _, key := range []string{"oneOf", "anyOf"} {
		for _, a := range n.alternatives(key) {
			add(s.typeAt(a, depth+1))
		}
	}
	if len(union) > 0 {
		return strings.Join(union, "|")
	}
	if _, ok := n.m["properties"]; ok {
		return "object"
	}
	return "any"
}

func jsonTypeOf(v any) string {
	switch v := v.(type) {
	case string:
		return "string"
	case bool:
		return "boolean"
	case float64:
		if v == float64(int64(v)) {
			return "integer"
		}
		return "number"
	case nil:
		return "null"
	case []any:
		return "array"
	}
	return "object"
}

// description is what the schema says of n: its description, else that
// of the schema it refers to, else, for a list, that of its items.
func (s *schemaSet) description(n schemaNode) string {
	for depth := 0; depth <= maxSchemaDepth; depth++ {
		if d, ok := n.m["description"].(string); ok && d != "" {
			return d
		}
		if r, ok := s.deref(n); ok {
			n = r
			continue
		}
		items, ok := n.child("items")
		if !ok {
			return ""
		}
		n = items
	}
	return ""
}

// values are the values n allows, when it lists them (enum).
func (s *schemaSet) values(n schemaNode) []string {
	for depth := 0; depth <= maxSchemaDepth; depth++ {
		if enum, ok := n.m["enum"].([]any); ok {
			var out []string
			for _, v := range enum {
				b, _ := json.Marshal(v)
				out = append(out, strings.Trim(string(b), `"`))
			}
			return out
		}
		r, ok := s.deref(n)
		if !ok {
			return nil
		}
		n = r
	}
	return nil
}

// explained is what explain describes: a kind, or a field of its spec.
type explained struct {
	kind     *explainKind
	path     []string // the fields from the kind's spec down
	node     schemaNode
	required bool
}

// fieldsOf are the fields of x's node; for a kind, those of its spec.
func (s *schemaSet) fieldsOf(x *explained) []schemaField {
	fs := s.fields(x.node)
	if len(x.path) > 0 {
		return fs
	}
	out := fs[:0]
	for _, f := range fs {
		if x.kind.hidden[f.name] != "" {
			continue
		}
		if f.name == x.kind.named {
			f.required = false
		}
		out = append(out, f)
	}
	return out
}

// resolve finds what arg (KIND[.FIELD]...) names, or says what there is
// instead.
func (s *schemaSet) resolve(arg string) (*explained, error) {
	parts := strings.Split(arg, ".")
	var kind *explainKind
	for _, k := range explainKinds {
		if strings.EqualFold(parts[0], k.name) || strings.EqualFold(parts[0], k.plural) {
			kind = k
		}
	}
	if kind == nil {
		return nil, usageErr("no kind %q%s; the kinds are %s", parts[0], didYouMean(parts[0], explainKindNames()), strings.Join(explainKindNames(), ", "))
	}
	root, ok := s.at(s.publisher, kind.ptr)
	if !ok {
		return nil, fmt.Errorf("the publisher schema has no %s: this is a bug", kind.ptr)
	}
	x := &explained{kind: kind, node: root}
	rest := parts[1:]
	if len(rest) > 0 && rest[0] == "spec" {
		rest = rest[1:] // kubectl's habit: the fields described are the spec's
	}
	for _, name := range rest {
		fs := s.fieldsOf(x)
		where := strings.Join(append([]string{kind.name}, x.path...), ".")
		if other := kind.hidden[name]; other != "" && len(x.path) == 0 {
			return nil, usageErr("a %s object's spec has no %s: they are objects of their own (explain %s)", kind.name, name, other)
		}
		if len(fs) == 0 {
			return nil, usageErr("%s is <%s>: it has no field %q", where, s.typeOf(x.node), name)
		}
		i := slices.IndexFunc(fs, func(f schemaField) bool { return f.name == name })
		if i < 0 {
			var names []string
			for _, f := range fs {
				names = append(names, f.name)
			}
			return nil, usageErr("%s has no field %q%s; its fields are %s", where, name, didYouMean(name, names), strings.Join(names, ", "))
		}
		x = &explained{kind: kind, path: append(slices.Clone(x.path), name), node: fs[i].node, required: fs[i].required}
	}
	return x, nil
}

// didYouMean suggests the names closest to name, as " (did you mean …?)",
// or nothing when none is close.
func didYouMean(name string, names []string) string {
	type near struct {
		name string
		d    int
	}
	var close []near
	for _, n := range names {
		d := editDistance(strings.ToLower(name), strings.ToLower(n))
		switch {
		case d <= max(2, len(n)/4):
		case len(name) >= 3 && strings.HasPrefix(strings.ToLower(n), strings.ToLower(name)):
		default:
			continue
		}
		close = append(close, near{n, d})
	}
	if len(close) == 0 {
		return ""
	}
	sort.SliceStable(close, func(i, j int) bool { return close[i].d < close[j].d })
	var quoted []string
	for i, c := range close {
		if i == 3 {
			break
		}
		quoted = append(quoted, fmt.Sprintf("%q", c.name))
	}
	return " (did you mean " + strings.Join(quoted, " or ") + "?)"
}

// editDistance is the Levenshtein distance between a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// explainWidth is the width explain wraps descriptions at.
const explainWidth = 80

// write prints x as kubectl explain does.
func (s *schemaSet) write(w io.Writer, x *explained, recursive bool) {
	fmt.Fprintf(w, "KIND:     %s\n", x.kind.name)
	typ := s.typeOf(x.node)
	if len(x.path) > 0 {
		req := ""
		if x.required {
			req = " -required-"
		}
		fmt.Fprintf(w, "FIELD:    %s <%s>%s\n", strings.Join(x.path, "."), typ, req)
	}
	fmt.Fprintf(w, "\nDESCRIPTION:\n")
	desc := s.description(x.node)
	if desc == "" {
		desc = "(The schema does not describe it.)"
	}
	if len(x.path) == 0 && x.kind.note != "" {
		desc += " " + x.kind.note
	}
	for _, line := range wrapWords(desc, explainWidth-4) {
		fmt.Fprintf(w, "    %s\n", line)
	}
	if vs := s.values(x.node); len(vs) > 0 {
		fmt.Fprintf(w, "\nVALUES:\n    %s\n", strings.Join(vs, ", "))
	}
	fs := s.fieldsOf(x)
	if len(fs) == 0 {
		return
	}
	fmt.Fprintf(w, "\nFIELDS:\n")
	if recursive {
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		s.writeTree(tw, fs, 1, []string{s.target(x.node)})
		tw.Flush()
		return
	}
	for _, f := range fs {
		fmt.Fprintf(w, "  %s  %s\n", f.name, s.fieldType(f))
		for _, line := range wrapWords(firstLine(s.description(f.node)), explainWidth-6) {
			fmt.Fprintf(w, "      %s\n", line)
		}
	}
}

func (s *schemaSet) fieldType(f schemaField) string {
	t := "<" + s.typeOf(f.node) + ">"
	if f.required {
		t += " -required-"
	}
	return t
}

// writeTree prints fields fs at depth, and theirs below them; a schema
// already on the way down (onPath, by target) is not printed again.
func (s *schemaSet) writeTree(w io.Writer, fs []schemaField, depth int, onPath []string) {
	indent := strings.Repeat("  ", depth)
	for _, f := range fs {
		target := s.target(f.node)
		sub := s.fields(f.node)
		if len(sub) > 0 && slices.Contains(onPath, target) {
			fmt.Fprintf(w, "%s%s\t%s\t(the fields above, again)\n", indent, f.name, s.fieldType(f))
			continue
		}
		fmt.Fprintf(w, "%s%s\t%s\n", indent, f.name, s.fieldType(f))
		if len(sub) > 0 {
			s.writeTree(w, sub, depth+1, append(onPath, target))
		}
	}
}

// target is where the schema n refers to ends: the schema that gives its
// fields, for recognising recursion.
func (s *schemaSet) target(n schemaNode) string {
	for range maxSchemaDepth {
		r, ok := s.deref(n)
		if !ok {
			break
		}
		n = r
	}
	if items, ok := n.child("items"); ok {
		return s.target(items)
	}
	return n.loc()
}

// firstLine is the first sentence of a description: up to a full stop
// followed by a capital letter (not the dot of a name like example.test.).
func firstLine(d string) string {
	for i := 0; i+2 < len(d); i++ {
		if d[i] == '.' && d[i+1] == ' ' && 'A' <= d[i+2] && d[i+2] <= 'Z' {
			return d[:i+1]
		}
	}
	return d
}

// wrapWords cuts text into lines of at most width bytes, between words.
func wrapWords(text string, width int) []string {
	var lines []string
	line := ""
	for _, w := range strings.Fields(text) {
		if line != "" && len(line)+1+len(w) > width {
			lines = append(lines, line)
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += w
	}
	if line != "" {
		lines = append(lines, line)
	}
	return lines
}

// completeExplain completes explain's KIND[.FIELD]... from the schema.
func completeExplain(_ *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	const dir = cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace
	s, err := loadSchemas()
	if len(args) > 0 || err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var out []cobra.Completion
	i := strings.LastIndexByte(toComplete, '.')
	if i < 0 {
		for _, k := range explainKinds {
			if strings.HasPrefix(k.name, strings.ToLower(toComplete)) {
				root, _ := s.at(s.publisher, k.ptr)
				out = append(out, cobra.CompletionWithDesc(k.name, firstLine(s.description(root))))
			}
		}
		return out, dir
	}
	x, err := s.resolve(toComplete[:i])
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	for _, f := range s.fieldsOf(x) {
		if strings.HasPrefix(f.name, toComplete[i+1:]) {
			out = append(out, cobra.CompletionWithDesc(toComplete[:i+1]+f.name, firstLine(s.description(f.node))))
		}
	}
	return out, dir
}
