// Package asciijson writes JSON strings in printable ASCII, the form gRFC A2
// requires of a published record: one implementation for every place that
// builds record text from decoded strings.
package asciijson

import "unicode/utf16"

// AppendString appends s as a JSON string of printable ASCII: quotes,
// backslashes and control characters escaped, every other non-ASCII rune
// as a \u escape (a surrogate pair above U+FFFF); invalid UTF-8 is written
// as U+FFFD. strconv.Quote would not do: it writes Go escapes (\a, \x7f)
// that JSON does not have, and keeps printable non-ASCII runes.
func AppendString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	u := func(dst []byte, r rune) []byte {
		return append(dst, '\\', 'u', hex[r>>12&0xf], hex[r>>8&0xf], hex[r>>4&0xf], hex[r&0xf])
	}
	dst = append(dst, '"')
	// Most strings (keys, names, durations) are printable ASCII without
	// quotes or backslashes: copied as they are, up to the first byte
	// that is not.
	plain := 0
	for plain < len(s) && s[plain] >= 0x20 && s[plain] < 0x7f && s[plain] != '"' && s[plain] != '\\' {
		plain++
	}
	dst = append(dst, s[:plain]...)
	for _, r := range s[plain:] {
		switch {
		case r == '"' || r == '\\':
			dst = append(dst, '\\', byte(r))
		case r == '\n':
			dst = append(dst, '\\', 'n')
		case r == '\t':
			dst = append(dst, '\\', 't')
		case r == '\r':
			dst = append(dst, '\\', 'r')
		case r >= 0x20 && r < 0x7f:
			dst = append(dst, byte(r))
		case r > 0xffff:
			r1, r2 := utf16.EncodeRune(r)
			dst = u(u(dst, r1), r2)
		default:
			dst = u(dst, r)
		}
	}
	return append(dst, '"')
}
