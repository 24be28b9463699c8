package serviceconfig

import (
	"fmt"
	"strings"

	"github.com/grpc-config-dns/grpc-config-dns/internal/jtree"
)

var headerExtractionFields = []string{"payloadFieldName", "delimiterCharacter", "numElementsToKeep", "headerName"}

// validateHeaderExtraction checks the per-method headerExtraction list of
// the "metadata from request payload" design (our extension, docs/headers.md).
func validateHeaderExtraction(c *checker, v int32) {
	if !c.want(v, jtree.Array, codeHeaderExtraction, "headerExtraction") {
		return
	}
	headers := map[string]bool{}
	c.elements(v, func(_ int, e int32) { validateHeaderExtractionRule(c, e, headers) })
}

// validateHeaderExtractionRule checks one rule of a headerExtraction list.
// headers holds the header names of the method's rules before it, which
// this one's must differ from.
func validateHeaderExtractionRule(c *checker, e int32, headers map[string]bool) {
	t := c.t
	if !c.want(e, jtree.Object, codeHeaderExtraction, "a headerExtraction rule") {
		return
	}
	seen := map[string]bool{}
	c.members(e, func(k, val int32) {
		name := t.Str(k)
		switch name {
		case "payloadFieldName":
			if c.want(val, jtree.String, codeHeaderExtraction, name) {
				if err := checkFieldPath(t.Str(val)); err != nil {
					c.report(val, codeHeaderExtraction, "payloadFieldName: %v", err)
				}
			}
		case "delimiterCharacter":
			checkDelimiterCharacter(c, val)
		case "numElementsToKeep":
			n, ok := t.Int(val)
			if c.kind(val) != jtree.Number || !ok || n < 1 {
				c.report(val, codeHeaderExtraction, "numElementsToKeep must be a whole number of at least 1, not %s", describeKind(t, val))
			}
		case "headerName":
			checkExtractedHeaderName(c, val, headers)
		default:
			c.unknownField(k, codeUnknownField, "a headerExtraction rule", headerExtractionFields)
			return
		}
		seen[name] = true
	})
	for _, f := range headerExtractionFields {
		if !seen[f] {
			c.report(e, codeHeaderExtraction, "headerExtraction rule is missing %s; a rule needs payloadFieldName, delimiterCharacter, numElementsToKeep and headerName", f)
		}
	}
}

// checkDelimiterCharacter checks a rule's delimiterCharacter, val.
func checkDelimiterCharacter(c *checker, val int32) {
	if !c.want(val, jtree.String, codeHeaderExtraction, "delimiterCharacter") {
		return
	}
	s := c.t.Str(val)
	// Printable only: the delimiter can end up in the header value, where
	// gRPC allows printable ASCII alone.
	if len(s) != 1 || s[0] < 0x20 || s[0] > 0x7e {
		c.report(val, codeHeaderExtraction, "delimiterCharacter must be exactly one printable ASCII character, like \"/\", not %s", c.t.Raw(val))
	}
}

// checkExtractedHeaderName checks a rule's headerName, val, and adds it to
// headers, the names of the method's rules so far.
func checkExtractedHeaderName(c *checker, val int32, headers map[string]bool) {
	if !c.want(val, jtree.String, codeHeaderName, "headerName") {
		return
	}
	h := c.t.Str(val)
	if err := checkHeaderName(h); err != nil {
		c.report(val, codeHeaderName, "headerName: %v", err)
	} else if headers[h] {
		c.report(val, codeHeaderNameDuplicate, "header %q is extracted by two rules of this method; every headerName must be unique", h)
	}
	headers[h] = true
}

// checkFieldPath checks a payloadFieldName: dot-separated protobuf field
// names, like "resource.id".
func checkFieldPath(path string) error {
	if path == "" {
		return fmt.Errorf("the field path is empty; name a string field, like \"resource.id\"")
	}
	for i, part := range strings.Split(path, ".") {
		if part == "" {
			return fmt.Errorf("%q has an empty element at position %d; separate field names with single dots", path, i+1)
		}
		for j := 0; j < len(part); j++ {
			ch := part[j]
			letter := ch == '_' || ('a' <= ch && ch <= 'z') || ('A' <= ch && ch <= 'Z')
			if !letter && (j == 0 || ch < '0' || ch > '9') {
				return fmt.Errorf("%q: %q is not a protobuf field name (letters, digits and '_', not starting with a digit)", path, part)
			}
		}
	}
	return nil
}

// reservedHeaders are set by gRPC or HTTP/2 themselves; a rule may not
// override them.
var reservedHeaders = map[string]bool{
	"content-type": true, "te": true, "user-agent": true, "host": true,
	"connection": true, "keep-alive": true, "proxy-connection": true,
	"transfer-encoding": true, "upgrade": true,
}

// checkHeaderName checks that h can be a header added by a headerExtraction
// rule: a valid, lower-case gRPC metadata key, ASCII-valued (not -bin), and
// not one that gRPC or HTTP/2 reserves.
func checkHeaderName(h string) error {
	if h == "" {
		return fmt.Errorf("the header name is empty")
	}
	if strings.HasPrefix(h, ":") {
		return fmt.Errorf("%q is an HTTP/2 pseudo-header, which applications may not set", h)
	}
	if err := checkMetadataKeyBytes(h); err != nil {
		return err
	}
	if strings.HasSuffix(h, "-bin") {
		return fmt.Errorf("%q ends in -bin, which marks binary metadata; extracted values are text, so choose another name", h)
	}
	if strings.HasPrefix(h, "grpc-") {
		return fmt.Errorf("%q starts with grpc-, which gRPC reserves for itself", h)
	}
	if reservedHeaders[h] {
		return fmt.Errorf("%q is set by gRPC or HTTP/2 and cannot be overridden", h)
	}
	return nil
}

// checkMetadataKeyBytes checks that h holds only the bytes of a gRPC
// metadata key, lower-case.
func checkMetadataKeyBytes(h string) error {
	for i := 0; i < len(h); i++ {
		ch := h[i]
		if 'A' <= ch && ch <= 'Z' {
			return fmt.Errorf("%q must be lower-case: write %q", h, strings.ToLower(h))
		}
		if !(('a' <= ch && ch <= 'z') || ('0' <= ch && ch <= '9') || ch == '-' || ch == '_' || ch == '.') {
			return fmt.Errorf("%q has %q: gRPC metadata keys hold only a-z, 0-9, '-', '_' and '.'", h, ch)
		}
	}
	return nil
}
