package serviceconfig

import (
	"bytes"
	_ "embed"
	"errors"
	"net/url"
	"strconv"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/grpc-config-dns/grpc-config-dns/serviceconfig/internal/jtree"
)

// schemaJSON is the JSON Schema (draft 2020-12) of a choice list and of a
// service config, for editors and other tools. Lint runs it as the first
// layer of validation; the Go rules add what a schema cannot say.
//
//go:embed schema/grpc-config.schema.json
var schemaJSON []byte

const schemaURL = "https://github.com/grpc-config-dns/grpc-config-dns/serviceconfig/schema/grpc-config.schema.json"

type compiledSchema struct {
	choices, config *jsonschema.Schema
	doc             any // the schema itself, to read x-code annotations
}

var loadSchema = sync.OnceValues(func() (*compiledSchema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schemaJSON))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(schemaURL, doc); err != nil {
		return nil, err
	}
	s := &compiledSchema{doc: doc}
	if s.choices, err = c.Compile(schemaURL + "#/$defs/choiceList"); err != nil {
		return nil, err
	}
	if s.config, err = c.Compile(schemaURL + "#/$defs/serviceConfigDocument"); err != nil {
		return nil, err
	}
	return s, nil
})

var schemaPrinter = message.NewPrinter(language.English)

// schemaDiagnostics validates the tree against the schema for kind
// (KindChoices or KindServiceConfig).
func schemaDiagnostics(t *jtree.Tree, k Kind) Diagnostics {
	s, err := loadSchema()
	if err != nil {
		// The schema is embedded and tested; failing to compile it is a bug.
		panic("serviceconfig: embedded JSON schema does not compile: " + err.Error())
	}
	sch := s.choices
	if k == KindServiceConfig {
		sch = s.config
	}
	err = sch.Validate(dropNulls(t.Any(0)))
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return nil
	}
	var out Diagnostics
	s.collect(t, ve, &out)
	return out
}

// dropNulls removes the object members whose value is null: proto3 JSON
// reads them as absent, and the Go rules say what clients do with them.
func dropNulls(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if e == nil {
				delete(x, k)
			} else {
				x[k] = dropNulls(e)
			}
		}
	case []any:
		for i, e := range x {
			x[i] = dropNulls(e)
		}
	}
	return v
}

func (s *compiledSchema) collect(t *jtree.Tree, e *jsonschema.ValidationError, out *Diagnostics) {
	switch k := e.ErrorKind.(type) {
	case *kind.Schema, *kind.Group, *kind.AllOf, *kind.Reference:
		for _, c := range e.Causes {
			s.collect(t, c, out)
		}
		return
	case *kind.AdditionalProperties:
		for _, p := range k.Properties {
			loc := append(append([]string(nil), e.InstanceLocation...), p)
			s.add(t, e, loc, true, out)
		}
		return
	}
	// anyOf, oneOf, not and every leaf: one diagnostic for this value.
	s.add(t, e, e.InstanceLocation, false, out)
}

func (s *compiledSchema) add(t *jtree.Tree, e *jsonschema.ValidationError, loc []string, atKey bool, out *Diagnostics) {
	kw := e.ErrorKind.KeywordPath()
	if _, ok := e.ErrorKind.(*kind.Not); ok {
		kw = []string{"not"} // the library reports no keyword for not
	}
	code := s.codeFor(e.SchemaURL, kw)
	node := nodeAt(t, loc, atKey)
	off := -1
	if node >= 0 {
		off = int(t.Nodes[node].Start)
	}
	*out = append(*out, Diagnostic{
		Severity: code.severity(),
		Code:     code.String(),
		Message:  e.ErrorKind.LocalizedString(schemaPrinter) + " (JSON Schema)",
		Path:     pointerOf(loc),
		Offset:   off,
	})
}

// codeFor finds the diagnostic code of a failure: x-codes[keyword] or
// x-code on the failing subschema, or on the nearest enclosing one.
func (s *compiledSchema) codeFor(schemaURL string, kw []string) diagCode {
	_, frag, _ := strings.Cut(schemaURL, "#")
	frag, _ = url.PathUnescape(frag)
	var segs []string
	if frag != "" {
		for _, p := range strings.Split(strings.TrimPrefix(frag, "/"), "/") {
			segs = append(segs, strings.ReplaceAll(strings.ReplaceAll(p, "~1", "/"), "~0", "~"))
		}
	}
	keyword := ""
	if len(kw) > 0 {
		keyword = kw[0]
	}
	for n := len(segs); n >= 0; n-- {
		obj, ok := lookupPointer(s.doc, segs[:n]).(map[string]any)
		if !ok {
			continue
		}
		// x-codes speaks of the keywords of its own subschema only.
		if xcodes, ok := obj["x-codes"].(map[string]any); ok && n == len(segs) {
			if x, ok := xcodes[keyword].(string); ok {
				if c, ok := codeByID[x]; ok {
					return c
				}
			}
		}
		if x, ok := obj["x-code"].(string); ok {
			if c, ok := codeByID[x]; ok {
				return c
			}
		}
	}
	// The root has an x-code, and every x-code is registered
	// (TestSchema): never reached.
	return codeWrongType
}

func lookupPointer(doc any, segs []string) any {
	for _, s := range segs {
		switch v := doc.(type) {
		case map[string]any:
			doc = v[s]
		case []any:
			i, err := strconv.Atoi(s)
			if err != nil || i < 0 || i >= len(v) {
				return nil
			}
			doc = v[i]
		default:
			return nil
		}
	}
	return doc
}

// nodeAt returns the node at instance location loc (the key node of its
// last member when atKey is set), or -1.
func nodeAt(t *jtree.Tree, loc []string, atKey bool) int32 {
	n := int32(0)
	for i, s := range loc {
		switch t.Nodes[n].Kind {
		case jtree.Object:
			v := t.Get(n, s)
			if v < 0 {
				return -1
			}
			if atKey && i == len(loc)-1 {
				return keyNodeOf(t, n, v)
			}
			n = v
		case jtree.Array:
			idx, err := strconv.Atoi(s)
			if err != nil {
				return -1
			}
			e := t.Nodes[n].First
			for ; idx > 0 && e >= 0; idx-- {
				e = t.Nodes[e].Next
			}
			if e < 0 {
				return -1
			}
			n = e
		default:
			return -1
		}
	}
	return n
}

func pointerOf(loc []string) string {
	var b strings.Builder
	for _, s := range loc {
		b.WriteByte('/')
		b.WriteString(strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1"))
	}
	return b.String()
}

// covers reports whether diagnostic a speaks of the same problem as b:
// the same code at the same value, or at a value inside the other.
func covers(a, b Diagnostic) bool {
	if a.Code != b.Code {
		return false
	}
	return a.Path == b.Path || strings.HasPrefix(a.Path, b.Path+"/") || strings.HasPrefix(b.Path, a.Path+"/")
}

// mergeSchema adds the schema's findings that the Go rules did not make.
// The Go rules say the same things more precisely, so their message wins.
func mergeSchema(goDiags, schema Diagnostics) Diagnostics {
	out := goDiags
next:
	for _, s := range schema {
		for _, g := range goDiags {
			if covers(g, s) {
				continue next
			}
		}
		out = append(out, s)
	}
	return out
}
