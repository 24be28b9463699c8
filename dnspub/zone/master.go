package zone

import (
	"bufio"
	"fmt"
	"io"
	"strings"

	"github.com/miekg/dns"

	sc "github.com/grpc-config-dns/grpc-config-dns/serviceconfig"
)

// WriteMasterFile writes the zone as an RFC 1035 master file, with names
// relative to $ORIGIN and long TXT records split over lines, one string a
// line. comment, when not empty, is written first as ';' lines.
func (z *Zone) WriteMasterFile(w io.Writer, comment string) error {
	bw := bufio.NewWriter(w)
	for _, line := range strings.Split(comment, "\n") {
		if line != "" {
			fmt.Fprintf(bw, "; %s\n", line)
		}
	}
	fmt.Fprintf(bw, "$ORIGIN %s\n", z.Origin)
	records := z.Records()
	width := len("@")
	for _, rr := range records {
		width = max(width, len(z.rel(rr.Header().Name)))
	}
	soa := z.SOA
	fmt.Fprintf(bw, "%-*s %7d IN %-5s %s %s (\n", width, "@", soa.Hdr.Ttl, "SOA", z.rel(soa.Ns), z.rel(soa.Mbox))
	indent := strings.Repeat(" ", width+19)
	fmt.Fprintf(bw, "%s%-10d ; serial\n", indent, soa.Serial)
	fmt.Fprintf(bw, "%s%-10d ; refresh\n", indent, soa.Refresh)
	fmt.Fprintf(bw, "%s%-10d ; retry\n", indent, soa.Retry)
	fmt.Fprintf(bw, "%s%-10d ; expire\n", indent, soa.Expire)
	fmt.Fprintf(bw, "%s%-10d ; minimum (negative-caching TTL)\n", indent, soa.Minttl)
	fmt.Fprintf(bw, "%s)\n", indent)
	for _, rr := range records {
		h := rr.Header()
		prefix := fmt.Sprintf("%-*s %7d IN %-5s ", width, z.rel(h.Name), h.Ttl, dns.TypeToString[h.Rrtype])
		switch r := rr.(type) {
		case *dns.NS:
			fmt.Fprintf(bw, "%s%s\n", prefix, z.rel(r.Ns))
		case *dns.TXT:
			raw := RawTXT(r)
			if len(raw) == 1 {
				fmt.Fprintf(bw, "%s%s\n", prefix, sc.FormatTXT(raw))
				break
			}
			pad := strings.Repeat(" ", len(prefix)+2)
			fmt.Fprintf(bw, "%s( %s\n", prefix, sc.FormatTXT(raw[:1]))
			for i, s := range raw[1:] {
				end := ""
				if i == len(raw)-2 {
					end = " )"
				}
				fmt.Fprintf(bw, "%s%s%s\n", pad, sc.FormatTXT([]string{s}), end)
			}
		default:
			// Every other type in its presentation format (RFC 1035 §5.1;
			// names absolute): no list of types to keep up to date.
			fmt.Fprintf(bw, "%s%s\n", prefix, strings.TrimPrefix(rr.String(), h.String()))
		}
	}
	return bw.Flush()
}

// rel writes a name relative to the origin when it lies inside the zone.
func (z *Zone) rel(name string) string {
	switch {
	case name == z.Origin:
		return "@"
	case z.Origin == ".":
		return name
	case strings.HasSuffix(name, "."+z.Origin):
		return strings.TrimSuffix(name, "."+z.Origin)
	}
	return name
}
