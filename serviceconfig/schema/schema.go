// Package schema holds the JSON Schemas of this project, for editors and
// other tools, and is the first layer of serviceconfig.Lint.
//
// ServiceConfig (grpc-config.schema.json, draft 2020-12) describes a gRFC
// A2 choice list and a gRPC service config. Importing this package, even
// as
//
//	import _ "github.com/grpc-config-dns/grpc-config-dns/serviceconfig/schema"
//
// makes serviceconfig.Lint run it before its Go rules, as the CLI does.
// Package serviceconfig does not import it, so that a gRPC client using
// the resolver does not carry a JSON Schema validator: the Go rules say
// everything the schema says (a test checks it over the whole corpus).
package schema

import (
	"bytes"
	_ "embed"
	"errors"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/grpc-config-dns/grpc-config-dns/serviceconfig/internal/schemalayer"
)

// ServiceConfig is the JSON Schema of a choice list and of a service
// config; its $id is ServiceConfigID.
//
//go:embed grpc-config.schema.json
var ServiceConfig []byte

// ServiceConfigID is the $id of ServiceConfig, where editors find it.
const ServiceConfigID = "https://raw.githubusercontent.com/grpc-config-dns/grpc-config-dns/main/serviceconfig/schema/grpc-config.schema.json"

func init() { schemalayer.Validate = validate }

type compiled struct {
	choices, config *jsonschema.Schema
	doc             any // the schema itself, to read x-code annotations
}

var load = sync.OnceValues(func() (*compiled, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(ServiceConfig))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(ServiceConfigID, doc); err != nil {
		return nil, err
	}
	s := &compiled{doc: doc}
	if s.choices, err = c.Compile(ServiceConfigID + "#/$defs/choiceList"); err != nil {
		return nil, err
	}
	if s.config, err = c.Compile(ServiceConfigID + "#/$defs/serviceConfigDocument"); err != nil {
		return nil, err
	}
	return s, nil
})

var printer = sync.OnceValue(func() *message.Printer { return message.NewPrinter(language.English) })

// validate is schemalayer.Validate.
func validate(instance any, choices bool) []schemalayer.Finding {
	s, err := load()
	if err != nil {
		// The schema is embedded and tested; failing to compile it is a bug.
		panic("serviceconfig/schema: the embedded JSON schema does not compile: " + err.Error())
	}
	sch := s.config
	if choices {
		sch = s.choices
	}
	var ve *jsonschema.ValidationError
	if !errors.As(sch.Validate(instance), &ve) {
		return nil
	}
	var out []schemalayer.Finding
	s.collect(ve, map[[2]string]string{}, &out)
	return out
}

func (s *compiled) collect(e *jsonschema.ValidationError, codes map[[2]string]string, out *[]schemalayer.Finding) {
	switch k := e.ErrorKind.(type) {
	case *kind.Schema, *kind.Group, *kind.AllOf, *kind.Reference:
		for _, c := range e.Causes {
			s.collect(c, codes, out)
		}
		return
	case *kind.AdditionalProperties:
		// The library lists them in map order: sorted, the findings and
		// the message that names them all are the same at every run.
		slices.Sort(k.Properties)
		for _, p := range k.Properties {
			loc := append(append([]string(nil), e.InstanceLocation...), p)
			s.add(e, loc, true, codes, out)
		}
		return
	}
	// anyOf, oneOf, not and every leaf: one finding for this value.
	s.add(e, e.InstanceLocation, false, codes, out)
}

func (s *compiled) add(e *jsonschema.ValidationError, loc []string, atKey bool, codes map[[2]string]string, out *[]schemalayer.Finding) {
	kw := e.ErrorKind.KeywordPath()
	if _, ok := e.ErrorKind.(*kind.Not); ok {
		kw = []string{"not"} // the library reports no keyword for not
	}
	keyword := ""
	if len(kw) > 0 {
		keyword = kw[0]
	}
	// Many values fail the same subschema: find its code once.
	key := [2]string{e.SchemaURL, keyword}
	code, ok := codes[key]
	if !ok {
		code = s.codeFor(e.SchemaURL, keyword)
		codes[key] = code
	}
	*out = append(*out, schemalayer.Finding{Code: code, Loc: loc, AtKey: atKey,
		Message: func() string { return e.ErrorKind.LocalizedString(printer()) }})
}

// codeFor finds the diagnostic code of a failure: x-codes[keyword] or
// x-code on the failing subschema, or on the nearest enclosing one.
func (s *compiled) codeFor(schemaURL string, keyword string) string {
	_, frag, _ := strings.Cut(schemaURL, "#")
	frag, _ = url.PathUnescape(frag)
	var segs []string
	if frag != "" {
		for _, p := range strings.Split(strings.TrimPrefix(frag, "/"), "/") {
			segs = append(segs, strings.ReplaceAll(strings.ReplaceAll(p, "~1", "/"), "~0", "~"))
		}
	}
	for n := len(segs); n >= 0; n-- {
		obj, ok := lookupPointer(s.doc, segs[:n]).(map[string]any)
		if !ok {
			continue
		}
		// x-codes speaks of the keywords of its own subschema only.
		if xcodes, ok := obj["x-codes"].(map[string]any); ok && n == len(segs) {
			if x, ok := xcodes[keyword].(string); ok {
				return x
			}
		}
		if x, ok := obj["x-code"].(string); ok {
			return x
		}
	}
	// The root has an x-code (TestSchemaCodes): never reached.
	return "wrong-type"
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

// Codes returns every x-code and x-codes value of the service config
// schema, for tests that check them against serviceconfig's codes.
func Codes() ([]string, error) {
	s, err := load()
	if err != nil {
		return nil, err
	}
	var out []string
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if c, ok := v["x-code"].(string); ok {
				out = append(out, c)
			}
			if cs, ok := v["x-codes"].(map[string]any); ok {
				for _, c := range cs {
					if c, ok := c.(string); ok {
						out = append(out, c)
					}
				}
			}
			for _, x := range v {
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	walk(s.doc)
	return out, nil
}
