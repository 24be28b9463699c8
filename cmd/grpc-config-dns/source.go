package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/grpc-config-dns/grpc-config-dns/store"
)

// sourceAnnotation is the annotation the CLI puts on each object it
// writes from a file of objects: FILE:LINE, the file as it was named
// ("-" for stdin) and the line the object starts on, so that the
// object's GET and history say where it came from. It says where the
// object's last write came from and is not part of what the object is:
// an object that differs from the one stored only by it is unchanged,
// and its write keeps the stored annotation (see sameContent and put).
const sourceAnnotation = "grpc-config-dns/source"

// sourceFile is a file the CLI read objects from: its name, as
// diagnostics give it, and its text; and, once a diagnostic of the
// server has to be placed in it, the YAML nodes of its objects and where
// its lines start. The nodes are read again then, so that a file whose
// objects are all accepted costs no more than before.
type sourceFile struct {
	name string
	text []byte
	// config: the file is a publisher config, whose objects are the
	// entries of its zones:, their policies: and services:.
	config bool
	read   bool
	items  []*yaml.Node // the objects of an objects file, in order
	root   *yaml.Node   // a config's top mapping
	lines  []int        // the offsets where lines start
}

// objectSource is where one object came from: its file, and which of
// the file's objects it is.
type objectSource struct {
	file *sourceFile
	// item is the index of the object among those of an objects file,
	// and line the line it starts on.
	item, line int
	// zone, list and index locate an object of a config: zones[zone], or
	// its policies[index] or services[index] (list "policies" or
	// "services").
	zone  int
	list  string
	index int
	// spec is the spec sent, in whose text the server's lines and
	// columns fall.
	spec []byte
}

// eachObjectNode calls fn with the node of each object of text (YAML
// documents, a JSON object or a JSON list, an object with items), in
// order, with the index of its document. isConfig is set, and fn not
// called, when the first document is a publisher config (zones: …).
func eachObjectNode(text []byte, fn func(doc int, n *yaml.Node) error) (isConfig bool, err error) {
	dec := yaml.NewDecoder(bytes.NewReader(text))
	for i := 0; ; i++ {
		var doc yaml.Node
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return false, nil
		}
		if err != nil {
			return false, &docError{i, err}
		}
		root := &doc
		if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
			root = root.Content[0]
		}
		if root.Kind == yaml.ScalarNode && root.Tag == "!!null" {
			continue
		}
		items, isConfig := documentItems(root, i)
		if isConfig {
			return true, nil
		}
		for _, it := range items {
			if err := fn(i, it); err != nil {
				return false, err
			}
		}
	}
}

// docError is an error of document doc (0 the first).
type docError struct {
	doc int
	err error
}

func (e *docError) Error() string { return "document " + strconv.Itoa(e.doc+1) + ": " + e.err.Error() }

// readObjects reads the objects of text, read from file arg ("-" for
// stdin), as parseObjects does, and puts on each the source annotation
// of where it starts; it returns with each where it came from. isConfig
// is set when text is a publisher config.
func readObjects(arg string, text []byte) ([]*store.Object, []*objectSource, bool, error) {
	objs, lines, isConfig, err := parseObjects(text)
	if err != nil || isConfig {
		return nil, nil, isConfig, err
	}
	f := &sourceFile{name: displayName(arg), text: text}
	srcs := make([]*objectSource, len(objs))
	for i, o := range objs {
		a := make(map[string]string, len(o.Metadata.Annotations)+1)
		for k, v := range o.Metadata.Annotations {
			a[k] = v
		}
		a[sourceAnnotation] = arg + ":" + strconv.Itoa(lines[i])
		o.Metadata.Annotations = a
		srcs[i] = &objectSource{file: f, item: i, line: lines[i], spec: o.Spec}
	}
	return objs, srcs, false, nil
}

// configSource is the publisher config text, read from file arg, as the
// source of the objects it holds (model.SplitSpecs). Its zone and entry
// methods, on a nil sourceFile, are nil: no source.
func configSource(arg string, text []byte) *sourceFile {
	return &sourceFile{name: displayName(arg), text: text, config: true}
}

// zone is the source of the config's zone i, whose spec is spec.
func (f *sourceFile) zone(i int, spec []byte) *objectSource {
	if f == nil {
		return nil
	}
	return &objectSource{file: f, zone: i, spec: spec}
}

// entry is the source of item i of the policies or services (list) of
// the config's zone zone, whose spec is spec.
func (f *sourceFile) entry(zone int, list string, i int, spec []byte) *objectSource {
	if f == nil {
		return nil
	}
	return &objectSource{file: f, zone: zone, list: list, index: i, spec: spec}
}

// load reads the nodes of f's objects, once.
func (f *sourceFile) load() {
	if f.read {
		return
	}
	f.read = true
	f.lines = append(f.lines, 0)
	for i, c := range f.text {
		if c == '\n' {
			f.lines = append(f.lines, i+1)
		}
	}
	if f.config {
		var doc yaml.Node
		if yaml.NewDecoder(bytes.NewReader(f.text)).Decode(&doc) == nil && len(doc.Content) == 1 {
			f.root = doc.Content[0]
		}
		return
	}
	eachObjectNode(f.text, func(_ int, n *yaml.Node) error {
		f.items = append(f.items, n)
		return nil
	})
}

// node returns the node of s's object in its file, and for an object of
// a config the keys of the entry that are the object's metadata.name and
// metadata.labels; nil when it is not found.
func (s *objectSource) node() (n *yaml.Node, nameKey string) {
	f := s.file
	f.load()
	if !f.config {
		if s.item < len(f.items) {
			return f.items[s.item], ""
		}
		return nil, ""
	}
	zones := index(member(f.root, "zones"), s.zone)
	if s.list == "" {
		return zones, "origin"
	}
	return index(member(zones, s.list), s.index), "name"
}

// place returns where, in its file, diagnostic d of the server about the
// object of s lies: the value at d's pointer (relative to the object),
// its key when the server points at the key (an unknown field), the
// nearest value there is when the pointer names something absent or goes
// into a string, as line and column (in bytes, as lint's).
func (s *objectSource) place(d store.Diagnostic) (line, col int, ok bool) {
	n, nameKey := s.node()
	if n == nil {
		return 0, 0, false
	}
	toks := pointerTokens(d.Path)
	if nameKey != "" {
		// A config's entry holds the spec's members, and the metadata
		// under their own keys.
		switch {
		case len(toks) > 0 && toks[0] == "spec":
			toks = toks[1:]
		case len(toks) > 1 && toks[0] == "metadata" && toks[1] == "name":
			toks = []string{nameKey}
		case len(toks) > 1 && toks[0] == "metadata" && toks[1] == "labels":
			toks = toks[1:]
		default:
			toks = nil
		}
	}
	at, key, whole := resolve(n, toks)
	if whole && key != nil && len(toks) > 0 && pointsAtKey(d, s.spec, toks[len(toks)-1]) {
		at = key
	}
	line, col = s.file.column(at.Line, at.Column)
	return line, col, line > 0
}

// column converts yaml.v3's position (its column counts characters) to
// lint's (a column counts bytes).
func (f *sourceFile) column(line, col int) (int, int) {
	if line < 1 || line > len(f.lines) {
		return 0, 0
	}
	start := f.lines[line-1]
	off := start
	for k := 1; k < col && off < len(f.text) && f.text[off] != '\n'; k++ {
		_, size := utf8.DecodeRune(f.text[off:])
		off += size
	}
	return line, off - start + 1
}

// pointerTokens splits a JSON pointer into its unescaped tokens.
func pointerTokens(p string) []string {
	if p == "" {
		return nil
	}
	toks := strings.Split(strings.TrimPrefix(p, "/"), "/")
	for i, t := range toks {
		toks[i] = strings.ReplaceAll(strings.ReplaceAll(t, "~1", "/"), "~0", "~")
	}
	return toks
}

// resolve follows toks from n, as model.NodeJSON converts it (aliases
// and merge keys followed), and returns the value found, as written,
// with its key when it is a mapping's member; whole is false when a
// token named nothing, and at is then the nearest value on the way (the
// string of a value that holds JSON, the mapping a member is missing
// from).
func resolve(n *yaml.Node, toks []string) (at, key *yaml.Node, whole bool) {
	at = n
	for _, tok := range toks {
		v := deref(at)
		var next, k *yaml.Node
		switch v.Kind {
		case yaml.MappingNode:
			k, next = memberPair(v, tok, 0)
		case yaml.SequenceNode:
			if i, err := strconv.Atoi(tok); err == nil && i >= 0 && i < len(v.Content) && strconv.Itoa(i) == tok {
				next = v.Content[i]
			}
		}
		if next == nil {
			return at, nil, false
		}
		at, key = next, k
	}
	return at, key, true
}

// deref follows aliases.
func deref(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && i < 64; i++ {
		n = n.Alias
	}
	return n
}

// member is the value of key name of mapping n (nil when n is none, or
// has no such key).
func member(n *yaml.Node, name string) *yaml.Node {
	n = deref(n)
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	_, v := memberPair(n, name, 0)
	return deref(v)
}

// index is element i of sequence n (nil when there is none).
func index(n *yaml.Node, i int) *yaml.Node {
	n = deref(n)
	if n == nil || n.Kind != yaml.SequenceNode || i < 0 || i >= len(n.Content) {
		return nil
	}
	return deref(n.Content[i])
}

// memberPair finds the key and value of member name of mapping n: a key
// written in n, else one merged into it (<<: *anchor, or a list of
// them, the first that has it), as model reads merge keys.
func memberPair(n *yaml.Node, name string, depth int) (k, v *yaml.Node) {
	if depth > 64 {
		return nil, nil
	}
	var merges []*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		switch key := n.Content[i]; {
		case key.Kind == yaml.ScalarNode && key.Tag == "!!merge":
			merges = append(merges, n.Content[i+1])
		case key.Value == name:
			return key, n.Content[i+1]
		}
	}
	for _, m := range merges {
		m = deref(m)
		if m == nil {
			continue
		}
		srcs := []*yaml.Node{m}
		if m.Kind == yaml.SequenceNode {
			srcs = m.Content
		}
		for _, src := range srcs {
			if src = deref(src); src != nil && src.Kind == yaml.MappingNode {
				if k, v := memberPair(src, name, depth+1); k != nil {
					return k, v
				}
			}
		}
	}
	return nil, nil
}

// pointsAtKey reports whether the server's position of d, a line and
// column in spec, the spec it was sent, is the key name of a member (an
// unknown field is placed there, as lint places it) rather than a value.
func pointsAtKey(d store.Diagnostic, spec []byte, name string) bool {
	if d.Line < 1 || d.Column < 1 || !strings.HasPrefix(d.Path, "/spec/") {
		return false
	}
	var buf bytes.Buffer
	if json.Compact(&buf, spec) != nil {
		return false
	}
	text := buf.Bytes() // what the server validated: the spec compacted
	off := 0
	for l := 1; l < d.Line; l++ {
		i := bytes.IndexByte(text[off:], '\n')
		if i < 0 {
			return false
		}
		off += i + 1
	}
	off += d.Column - 1
	if off >= len(text) || text[off] != '"' {
		return false
	}
	end := off + 1
	for ; end < len(text) && text[end] != '"'; end++ {
		if text[end] == '\\' {
			end++
		}
	}
	var key string
	if end >= len(text) || json.Unmarshal(text[off:end+1], &key) != nil || key != name {
		return false
	}
	rest := bytes.TrimLeft(text[end+1:], " \t\r\n")
	return len(rest) > 0 && rest[0] == ':'
}

// each says that every diagnostic of a refusal of s's object is about
// it (failFrom).
func (s *objectSource) each(d store.Diagnostic) (*objectSource, store.Diagnostic) {
	return s, d
}

// at is where s's object starts in file, as its messages name it:
// FILE:LINE, or file for an object of a config.
func (s *objectSource) at(file string) string {
	if s.line == 0 {
		return file
	}
	return file + ":" + strconv.Itoa(s.line)
}
