package dnspub

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/miekg/dns"

	"github.com/grpc-config-dns/grpc-config-dns/dnspub/internal/wire"
)

// logQuery writes one query to Options.QueryLog.
func (s *Server) logQuery(proto int, from netip.Addr, msg []byte, r *wire.Result, size int, took time.Duration) {
	if r.Action == wire.Drop {
		return
	}
	rcode := dns.RcodeToString[r.Rcode]
	if rcode == "" {
		rcode = "RCODE" + strconv.Itoa(r.Rcode)
	}
	s.opts.QueryLog.Info("query", "client", from.String(), "proto", protoLabels[proto], "name", questionName(msg, r.Query.QNameEnd),
		"type", qtypeLabel(qtypeIndex(r.Query.QType)), "rcode", rcode, "zone", r.Zone, "size", size, "duration", took, "truncated", r.Truncated)
}

// questionName reads the question name of a parsed query, in presentation
// form (escaping dots and unprintable bytes inside labels).
func questionName(msg []byte, end int) string {
	const headerLen = 12
	if end <= headerLen || end > len(msg) {
		return ""
	}
	var b strings.Builder
	for i := headerLen; i < end && msg[i] != 0; {
		l := int(msg[i])
		if i+1+l > end {
			break
		}
		for _, c := range msg[i+1 : i+1+l] {
			switch {
			case c == '.' || c == '\\' || c == '"':
				b.WriteByte('\\')
				b.WriteByte(c)
			case c < 0x21 || c > 0x7e:
				fmt.Fprintf(&b, "\\%03d", c)
			default:
				b.WriteByte(c)
			}
		}
		b.WriteByte('.')
		i += 1 + l
	}
	if b.Len() == 0 {
		return "."
	}
	return b.String()
}
