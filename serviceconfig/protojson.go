package serviceconfig

import (
	"math"
	"strconv"
	"strings"

	"github.com/grpc-config-dns/grpc-config-dns/internal/jtree"
)

// The service config is the JSON form of the ServiceConfig message of
// grpc/service_config/service_config.proto, written with the proto3 JSON
// mapping (doc/service_config.md: "The JSON representation is the result of
// converting the protobuf form into JSON using the normal protobuf to JSON
// translation rules"). The helpers here read fields the way that mapping
// says; where a gRPC client reads a field more narrowly, they say which with
// a warning instead of an error (docs/rules.md).

// numKind is the proto type of a number field.
type numKind uint8

const (
	numUint32 numKind = iota
	numUint64
	numInt64
	numFloat // float, double and their wrappers
)

// number is a number field's value, as read by protoNumber.
type number struct {
	f float64
	// whole is set when the value is an integer; i holds it, saturated to
	// the int64 range.
	whole bool
	i     int64
}

// protoNumber reads a number field in proto3 JSON: a JSON number, or a
// string holding one ("3", "1e2"), which the mapping accepts for every
// number type. An integer field also takes a whole number written with a
// fraction or exponent (3.0, 1e2). strict names the clients that read the
// field but refuse the string form (encoding/json in grpc-go, typeof checks
// in grpc-js). Problems are reported with code; ok is false when the value
// is not a number of kind k.
func (c *checker) protoNumber(v int32, what string, code diagCode, k numKind, strict client) (n number, ok bool) {
	raw, ok := c.numberText(v, what, code, k, strict)
	if !ok {
		return n, false
	}
	f, err := strconv.ParseFloat(raw, 64)
	if err != nil && !math.IsInf(f, 0) {
		c.report(v, code, "%s must be a number, not %s", what, excerptString(raw))
		return n, false
	}
	n.f = f
	if k == numFloat {
		n.whole = f == math.Trunc(f) && !math.IsInf(f, 0)
		return n, true
	}
	plain := !strings.ContainsAny(raw, ".eE")
	if !plain && !c.wholeWithFraction(v, what, code, raw, f) {
		return n, false
	}
	n.whole = true
	n.i = saturatedInt(f, raw, plain)
	lo, hi := intRange(k)
	if f < lo || f > hi {
		c.report(v, code, "%s %s is out of range for its proto type (%s to %s)", what, excerptString(raw), strconv.FormatFloat(lo, 'f', -1, 64), strconv.FormatFloat(hi, 'f', -1, 64))
		return n, false
	}
	return n, true
}

// numberText is the text of number field v: that of a JSON number, or of
// a string that holds one, which the clients of strict refuse (see
// protoNumber). ok is false when v is neither, which is reported.
func (c *checker) numberText(v int32, what string, code diagCode, k numKind, strict client) (raw string, ok bool) {
	t := c.t
	switch t.Nodes[v].Kind {
	case jtree.Number:
		return string(t.Raw(v)), true
	case jtree.String:
		raw = t.Str(v)
		if !isJSONNumber(raw) {
			break
		}
		if strict&clientGo != 0 {
			c.goText = append(c.goText, rewrite{v, goNumberText(raw, k)})
		}
		if strict != 0 {
			c.refuse(v, codeNumberString, strict, "%s is written as a string, %s: proto3 JSON allows it and C-core and grpc-java 1.43 and later read it, but %s %s the whole config (so does grpc-java before 1.43); drop the quotes", what, t.Raw(v), strict, strict.verb("rejects", "reject"))
		}
		return raw, true
	}
	c.report(v, code, "%s must be a number, not %s", what, describeKind(t, v))
	return "", false
}

// wholeWithFraction checks the value f of integer field v, written raw
// with a fraction or exponent: proto3 JSON takes it when it is whole, but
// grpc-go and C-core refuse the form. It reports false when f is not
// whole.
func (c *checker) wholeWithFraction(v int32, what string, code diagCode, raw string, f float64) bool {
	if f != math.Trunc(f) || math.IsInf(f, 0) {
		c.report(v, code, "%s must be a whole number, not %s", what, excerptString(raw))
		return false
	}
	if c.t.Nodes[v].Kind == jtree.Number {
		c.goText = append(c.goText, rewrite{v, strconv.FormatFloat(f, 'f', -1, 64)})
	}
	c.refuse(v, codeNumberForm, clientGo|clientCore, "%s %s is a whole number written with a fraction or exponent: proto3 JSON allows it, but grpc-go and C-core reject the whole config; write %s", what, excerptString(raw), strconv.FormatFloat(f, 'f', -1, 64))
	return true
}

// saturatedInt is the whole number f, saturated to the int64 range. When
// raw is plain decimal digits it is read from them, exactly where f
// rounds.
func saturatedInt(f float64, raw string, plain bool) int64 {
	switch {
	case f >= math.MaxInt64:
		return math.MaxInt64
	case f <= math.MinInt64:
		return math.MinInt64
	case plain:
		i, _ := strconv.ParseInt(raw, 10, 64)
		return i
	}
	return int64(f)
}

// intRange is the range of values of the integer kind k.
func intRange(k numKind) (lo, hi float64) {
	switch k {
	case numUint32:
		return 0, math.MaxUint32
	case numUint64:
		return 0, math.MaxUint64
	case numInt64:
		return math.MinInt64, math.MaxInt64
	}
	return 0, 0
}

// goNumberText is the JSON number grpc-go reads for the string form of a
// number: integers in plain decimal, which encoding/json requires.
func goNumberText(raw string, k numKind) string {
	if k == numFloat {
		return raw
	}
	f, _ := strconv.ParseFloat(raw, 64)
	if f == math.Trunc(f) && math.Abs(f) < 1<<53 {
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	return raw
}

// isJSONNumber reports whether s is a JSON number, the form proto3 JSON
// accepts inside a string for a number field. NaN and the infinities, which
// the mapping also allows for floats, are out of every range a service
// config field has, so they are left to the range checks as non-numbers.
func isJSONNumber(s string) bool {
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	if i = integerEnd(s, i); i < 0 {
		return false
	}
	if i < len(s) && s[i] == '.' {
		if i = oneOrMoreDigits(s, i+1); i < 0 {
			return false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if i = oneOrMoreDigits(s, i); i < 0 {
			return false
		}
	}
	return i == len(s)
}

// integerEnd is the offset after the integer part of a JSON number at i,
// or -1 when it has no digit or starts with a 0 followed by others.
func integerEnd(s string, i int) int {
	end := digitsEnd(s, i)
	if end == i || (s[i] == '0' && end-i > 1) {
		return -1
	}
	return end
}

// digitsEnd is the offset of the first byte of s at or after i that is not
// a decimal digit.
func digitsEnd(s string, i int) int {
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return i
}

// oneOrMoreDigits is the offset after the decimal digits of s at i, or -1
// when there is none.
func oneOrMoreDigits(s string, i int) int {
	if end := digitsEnd(s, i); end > i {
		return end
	}
	return -1
}

// fields calls f for each member of the proto message obj, with the
// member's path pushed. A member whose value is null is the field's default
// value under proto3 JSON, so it is treated as absent (service_config.proto
// says so of MethodConfig.Name: "value \"\", value `null`, and not present
// are the same"); grpc-java and grpc-js throw on it, which is said once per
// member.
func (c *checker) fields(obj int32, f func(k, v int32)) {
	t := c.t
	for k := t.Nodes[obj].First; k >= 0; {
		v := t.Nodes[k].Next
		c.pushKey(k)
		if t.Nodes[v].Kind == jtree.Null {
			c.nullMembers = append(c.nullMembers, k)
			c.refuse(v, codeNullValue, clientJava|clientJS, "%s is null, which proto3 JSON reads as absent (C-core and grpc-go agree), but grpc-java and grpc-js reject the whole config; remove the member", t.Raw(k))
		} else {
			f(k, v)
		}
		c.pop()
		k = t.Nodes[v].Next
	}
}

// field returns the value of member key of the proto message obj, or -1
// when it is absent or null.
func (c *checker) field(obj int32, key string) int32 {
	v := c.t.Get(obj, key)
	if v >= 0 && c.t.Nodes[v].Kind == jtree.Null {
		return -1
	}
	return v
}
