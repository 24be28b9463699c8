package zone

import (
	"strconv"
	"strings"

	"github.com/miekg/dns"
)

// miekg/dns keeps TXT strings in presentation form: it reads '\' escapes
// when packing ("\"" is '"', "\092" is '\'). Service configs are JSON, full
// of backslashes and quotes, so raw strings must be escaped before they go
// into a dns.TXT, and unescaped when read back.

// escapeTXT turns raw bytes into miekg's TXT string form.
func escapeTXT(raw string) string {
	var b strings.Builder
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		switch {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c < 0x20 || c >= 0x7f:
			b.WriteByte('\\')
			s := strconv.Itoa(int(c))
			b.WriteString(strings.Repeat("0", 3-len(s)) + s)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

func escapeAll(raw []string) []string {
	out := make([]string, len(raw))
	for i, s := range raw {
		out[i] = escapeTXT(s)
	}
	return out
}

// RawTXT returns the strings of a TXT record as the bytes on the wire.
func RawTXT(rr *dns.TXT) []string {
	out := make([]string, len(rr.Txt))
	for i, s := range rr.Txt {
		var b []byte
		for j := 0; j < len(s); j++ {
			if s[j] == '\\' && j+1 < len(s) {
				if j+3 < len(s) && isDigit(s[j+1]) && isDigit(s[j+2]) && isDigit(s[j+3]) {
					n, _ := strconv.Atoi(s[j+1 : j+4])
					b = append(b, byte(n))
					j += 3
					continue
				}
				j++
			}
			b = append(b, s[j])
		}
		out[i] = string(b)
	}
	return out
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }
