package zone

import (
	"crypto/sha256"
	"encoding/binary"
	"strings"

	"github.com/miekg/dns"

	"github.com/grpc-config-dns/grpc-config-dns/model"
	sc "github.com/grpc-config-dns/grpc-config-dns/serviceconfig"
)

// shape is what a zone built from nothing needs of a service's records
// before it can answer: their digest sum, size and number, the names
// that own them and the host they name. serviceShape computes it from
// the service's config, packing each record as dns.PackRR would, without
// making the records (serviceRecords): escaping every TXT string for
// miekg/dns and unescaping it again to pack it was a third of building
// a fleet's zone. The records are made when the zone's answers are.
type shape struct {
	sum   digestSum
	size  int // as dns.Len counts it, like made.size
	count int
	// names are the distinct owner names, nnames of them; target is the
	// host the SRV record names ("" without one), the owner of which is
	// names[srv].
	names  [3]string
	nnames int
	target string
	srv    int
}

// serviceShape is s's shape, and false when s holds something its
// records must be made for: a name with an escape, an address that is
// not valid, has a zone or is listed twice, a TXT string longer than 255
// bytes.
// TestServiceShapeIsRecords holds it to serviceRecords, hashRecords and
// size.
func serviceShape(s *model.Service, buf *[]byte) (sh shape, ok bool) {
	if !shapeable(s) {
		return sh, false
	}
	b := (*buf)[:0]
	add := func(rec []byte, size int) {
		h := sha256.Sum256(rec)
		for i := range sh.sum {
			sh.sum[i] += binary.BigEndian.Uint64(h[8*i:])
		}
		sh.size += size
		sh.count++
	}
	owner := func(name string) {
		sh.names[sh.nnames] = name
		sh.nnames++
	}
	if len(s.Addresses) > 0 || s.TXT != nil && s.Compat.BareHost {
		owner(s.Name)
	}
	for _, a := range s.Addresses {
		if a.Is4() {
			b = appendRecordHeader(b[:0], s.Name, dns.TypeA, s.TTL, 4)
			v := a.As4()
			add(append(b, v[:]...), wireNameLen(s.Name)+10+4)
		} else {
			b = appendRecordHeader(b[:0], s.Name, dns.TypeAAAA, s.TTL, 16)
			v := a.As16()
			add(append(b, v[:]...), wireNameLen(s.Name)+10+16)
		}
	}
	if s.Port != 0 {
		own := s.SRVOwner()
		sh.srv, sh.target = sh.nnames, s.Name
		owner(own)
		b = appendRecordHeader(b[:0], own, dns.TypeSRV, s.TTL, 6+wireNameLen(s.Name))
		b = append(b, 0, 0, 0, 0, byte(s.Port>>8), byte(s.Port)) // priority and weight 0
		add(appendWireName(b, s.Name), wireNameLen(own)+10+6+wireNameLen(s.Name))
	}
	if s.TXT != nil {
		own := s.TXTOwner()
		owner(own)
		rdlen, escaped := 0, 0
		for _, t := range s.TXT {
			rdlen += 1 + len(t)
			escaped += 1 + sc.EscapedTXTLen(t)
		}
		for _, at := range []string{own, s.Name}[:1+b2i(s.Compat.BareHost)] {
			b = appendRecordHeader(b[:0], at, dns.TypeTXT, s.TTL, rdlen)
			for _, t := range s.TXT {
				b = append(append(b, byte(len(t))), t...)
			}
			add(b, wireNameLen(at)+10+escaped)
		}
	}
	*buf = b
	return sh, true
}

// shapeable reports whether the records of s are written as
// serviceShape writes them: what it says of serviceShape's false.
func shapeable(s *model.Service) bool {
	// The longest owner is the TXT's or the SRV's: a prefix and the name.
	if s.Name == "." || !plainName(s.Name) || wireNameLen(s.Name)+max(len(sc.OwnerPrefix), len(model.SRVPrefix)) > 255 {
		return false
	}
	for i, a := range s.Addresses {
		if !a.IsValid() || a.Zone() != "" { // a zone makes no record of its own
			return false
		}
		for _, b := range s.Addresses[:i] {
			if a == b {
				return false
			}
		}
	}
	for _, t := range s.TXT {
		if len(t) > 255 {
			return false
		}
	}
	return true
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// plainName reports whether name is absolute, without escapes, with
// labels of 1 to 63 bytes, at most 255 bytes in wire format: a name
// appendWireName writes as dns.PackDomainName does.
func plainName(name string) bool {
	if name == "." {
		return true
	}
	if len(name) < 2 || name[len(name)-1] != '.' || wireNameLen(name) > 255 || strings.IndexByte(name, '\\') >= 0 {
		return false
	}
	for rest := name[:len(name)-1]; ; {
		label, more, cut := strings.Cut(rest, ".")
		if len(label) == 0 || len(label) > 63 {
			return false
		}
		if !cut {
			return true
		}
		rest = more
	}
}

// wireNameLen is the length of name (absolute, without escapes) in wire
// format.
func wireNameLen(name string) int {
	if name == "." || name == "" {
		return 1
	}
	return len(name) + 1
}

// appendWireName appends name (absolute, without escapes) in wire format,
// uncompressed, as dns.PackDomainName writes it.
func appendWireName(b []byte, name string) []byte {
	if name == "." {
		return append(b, 0)
	}
	for rest := name; rest != ""; {
		i := strings.IndexByte(rest, '.')
		b = append(append(b, byte(i)), rest[:i]...)
		rest = rest[i+1:]
	}
	return append(b, 0)
}

// appendRecordHeader appends a record's owner, type, class IN, TTL and
// RDATA length.
func appendRecordHeader(b []byte, owner string, typ uint16, ttl uint32, rdlen int) []byte {
	b = appendWireName(b, owner)
	return append(b, byte(typ>>8), byte(typ), byte(dns.ClassINET>>8), byte(dns.ClassINET),
		byte(ttl>>24), byte(ttl>>16), byte(ttl>>8), byte(ttl), byte(rdlen>>8), byte(rdlen))
}
