package zone

import (
	"github.com/miekg/dns"

	sc "github.com/grpc-config-dns/grpc-config-dns/serviceconfig"
)

// miekg/dns keeps TXT strings in presentation form: it reads '\' escapes
// when packing ("\"" is '"', "\092" is '\'). Service configs are JSON, full
// of backslashes and quotes, so the strings of a dns.TXT are unescaped
// when read back.

// RawTXT returns the strings of a TXT record as the bytes on the wire.
func RawTXT(rr *dns.TXT) []string {
	out := make([]string, len(rr.Txt))
	for i, s := range rr.Txt {
		out[i] = sc.UnescapeTXTString(s)
	}
	return out
}
