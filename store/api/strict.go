package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/grpc-config-dns/grpc-config-dns/store"
)

// A body's meaning must not depend on the decoder that reads it:
// encoding/json keeps the last of two copies of a key (others keep the
// first, or refuse), and takes "Metadata" or "SPEC" for the field it
// folds to. So, as kube-apiserver's strict decoding does, a body with a
// key twice in one object, or with a key that is one of the fields the
// API reads in another case, is refused (400) naming the key's JSON
// pointer. A spec is left to the publisher's validator, which refuses its
// duplicate keys (422, yaml-duplicate-key) and its misspelt fields as
// lint does.

// shape is what the API reads of a JSON value.
type shape struct {
	// fields are the keys read, by their exact names; nil for a value
	// whose keys are data (labels) or that is not read.
	fields map[string]*shape
	// opaque: another checker reads it whole (a spec).
	opaque bool
	// elem is what the API reads of each element of an array (nil: data).
	elem *shape
}

var (
	// data is a value whose keys are not fields: only checked for keys
	// given twice.
	data = &shape{}

	objectShape = &shape{fields: map[string]*shape{
		"apiVersion": data, "kind": data,
		"metadata": {fields: map[string]*shape{
			"name": data, "zone": data, "resourceVersion": data, "labels": data, "annotations": data,
		}},
		"spec": {opaque: true},
	}}

	// batchShape is a batch of services: a list of objects.
	batchShape = &shape{fields: map[string]*shape{"apiVersion": data, "kind": data, "items": {elem: objectShape}}}

	// deleteOptionsShape is what a DELETE reads of Kubernetes'
	// DeleteOptions.
	deleteOptionsShape = &shape{fields: map[string]*shape{
		"preconditions": {fields: map[string]*shape{"resourceVersion": data}},
	}}
)

// checkKeys checks the keys of body against sh. A body that is not JSON
// passes: decoding it then says what is wrong with it, which comes first.
func checkKeys(body []byte, sh *shape) *store.Error {
	k := keyChecker{dec: json.NewDecoder(bytes.NewReader(body))}
	k.dec.UseNumber()
	if err := k.walk(sh, "", 0); err != nil {
		return nil
	}
	return k.first
}

// maxDepth bounds the nesting walk follows, as encoding/json bounds its
// own (a body of 2 MiB could nest a million arrays).
const maxDepth = 10000

var errTooDeep = errors.New("nested too deep")

type keyChecker struct {
	dec   *json.Decoder
	first *store.Error // the first key refused
}

// walk reads the next value, at JSON pointer ptr, depth objects and
// arrays down; its error is the body's, not JSON or too deep.
func (k *keyChecker) walk(sh *shape, ptr string, depth int) error {
	if depth > maxDepth {
		return errTooDeep
	}
	if sh.opaque {
		var skip json.RawMessage
		return k.dec.Decode(&skip)
	}
	tok, err := k.dec.Token()
	if err != nil {
		return err
	}
	switch tok {
	case json.Delim('['):
		err = k.walkArray(sh, ptr, depth)
	case json.Delim('{'):
		err = k.walkObject(sh, ptr, depth)
	default:
		return nil // a scalar
	}
	if err != nil {
		return err
	}
	_, err = k.dec.Token() // the closing delimiter
	return err
}

// walkArray reads the elements of the array at ptr, whose '[' was read.
func (k *keyChecker) walkArray(sh *shape, ptr string, depth int) error {
	elem := data
	if sh.elem != nil {
		elem = sh.elem
	}
	for i := 0; k.dec.More(); i++ {
		if err := k.walk(elem, ptr+"/"+strconv.Itoa(i), depth+1); err != nil {
			return err
		}
	}
	return nil
}

// walkObject reads the members of the object at ptr, whose '{' was read,
// and notes the first key refused.
func (k *keyChecker) walkObject(sh *shape, ptr string, depth int) error {
	seen := map[string]bool{}
	for k.dec.More() {
		tok, err := k.dec.Token()
		if err != nil {
			return err
		}
		key, _ := tok.(string)
		at := ptr + "/" + pointerToken(key)
		child := data
		if f, ok := sh.fields[key]; ok {
			child = f
		}
		if k.first == nil {
			k.first = refusedKey(sh, seen, key, at)
		}
		seen[key] = true
		if err := k.walk(child, at, depth+1); err != nil {
			return err
		}
	}
	return nil
}

// refusedKey is the error of key, at JSON pointer at, in an object of
// shape sh whose keys before it are seen, or nil when the key is
// accepted.
func refusedKey(sh *shape, seen map[string]bool, key, at string) *store.Error {
	if seen[key] {
		return badBody("the key %q is given twice at %s in the body: decoders disagree on which copy counts, so the API takes neither; give it once", key, at)
	}
	if name := foldedField(sh.fields, key); name != "" && name != key {
		return badBody("the key %q at %s is not a field: field names are case-sensitive, and %q would be read as %q by some decoders and ignored by others; write %q", key, at, key, name, name)
	}
	return nil
}

// foldedField returns the field that key is, in its case or another
// (Unicode simple folding, as encoding/json matches), or "".
func foldedField(fields map[string]*shape, key string) string {
	if _, ok := fields[key]; ok {
		return key
	}
	for name := range fields {
		if strings.EqualFold(name, key) {
			return name
		}
	}
	return ""
}

// pointerToken escapes a key for a JSON pointer (RFC 6901).
func pointerToken(key string) string {
	return strings.ReplaceAll(strings.ReplaceAll(key, "~", "~0"), "/", "~1")
}

func badBody(format string, args ...any) *store.Error {
	return &store.Error{Code: http.StatusBadRequest, Reason: store.ReasonBadRequest, Message: fmt.Sprintf(format, args...)}
}
