// Package zone is the record model of the publisher: one immutable version
// of a zone (its SOA and every other record, in canonical order) built from
// a validated config. It writes RFC 1035 master files, computes the content
// digest that decides whether a reload changed a zone, and computes the
// differences between versions that IXFR sends.
//
// The package does no I/O beyond writing to the io.Writer it is given.
package zone

import (
	"crypto/sha256"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/miekg/dns"

	"github.com/grpc-config-dns/grpc-config-dns/dnspub/config"
)

// Zone is one version of a zone. It is never modified once built.
type Zone struct {
	// Origin is the zone's absolute, lower-case name.
	Origin string
	// SOA is the zone's SOA record, serial included.
	SOA *dns.SOA
	// Records holds every record but the SOA, in canonical order (RFC 4034
	// §6: by owner name, then type, then data).
	Records []dns.RR

	digest [sha256.Size]byte
}

// New builds the records of a zone from its validated config, with the
// given SOA serial.
func New(c *config.Zone, serial uint32) *Zone {
	z := &Zone{Origin: c.Origin}
	z.SOA = &dns.SOA{
		Hdr:     hdr(c.Origin, dns.TypeSOA, c.TTL),
		Ns:      c.SOA.MName,
		Mbox:    c.SOA.RName,
		Serial:  serial,
		Refresh: c.SOA.Refresh,
		Retry:   c.SOA.Retry,
		Expire:  c.SOA.Expire,
		Minttl:  c.SOA.Minimum,
	}
	for _, ns := range c.Nameservers {
		z.Records = append(z.Records, &dns.NS{Hdr: hdr(c.Origin, dns.TypeNS, c.TTL), Ns: ns.Name})
		z.Records = append(z.Records, addressRecords(ns.Name, c.TTL, ns.Addresses)...)
	}
	for _, s := range c.Services {
		z.Records = append(z.Records, addressRecords(s.Name, s.TTL, s.Addresses)...)
		if s.Port != 0 {
			// RFC 2782: priority and weight 0, the one target the service.
			z.Records = append(z.Records, &dns.SRV{Hdr: hdr(s.SRVOwner(), dns.TypeSRV, s.TTL), Port: s.Port, Target: s.Name})
		}
		if s.TXT != nil {
			z.Records = append(z.Records, &dns.TXT{Hdr: hdr(s.TXTOwner(), dns.TypeTXT, s.TTL), Txt: escapeAll(s.TXT)})
			if s.Compat.BareHost {
				z.Records = append(z.Records, &dns.TXT{Hdr: hdr(s.Name, dns.TypeTXT, s.TTL), Txt: escapeAll(s.TXT)})
			}
		}
	}
	slices.SortFunc(z.Records, compareRR)
	z.Records = slices.CompactFunc(z.Records, func(a, b dns.RR) bool { return compareRR(a, b) == 0 })
	z.digest = z.computeDigest()
	return z
}

func hdr(name string, t uint16, ttl uint32) dns.RR_Header {
	return dns.RR_Header{Name: name, Rrtype: t, Class: dns.ClassINET, Ttl: ttl}
}

func addressRecords(name string, ttl uint32, addrs []netip.Addr) []dns.RR {
	var out []dns.RR
	for _, a := range addrs {
		if a.Is4() {
			out = append(out, &dns.A{Hdr: hdr(name, dns.TypeA, ttl), A: a.AsSlice()})
		} else {
			out = append(out, &dns.AAAA{Hdr: hdr(name, dns.TypeAAAA, ttl), AAAA: a.AsSlice()})
		}
	}
	return out
}

// Serial is the zone's SOA serial.
func (z *Zone) Serial() uint32 { return z.SOA.Serial }

// WithSerial returns a copy of z with another SOA serial; the records are
// shared, as neither version changes them.
func (z *Zone) WithSerial(serial uint32) *Zone {
	c := *z
	soa := *z.SOA
	soa.Serial = serial
	c.SOA = &soa
	return &c
}

// Digest identifies the zone's content: every record and every SOA field
// but the serial. Two versions with the same digest serve the same answers,
// so a reload that keeps it publishes no change and keeps the serial.
func (z *Zone) Digest() [sha256.Size]byte { return z.digest }

func (z *Zone) computeDigest() [sha256.Size]byte {
	h := sha256.New()
	soa := *z.SOA
	soa.Serial = 0
	fmt.Fprintln(h, soa.String())
	for _, rr := range z.Records {
		fmt.Fprintln(h, rr.String())
	}
	var d [sha256.Size]byte
	h.Sum(d[:0])
	return d
}

// AXFR returns the records of a full zone transfer (RFC 5936): the SOA,
// every other record, and the SOA again.
func (z *Zone) AXFR() []dns.RR {
	out := make([]dns.RR, 0, len(z.Records)+2)
	out = append(out, z.SOA)
	out = append(out, z.Records...)
	return append(out, z.SOA)
}

// NegativeTTL is the TTL of the SOA in negative answers (RFC 2308 §5): the
// smaller of the SOA's TTL and its MINIMUM field.
func (z *Zone) NegativeTTL() uint32 { return min(z.SOA.Hdr.Ttl, z.SOA.Minttl) }

// Diff returns the records to delete from and add to from to get to, as
// an IXFR sequence carries them (RFC 1995 §4). A changed TTL is a deletion
// and an addition.
func Diff(from, to *Zone) (deleted, added []dns.RR) {
	i, j := 0, 0
	for i < len(from.Records) || j < len(to.Records) {
		switch {
		case j == len(to.Records):
			deleted = append(deleted, from.Records[i])
			i++
		case i == len(from.Records):
			added = append(added, to.Records[j])
			j++
		default:
			switch c := compareRR(from.Records[i], to.Records[j]); {
			case c < 0:
				deleted = append(deleted, from.Records[i])
				i++
			case c > 0:
				added = append(added, to.Records[j])
				j++
			default:
				i++
				j++
			}
		}
	}
	return deleted, added
}

// compareRR orders records canonically: owner name (RFC 4034 §6.1), type,
// data, then TTL (so that a TTL change shows up in Diff).
func compareRR(a, b dns.RR) int {
	ha, hb := a.Header(), b.Header()
	if c := CompareNames(ha.Name, hb.Name); c != 0 {
		return c
	}
	if c := int(ha.Rrtype) - int(hb.Rrtype); c != 0 {
		return c
	}
	if c := strings.Compare(rdata(a), rdata(b)); c != 0 {
		return c
	}
	return int(int64(ha.Ttl) - int64(hb.Ttl))
}

func rdata(rr dns.RR) string {
	s := rr.String()
	h := rr.Header().String()
	return strings.TrimPrefix(s, h)
}

// CompareNames orders absolute lower-case names canonically: label by label
// from the right, so that a zone's apex sorts first and each name's
// children follow it.
func CompareNames(a, b string) int {
	la := dns.SplitDomainName(a)
	lb := dns.SplitDomainName(b)
	for i, j := len(la)-1, len(lb)-1; i >= 0 && j >= 0; i, j = i-1, j-1 {
		if c := strings.Compare(la[i], lb[j]); c != 0 {
			return c
		}
	}
	return len(la) - len(lb)
}
