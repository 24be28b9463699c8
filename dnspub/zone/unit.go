package zone

import (
	"crypto/sha256"
	"encoding/binary"
	"maps"
	"net/netip"
	"slices"

	"github.com/miekg/dns"

	"github.com/grpc-config-dns/grpc-config-dns/model"
)

// apexKey is the key of the unit of the zone's nameservers: no service
// name (absolute, with a final dot) can be it.
const apexKey = ""

// unit is the records one service, or the zone's nameservers, contribute.
// A service's unit keeps the config they are made from, not the records:
// they are made again when they are needed (a change to the unit, the
// answers of its names, a transfer), so that a zone of 100 000 services
// holds each service's data once, and a unit takes 16 bytes. What the
// zone counts of a unit's records (their number, size and digest sum) is
// counted from its records when they are added to or taken from the
// zone's, rather than kept.
type unit struct {
	// src is the config the service's records are made from (nil for the
	// apex): an equal config makes equal records (sameService).
	src *model.Service
	// apex holds the records of the nameservers' unit (nil for a
	// service's).
	apex *[]dns.RR
}

// sumOf is the digest sum of records.
func sumOf(records []dns.RR) digestSum {
	sum, _ := hashRecords(records, nil)
	return sum
}

// hashRecords is sumOf, packing into *scratch (nil for none); packed is
// false when a record did not pack (it is hashed as text).
func hashRecords(records []dns.RR, scratch *[]byte) (sum digestSum, packed bool) {
	var own []byte
	if scratch == nil {
		scratch = &own
	}
	packed = true
	for _, rr := range records {
		h, ok := recordHash(rr, scratch)
		sum.add(h)
		packed = packed && ok
	}
	return sum, packed
}

// size is the size of records in wire format, uncompressed.
func size(records []dns.RR) int {
	n := 0
	for _, rr := range records {
		n += dns.Len(rr)
	}
	return n
}

// key is the unit's key in its zone: apexKey, or the service's name.
func (u *unit) key() string {
	if u.src == nil {
		return apexKey
	}
	return u.src.Name
}

// records returns the unit's records, in canonical order.
//
// The apex's records are copies: miekg/dns writes a record's RDLENGTH
// into it when it packs it, and the zone's versions share the unit, whose
// records an update hashes while the answers left for later are built
// from an older version, and transfers pack them.
func (u *unit) records() []dns.RR {
	if u.src != nil {
		return serviceRecords(u.src)
	}
	out := make([]dns.RR, len(*u.apex))
	for i, rr := range *u.apex {
		out[i] = dns.Copy(rr)
	}
	return out
}

// owners returns the distinct owner names of records, which are in
// canonical order.
func owners(records []dns.RR) []string {
	var out []string
	for _, rr := range records {
		if n := rr.Header().Name; len(out) == 0 || out[len(out)-1] != n {
			out = append(out, n)
		}
	}
	return out
}

func canonical(records []dns.RR) []dns.RR {
	slices.SortFunc(records, compareRR)
	return slices.CompactFunc(records, func(a, b dns.RR) bool { return compareRR(a, b) == 0 })
}

// sameService reports whether two configs of a service are equal, every
// field: then they make the same records, and either can stand for the
// other (Update shares the older one). ResourceVersion alone is not
// compared: it makes no record, and the web view reads it from the
// config being served, not from the zone.
func sameService(a, b *model.Service) bool {
	if a == b {
		return true // model.Parser returns the same for unchanged text
	}
	return a.Name == b.Name && a.TTL == b.TTL && a.Port == b.Port && a.Compat == b.Compat &&
		slices.Equal(a.Addresses, b.Addresses) && slices.Equal(a.TXT, b.TXT) &&
		(a.TXT == nil) == (b.TXT == nil) &&
		maps.Equal(a.Labels, b.Labels) && a.OwnChoices == b.OwnChoices
}

// apexUnit makes the zone's NS records and the addresses of the
// nameservers inside the zone (glue).
func apexUnit(c *model.Zone) (*unit, []dns.RR) {
	var rrs []dns.RR
	for _, ns := range c.Nameservers {
		rrs = append(rrs, &dns.NS{Hdr: hdr(c.Origin, dns.TypeNS, c.TTL), Ns: ns.Name})
		rrs = append(rrs, addressRecords(ns.Name, c.TTL, ns.Addresses)...)
	}
	rrs = canonical(rrs)
	return &unit{apex: &rrs}, rrs
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

// digestSum is a hash of a multiset of records: the sum, lane by lane
// modulo 2^64, of their SHA-256 hashes. A unit's sum is added to or taken
// from the zone's when it changes, so the digest of a zone of 100 000
// services costs nothing to keep up to date.
type digestSum [4]uint64

func (s *digestSum) add(o digestSum) {
	for i := range s {
		s[i] += o[i]
	}
}

func (s *digestSum) sub(o digestSum) {
	for i := range s {
		s[i] -= o[i]
	}
}

// recordHash hashes a record in uncompressed wire format (owner, type,
// class, TTL, data), packed into *buf (grown as needed: a buffer per
// record was a tenth of a first start's allocations), and reports
// whether it packed.
func recordHash(rr dns.RR, buf *[]byte) (digestSum, bool) {
	if need := dns.Len(rr) + 1; cap(*buf) < need {
		*buf = make([]byte, need)
	}
	b := (*buf)[:cap(*buf)]
	n, err := dns.PackRR(rr, b, 0, nil, false)
	if err != nil {
		// The config was validated; hash the text rather than fail.
		b, n = []byte(rr.String()), len(rr.String())
	}
	h := sha256.Sum256(b[:n])
	var s digestSum
	for i := range s {
		s[i] = binary.BigEndian.Uint64(h[8*i:])
	}
	return s, err == nil
}
