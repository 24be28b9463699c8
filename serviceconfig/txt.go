package serviceconfig

import (
	"errors"
	"fmt"
	"strings"
)

// Attribute is the RFC 1464 attribute name of the record (gRFC A2).
const Attribute = "grpc_config"

// OwnerPrefix is prepended to a host name to get the record's owner name.
const OwnerPrefix = "_grpc_config."

// maxStringLen is the longest <character-string> a TXT record can hold
// (RFC 1035 §3.3).
const maxStringLen = 255

// ErrNoConfig means no TXT record at the name starts with grpc_config=: the
// client has no service config from DNS.
var ErrNoConfig = errors.New("no TXT record starts with grpc_config=")

// DecodeTXT finds the grpc_config record among the TXT records at a name
// (each record a list of strings, as on the wire) and returns its value,
// the strings joined with nothing between and the attribute stripped.
//
// As the README's Semantics say: the record is the one whose strings,
// joined, start with the attribute (RFC 1464: case-insensitive,
// back-quote escapes); other records, such as SPF, are ignored; two
// grpc_config records, or bytes outside ASCII, make the value invalid
// (*InvalidError). When there is no such record DecodeTXT returns
// ErrNoConfig.
func DecodeTXT(records [][]string) ([]byte, error) {
	pick := pickRecord(records)
	if pick.found < 0 {
		return nil, ErrNoConfig
	}
	if len(pick.extra) > 0 {
		return nil, Diagnostics{{Severity: codeTXTMultipleConfig.severity(), Code: codeTXTMultipleConfig.String(), Offset: -1,
			Message: fmt.Sprintf("TXT records %d and %d both start with %s=: publish exactly one", pick.found, pick.extra[0], Attribute)}}.Err()
	}
	strs := records[pick.found]
	n := -pick.skip
	for _, s := range strs {
		n += len(s)
	}
	value := make([]byte, 0, n)
	skip := pick.skip
	for _, s := range strs {
		from := min(skip, len(s))
		value = append(value, s[from:]...)
		skip -= from
	}
	for i, b := range value {
		if b >= 0x80 {
			return nil, Diagnostics{{Severity: codeNonASCII.severity(), Code: codeNonASCII.String(), Offset: i,
				Message: fmt.Sprintf("byte 0x%02x at offset %d of the value is not ASCII: gRFC A2 records are ASCII; write non-ASCII characters as \\u escapes", b, i)}}.Err()
		}
	}
	return value, nil
}

// recordPick is the record that holds the config among the TXT records at
// a name.
type recordPick struct {
	// found is its index, or -1.
	found int
	// skip is how many bytes of its joined strings the attribute and its
	// '=' take: the value follows.
	skip int
	// exact reports the attribute spelt exactly "grpc_config=", the only
	// spelling other gRPC clients recognise.
	exact bool
	// split reports the attribute and its '=' running past the first
	// string, where grpc-js and C-core's c-ares resolver look.
	split bool
	// extra are the other records that hold the attribute: with any, the
	// config is invalid.
	extra []int
}

// pickRecord finds the record that holds the config: the first whose
// strings, joined with nothing between, start with the grpc_config
// attribute. gRFC A2 reads a record's strings as one (RFC 4408 §3.1.3), and
// grpc-go joins them before it looks for the prefix. Everything that reads
// records (DecodeTXT, and so the resolver and select; lint; the publisher)
// decides which record holds the config here, and nowhere else.
func pickRecord(records [][]string) recordPick {
	p := recordPick{found: -1}
	for r, strs := range records {
		skip, ok, exact := recordAttribute(strs)
		switch {
		case !ok:
		case p.found >= 0:
			p.extra = append(p.extra, r)
		default:
			p.found, p.skip, p.exact = r, skip, exact
			p.split = skip > len(strs[0])
		}
	}
	return p
}

// recordAttribute reads the attribute at the start of a record's strings
// joined, without joining them: ok when it is grpc_config; skip is the
// length of the attribute and its '='; exact as in attribute.
func recordAttribute(strs []string) (skip int, ok, exact bool) {
	if len(strs) > 0 && strings.HasPrefix(strs[0], Attribute+"=") {
		return len(Attribute) + 1, true, true
	}
	var a attrScanner
	off := 0
	for _, s := range strs {
		for i := 0; i < len(s); i++ {
			if done, ok := a.step(s[i]); done {
				if !ok {
					return 0, false, false
				}
				eq := off + i
				return eq + 1, true, eq == len(Attribute) && string(a.name[:a.n]) == Attribute
			}
		}
		off += len(s)
	}
	return 0, false, false
}

// attributeValue parses s as an RFC 1464 attribute=value string and, when
// the attribute is grpc_config, returns the value. exact reports whether s
// starts with exactly "grpc_config=", the only spelling other gRPC clients
// recognise.
func attributeValue(s string) (value string, ok, exact bool) {
	eq, ok, exact := attribute(s)
	if !ok {
		return "", false, false
	}
	return s[eq+1:], true, exact
}

// attribute is attributeValue for text of any length, in either form: it
// returns the index of the '=' that ends the attribute. It allocates
// nothing and stops as soon as the name cannot be grpc_config, so that a
// first line of megabytes costs nothing to rule out.
func attribute[T ~string | ~[]byte](s T) (eq int, ok, exact bool) {
	if len(s) > len(Attribute) && string(s[:len(Attribute)+1]) == Attribute+"=" {
		return len(Attribute), true, true
	}
	var a attrScanner
	for i := 0; i < len(s); i++ {
		if done, ok := a.step(s[i]); done {
			return i, ok, false
		}
	}
	return 0, false, false
}

// attrScanner reads an RFC 1464 attribute name a byte at a time, so that
// a name cut across the strings of a record reads as one.
type attrScanner struct {
	name   [len(Attribute)]byte
	n      int
	blanks int  // unquoted blanks after the name so far
	quote  bool // the previous byte was an unquoted back-quote
}

// step reads the next byte: done once the bytes so far decide, ok when
// they are grpc_config and c is the '=' that ends it. RFC 1464 §2: a
// back-quote quotes the next character; the first unquoted '=' ends the
// name; unquoted leading and trailing blanks of the name are ignored;
// names compare case-insensitively.
func (a *attrScanner) step(c byte) (done, ok bool) {
	switch {
	case a.quote:
		a.quote = false
		return !a.add(c), false
	case c == '`':
		a.quote = true
	case c == '=':
		return true, strings.EqualFold(string(a.name[:a.n]), Attribute)
	case (c == ' ' || c == '\t') && a.n == 0:
		// leading blank
	case c == ' ' || c == '\t':
		a.blanks++
	default:
		return !a.add(c), false
	}
	return false, false
}

// add appends c to the name; false when the name cannot be grpc_config
// (a blank inside, or too long).
func (a *attrScanner) add(c byte) bool {
	if a.blanks > 0 || a.n == len(a.name) {
		return false
	}
	a.name[a.n] = c
	a.n++
	return true
}

// EncodeTXT returns the strings of the TXT record that publishes value (a
// grpc_config JSON value, which should be compact): "grpc_config=" and the
// value, cut into strings of at most 255 bytes.
func EncodeTXT(value []byte) []string {
	// One string, cut: a publisher keeps the strings of every service.
	full := Attribute + "=" + string(value)
	out := make([]string, 0, len(full)/maxStringLen+1)
	for len(full) > maxStringLen {
		out = append(out, full[:maxStringLen])
		full = full[maxStringLen:]
	}
	return append(out, full)
}

// RDataLen is the length of the TXT RDATA holding strings.
func RDataLen(strs []string) int {
	n := 0
	for _, s := range strs {
		n += 1 + len(s)
	}
	return n
}

// ResponseSize is the size of a DNS response carrying one TXT record with
// strs at owner (a fully-qualified name), with an EDNS OPT record when
// edns is set: header, question, answer with a compressed owner name.
func ResponseSize(owner string, strs []string, edns bool) int {
	name := len(owner) + 1
	if !strings.HasSuffix(owner, ".") {
		name++
	}
	n := 12 + name + 4 + 2 + 10 + RDataLen(strs)
	if edns {
		n += 11
	}
	return n
}

// Size thresholds of a TXT answer.
const (
	// plainUDPSize is the largest UDP answer for a client without EDNS.
	plainUDPSize = 512
	// SafeEDNSSize is the buffer size most resolvers advertise (DNS flag day
	// 2020): larger answers come back truncated and are retried over TCP.
	SafeEDNSSize = 1232
	// MaxMessageSize is the largest DNS message.
	MaxMessageSize = 65535
)

// exampleOwner stands in for the owner name when sizes are estimated for a
// record whose name is not known.
const exampleOwner = "_grpc_config.service.example.com."

// isSizeCode reports whether code is one of sizeDiagnostics' codes.
func isSizeCode(code string) bool {
	return code == codeTXTSizeUDP.String() || code == codeTXTSizeEDNS.String() || code == codeTXTTooLarge.String()
}

// sizeDiagnostics reports answers that need TCP or cannot be sent.
func sizeDiagnostics(owner string, strs []string) Diagnostics {
	known := owner != ""
	if !known {
		owner = exampleOwner
	}
	plain := ResponseSize(owner, strs, false)
	edns := ResponseSize(owner, strs, true)
	where := func() string { // only for a message: most records fit
		if !known {
			return fmt.Sprintf("for a %d-byte owner name like %s", len(owner), owner)
		}
		return "at " + owner
	}
	mk := func(code diagCode, msg string) Diagnostics {
		return Diagnostics{{Severity: code.severity(), Code: code.String(), Offset: -1, Message: msg}}
	}
	switch {
	case edns > MaxMessageSize:
		// Sized with the OPT record: the answer as an EDNS client gets it
		// over TCP. One that fits only without it reaches such clients as
		// TC=1 with no records, over TCP too.
		return mk(codeTXTTooLarge, fmt.Sprintf("the answer would be %d bytes %s with the EDNS OPT record, more than a DNS message can hold (%d); shrink the config or split it across services", edns, where(), MaxMessageSize))
	case edns > SafeEDNSSize:
		return mk(codeTXTSizeEDNS, fmt.Sprintf("the answer is %d bytes %s, above the %d-byte EDNS buffer most resolvers advertise: clients get it truncated and retry over TCP; keep the record under about %d bytes of JSON", edns, where(), SafeEDNSSize, SafeEDNSSize-(edns-RDataLen(strs))-len(Attribute)-1-len(strs)))
	case plain > plainUDPSize:
		return mk(codeTXTSizeUDP, fmt.Sprintf("the answer is %d bytes %s, above %d: clients that do not use EDNS (many stub resolvers) must retry over TCP", plain, where(), plainUDPSize))
	}
	return nil
}

// FormatTXT writes TXT strings in presentation format, as zone files and
// dig show them: each string in double quotes, escaped by EscapeTXTString.
func FormatTXT(strs []string) string {
	var b strings.Builder
	for i, s := range strs {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteByte('"')
		b.WriteString(EscapeTXTString(s))
		b.WriteByte('"')
	}
	return b.String()
}

// EscapeTXTString writes the bytes of one TXT string in presentation form,
// without the quotes: '"' and '\' escaped with a backslash, bytes outside
// printable ASCII as \DDD. It is also the form miekg/dns keeps TXT strings
// in, in memory.
func EscapeTXTString(raw string) string {
	// Sized first, then written in runs: every record of a zone is escaped
	// each time its answers are built, and a service config's quotes
	// are a tenth of its bytes.
	n := EscapedTXTLen(raw)
	if n == len(raw) {
		return raw
	}
	var b strings.Builder
	b.Grow(n)
	run := 0
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if txtEscapeLen[c] == 0 {
			continue
		}
		b.WriteString(raw[run:i])
		run = i + 1
		b.WriteByte('\\')
		if c == '"' || c == '\\' {
			b.WriteByte(c)
		} else {
			b.Write([]byte{'0' + c/100, '0' + c/10%10, '0' + c%10})
		}
	}
	b.WriteString(raw[run:])
	return b.String()
}

// EscapedTXTLen is len(EscapeTXTString(raw)), without making it.
func EscapedTXTLen(raw string) int {
	n := len(raw)
	for i := 0; i < len(raw); i++ {
		n += int(txtEscapeLen[raw[i]])
	}
	return n
}

// txtEscapeLen is how many bytes EscapeTXTString adds for each byte.
var txtEscapeLen = func() (t [256]uint8) {
	for c := range t {
		switch {
		case c == '"' || c == '\\':
			t[c] = 1
		case c < 0x20 || c >= 0x7f:
			t[c] = 3
		}
	}
	return t
}()

// UnescapeTXTString undoes EscapeTXTString (and any backslash escape of
// presentation form): "\X" is X, "\DDD" is the byte DDD. A backslash at
// the end stays.
func UnescapeTXTString(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 == len(s) {
			b = append(b, c)
			continue
		}
		i++
		if i+2 < len(s) && isDigit(s[i]) && isDigit(s[i+1]) && isDigit(s[i+2]) {
			if v := int(s[i]-'0')*100 + int(s[i+1]-'0')*10 + int(s[i+2]-'0'); v <= 255 {
				b = append(b, byte(v))
				i += 2
				continue
			}
		}
		b = append(b, s[i])
	}
	return string(b)
}

// ParseTXT reads TXT records in presentation format (see FormatTXT), one
// record per line, optionally after "owner [ttl] [class] TXT".
func ParseTXT(text []byte) ([][]string, error) {
	p, bad := parsePresentation(text)
	if bad != nil {
		return nil, Diagnostics{*bad}.Err()
	}
	return p.records, nil
}
