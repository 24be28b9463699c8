package serviceconfig

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/grpc-config-dns/grpc-config-dns/internal/jtree"
	"github.com/grpc-config-dns/grpc-config-dns/serviceconfig/internal/schemalayer"
)

// The JSON Schema (package serviceconfig/schema) is the first layer of
// Lint when a program links it in; this package does not import it, so
// that clients of the resolver do not carry a schema validator (see
// package schemalayer). Its findings are merged with those of the Go
// rules, which say the same things more precisely.

// schemaFinding is one failure of the schema, before its message is
// built: lint lists at most MaxDiagnostics, and an input can fail the
// schema at every value.
type schemaFinding struct {
	code  diagCode
	loc   []string
	atKey bool
	path  string
	msg   func() string
}

// schemaFindings validates the tree against the schema for kind
// (KindChoices or KindServiceConfig), when the schema layer is linked in.
func schemaFindings(t *jtree.Tree, k Kind) []schemaFinding {
	validate := schemalayer.Validate
	if validate == nil {
		return nil
	}
	var out []schemaFinding
	for _, f := range validate(dropNulls(schemaInstance(t, 0)), k == KindChoices) {
		code, ok := codeByID()[f.Code]
		if !ok {
			// Every x-code is registered (TestSchemaCodes).
			code = codeWrongType
		}
		out = append(out, schemaFinding{code: code, loc: f.Loc, atKey: f.AtKey, path: pointerOf(f.Loc), msg: f.Message})
	}
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

// schemaDiagnostics returns every finding of the schema as a diagnostic.
func schemaDiagnostics(t *jtree.Tree, k Kind) Diagnostics {
	var out Diagnostics
	for _, f := range schemaFindings(t, k) {
		out = append(out, f.diagnostic(t))
	}
	return out
}

func (f *schemaFinding) diagnostic(t *jtree.Tree) Diagnostic {
	node := nodeAt(t, f.loc, f.atKey)
	off := -1
	if node >= 0 {
		off = int(t.Nodes[node].Start)
	}
	return Diagnostic{
		Severity: f.code.severity(),
		Code:     f.code.String(),
		Message:  f.msg() + " (JSON Schema)",
		Path:     f.path,
		Offset:   off,
	}
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
// Messages are built for the first MaxDiagnostics findings of each
// severity; the rest are counted.
func mergeSchema(t *jtree.Tree, goDiags Diagnostics, findings []schemaFinding) Diagnostics {
	// A finding is covered by a Go diagnostic of its code at its value, at
	// a value inside it, or at one around it (see covers): index the Go
	// diagnostics' paths and their ancestors, so that the check costs the
	// depth of a path, not the number of diagnostics.
	type codePath struct{ code, path string }
	at := make(map[codePath]bool, len(goDiags))
	around := make(map[codePath]bool, len(goDiags))
	for _, g := range goDiags {
		at[codePath{g.Code, g.Path}] = true
		if g.Code == codeFieldCase.String() {
			// A name in another case than a field's is unknown to the
			// spec: field-case is the one diagnostic of it.
			at[codePath{codeUnknownField.String(), g.Path}] = true
		}
		for p := g.Path; ; {
			i := strings.LastIndexByte(p, '/')
			if i < 0 {
				break
			}
			p = p[:i]
			around[codePath{g.Code, p}] = true
		}
	}
	covered := func(f *schemaFinding) bool {
		if around[codePath{f.code.String(), f.path}] {
			return true
		}
		for p := f.path; ; {
			if at[codePath{f.code.String(), p}] {
				return true
			}
			i := strings.LastIndexByte(p, '/')
			if i < 0 {
				return false
			}
			p = p[:i]
		}
	}
	out := goDiags
	var shown, more [2]int
	for i := range findings {
		f := &findings[i]
		if covered(f) {
			continue
		}
		sev := f.code.severity() - Error
		if shown[sev] >= MaxDiagnostics {
			more[sev]++
			continue
		}
		shown[sev]++
		out = append(out, f.diagnostic(t))
	}
	if more[0]+more[1] > 0 {
		out = append(out, Omitted(more[0], more[1]))
	}
	return out
}

// schemaInstance converts node i to the values the schema library takes,
// as jtree's Any does, but with every long number replaced by a short one
// the schema judges alike (see schemaNumber): the library reads numbers
// as big.Rat, and a number of a million digits costs it seconds.
func schemaInstance(t *jtree.Tree, i int32) any {
	n := &t.Nodes[i]
	switch n.Kind {
	case jtree.Number:
		return json.Number(schemaNumber(t.Raw(i)))
	case jtree.Array:
		out := make([]any, 0, n.Len)
		for e := n.First; e >= 0; e = t.Nodes[e].Next {
			out = append(out, schemaInstance(t, e))
		}
		return out
	case jtree.Object:
		out := make(map[string]any, n.Len)
		for k := n.First; k >= 0; {
			v := t.Nodes[k].Next
			out[t.Str(k)] = schemaInstance(t, v)
			k = t.Nodes[v].Next
		}
		return out
	}
	return t.Any(i)
}

// maxSchemaNumber is the longest number literal given to the schema as
// written. Longer ones carry more digits than any field can use.
const maxSchemaNumber = 64

// schemaNumber returns raw, a JSON number, or when it is long a short
// number with the same sign, the same integer-ness, and the same order
// with respect to every integer of magnitude below 1e30, which covers
// every bound the schema sets: a stand-in for the checks of "type":
// "integer", minimum, maximum and exclusiveMinimum, made in time linear in
// the length of raw.
func schemaNumber(raw []byte) string {
	if len(raw) <= maxSchemaNumber {
		return string(raw)
	}
	return parseDecimal(raw).standIn()
}

// decimal is a JSON number in parts: its sign, integer and fraction
// digits, and exponent, saturated: beyond ±1e9 the value is out of every
// range anyway.
type decimal struct {
	neg           bool
	intPart, frac []byte
	exp           int
}

// parseDecimal splits a JSON number into its parts.
func parseDecimal(s []byte) decimal {
	var d decimal
	if d.neg = s[0] == '-'; d.neg {
		s = s[1:]
	}
	i := decimalDigitsEnd(s, 0)
	d.intPart = s[:i]
	if i < len(s) && s[i] == '.' {
		j := decimalDigitsEnd(s, i+1)
		d.frac, i = s[i+1:j], j
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		d.exp = decimalExponent(s[i+1:])
	}
	return d
}

// decimalDigitsEnd is the offset of the first byte of s at or after i that
// is not a decimal digit.
func decimalDigitsEnd(s []byte, i int) int {
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return i
}

// decimalExponent reads the exponent of a JSON number, s after its 'e',
// saturated beyond ±1e9.
func decimalExponent(s []byte) int {
	neg := false
	if len(s) > 0 && (s[0] == '+' || s[0] == '-') {
		neg = s[0] == '-'
		s = s[1:]
	}
	exp := 0
	for _, c := range s {
		if exp < 1e9 {
			exp = exp*10 + int(c-'0')
		}
	}
	if neg {
		return -exp
	}
	return exp
}

// digit is the k-th digit of the integer and fraction digits together.
func (d decimal) digit(k int) byte {
	if k < len(d.intPart) {
		return d.intPart[k]
	}
	return d.frac[k-len(d.intPart)]
}

// significant returns where the significant digits of d start, among its
// integer and fraction digits together, and how many there are: leading
// and trailing zeros left out. sig is 0 when d is zero.
func (d decimal) significant() (lead, sig int) {
	total := len(d.intPart) + len(d.frac)
	for lead < total && d.digit(lead) == '0' {
		lead++
	}
	if lead == total {
		return lead, 0
	}
	last := total - 1
	for d.digit(last) == '0' {
		last--
	}
	return lead, last - lead + 1
}

// standIn writes the short number schemaNumber describes.
func (d decimal) standIn() string {
	// The value is 0.D × 10^point, D the significant digits.
	lead, sig := d.significant()
	if sig == 0 {
		return "0"
	}
	point := len(d.intPart) + d.exp - lead
	sign := ""
	if d.neg {
		sign = "-"
	}
	const big = 30
	switch {
	case point > big:
		// Beyond every bound; a fraction, if any, keeps it from being an
		// integer.
		if sig > point {
			return sign + "1" + strings.Repeat("0", big+1) + ".5"
		}
		return sign + "1e" + strconv.Itoa(big+1)
	case point < -big:
		return sign + "1e-" + strconv.Itoa(big+1)
	}
	var b strings.Builder
	b.WriteString(sign)
	if point <= 0 {
		b.WriteString("0")
	}
	for k := 0; k < point; k++ {
		if k < sig {
			b.WriteByte(d.digit(lead + k))
		} else {
			b.WriteByte('0')
		}
	}
	if sig > point {
		// A fraction: keep its first digits, and a last 1 when more were
		// dropped, so that the stand-in lies between the same integers.
		b.WriteByte('.')
		for k := point; k < 0; k++ {
			b.WriteByte('0')
		}
		from := max(point, 0)
		n := min(sig-from, big)
		for k := from; k < from+n; k++ {
			b.WriteByte(d.digit(lead + k))
		}
		if from+n < sig {
			b.WriteByte('1')
		}
	}
	return b.String()
}
