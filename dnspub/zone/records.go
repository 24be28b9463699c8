package zone

import (
	"crypto/sha256"
	"encoding/binary"
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync"

	"github.com/miekg/dns"

	"github.com/grpc-config-dns/grpc-config-dns/model"
	sc "github.com/grpc-config-dns/grpc-config-dns/serviceconfig"
)

// The records of a service are said once, here: serviceWire.write
// writes them in wire form, and everything else reads them from those
// bytes. A zone built from nothing counts their digest sum, size and
// names from them without making dns.RRs (serviceShape: escaping every
// TXT string for miekg/dns and unescaping it again to pack it was a third
// of building a fleet's zone); ZONEMD digests them
// (canonicalName.addService); and the dns.RRs that answers, transfers
// and diffs use are made from them (serviceRecords). A new field of a
// service that makes a record is written in write and nowhere else.

// serviceWire holds the records of a service as write writes them, one
// after the other; kept from one service to the next, it allocates
// nothing once grown.
type serviceWire struct {
	b       []byte
	recs    []wireRecord
	partial bool // records were left out (write)
}

// wireRecord is one record in a serviceWire.
type wireRecord struct {
	prefix string // the owner is prefix + the service's name
	typ    uint16
	// start, rdata and end are where the record, its RDATA and the next
	// record start: the record is uncompressed, as dns.PackRR writes it
	// (owner, type, class IN, TTL, RDATA length, RDATA).
	start, rdata, end int
}

func (r *wireRecord) owner(name string) string {
	if r.prefix == "" {
		return name
	}
	return r.prefix + name
}

// write writes the records of s: its addresses, each once; its SRV record
// when it names a port (RFC 2782: priority and weight 0, the one target
// the service); its TXT record, and the copy at its own name for grpc-js.
//
// It reports false when it left records out because s holds what DNS
// cannot carry and model's validation refuses: the root, a name with an
// escape, or too long with its prefix; an address that is not valid; a
// TXT string over 255 bytes, or TXT data over 65 535 (the record is left
// out). A zone publishes validated
// configs; one made by hand gets the records that can be written, the
// same ones everywhere.
func (w *serviceWire) write(s *model.Service) bool {
	w.b, w.recs, w.partial = w.b[:0], w.recs[:0], false
	if s.Name == "." || !plainName(s.Name) {
		return false // the root is no host
	}
	for i, a := range s.Addresses {
		switch {
		case !a.IsValid():
			w.partial = true
		case addressListed(s.Addresses[:i], a): // the same record, once
		case a.Is4():
			if w.begin(s, "", dns.TypeA, 4) {
				v := a.As4()
				w.b = append(w.b, v[:]...)
				w.end()
			}
		default:
			if w.begin(s, "", dns.TypeAAAA, 16) {
				v := a.As16()
				w.b = append(w.b, v[:]...)
				w.end()
			}
		}
	}
	if s.Port != 0 && w.begin(s, model.SRVPrefix, dns.TypeSRV, 6+wireNameLen(s.Name)) {
		w.b = append(w.b, 0, 0, 0, 0, byte(s.Port>>8), byte(s.Port))
		w.b = appendWireName(w.b, s.Name)
		w.end()
	}
	if s.TXT == nil {
		return !w.partial
	}
	rdlen := 0
	for _, t := range s.TXT {
		if len(t) > 255 {
			w.partial = true
			return false
		}
		rdlen += 1 + len(t)
	}
	w.txt(s, sc.OwnerPrefix, rdlen)
	if s.Compat.BareHost {
		w.txt(s, "", rdlen)
	}
	return !w.partial
}

// txt writes the TXT record of s at prefix + s.Name.
func (w *serviceWire) txt(s *model.Service, prefix string, rdlen int) {
	if w.begin(s, prefix, dns.TypeTXT, rdlen) {
		for _, t := range s.TXT {
			w.b = append(append(w.b, byte(len(t))), t...)
		}
		w.end()
	}
}

// begin starts a record of s at prefix + s.Name, and reports false (a
// record left out) when that name is too long, or the data (rdlen bytes)
// more than a record's 16-bit length can say.
func (w *serviceWire) begin(s *model.Service, prefix string, typ uint16, rdlen int) bool {
	if len(prefix)+wireNameLen(s.Name) > 255 || rdlen > 0xffff {
		w.partial = true
		return false
	}
	start := len(w.b)
	w.b = appendTypeHeader(appendWireName(appendLabels(w.b, prefix), s.Name), typ, s.TTL, rdlen)
	w.recs = append(w.recs, wireRecord{prefix: prefix, typ: typ, start: start, rdata: len(w.b)})
	return true
}

// end ends the record begin started.
func (w *serviceWire) end() { w.recs[len(w.recs)-1].end = len(w.b) }

// rr makes r, a record of s that write wrote, a dns.RR.
func (w *serviceWire) rr(r *wireRecord, s *model.Service) dns.RR {
	h := hdr(r.owner(s.Name), r.typ, s.TTL)
	rd := w.b[r.rdata:r.end]
	switch r.typ {
	case dns.TypeA:
		return &dns.A{Hdr: h, A: net.IP(slices.Clone(rd))}
	case dns.TypeAAAA:
		return &dns.AAAA{Hdr: h, AAAA: net.IP(slices.Clone(rd))}
	case dns.TypeSRV:
		be := binary.BigEndian
		return &dns.SRV{Hdr: h, Priority: be.Uint16(rd), Weight: be.Uint16(rd[2:]), Port: be.Uint16(rd[4:]), Target: s.Name}
	}
	// The strings of the TXT are s.TXT's, in the escaped form miekg/dns
	// keeps them in (escaped from the bytes they are written from:
	// through []byte each would be copied once more).
	txt := make([]string, len(s.TXT))
	for i, t := range s.TXT {
		txt[i] = sc.EscapeTXTString(t)
	}
	return &dns.TXT{Hdr: h, Txt: txt}
}

// addressListed reports whether addrs holds a, or a in another zone (a
// zone makes no record of its own).
func addressListed(addrs []netip.Addr, a netip.Addr) bool {
	return slices.ContainsFunc(addrs, func(b netip.Addr) bool { return b.WithZone("") == a.WithZone("") })
}

// serviceRecords makes the records of a service, in canonical order,
// from what serviceWire.write writes.
func serviceRecords(s *model.Service) []dns.RR {
	w := wires.Get().(*serviceWire)
	defer wires.Put(w)
	w.write(s)
	rrs := make([]dns.RR, len(w.recs))
	for i := range w.recs {
		rrs[i] = w.rr(&w.recs[i], s)
	}
	return canonical(rrs)
}

// wires keeps serviceRecords' serviceWires: one each call was an
// allocation more for every name's answers.
var wires = sync.Pool{New: func() any { return new(serviceWire) }}

// shape is what a zone built from nothing needs of a service's records
// before it can answer: their digest sum, size and number, the names
// that own them and the host they name. The records are made when the
// zone's answers are.
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

// serviceShape is the shape of the records of s, written into w.
func serviceShape(s *model.Service, w *serviceWire) shape {
	var sh shape
	var prefixes [3]string
	w.write(s)
	escapes := 0 // what dns.Len counts more of a TXT record
	for _, t := range s.TXT {
		escapes += sc.EscapedTXTLen(t) - len(t)
	}
	for i := range w.recs {
		r := &w.recs[i]
		h := sha256.Sum256(w.b[r.start:r.end])
		for i := range sh.sum {
			sh.sum[i] += binary.BigEndian.Uint64(h[8*i:])
		}
		sh.size += r.end - r.start
		if r.typ == dns.TypeTXT {
			sh.size += escapes
		}
		sh.count++
		at := 0
		for at < sh.nnames && prefixes[at] != r.prefix {
			at++
		}
		if at == sh.nnames {
			prefixes[at], sh.names[at] = r.prefix, r.owner(s.Name)
			sh.nnames++
		}
		if r.typ == dns.TypeSRV {
			sh.srv, sh.target = at, s.Name
		}
	}
	return sh
}

// plainName reports whether name is absolute, without escapes, with
// labels of 1 to 63 bytes, at most 255 bytes in wire format: a name
// appendWireName writes as dns.PackDomainName does. A byte loop, not
// strings.Cut: it runs for every name of a zone.
func plainName(name string) bool {
	if name == "." {
		return true
	}
	if len(name) < 2 || len(name) > 254 || name[len(name)-1] != '.' || strings.IndexByte(name, '\\') >= 0 {
		return false
	}
	start := 0
	for i := 0; i < len(name); i++ {
		if name[i] == '.' {
			if l := i - start; l == 0 || l > 63 {
				return false
			}
			start = i + 1
		}
	}
	return true
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
	return append(appendLabels(b, name), 0)
}

// appendLabels appends the labels of name (absolute, without escapes;
// "" for none) in wire format, without the root's: the name copied whole
// after a byte for the first label's length, each dot then replaced by
// the length of the label after it.
func appendLabels(b []byte, name string) []byte {
	if name == "" {
		return b
	}
	at := len(b)
	b = append(append(b, 0), name[:len(name)-1]...)
	n := 0
	for i := len(b) - 1; i > at; i-- {
		if b[i] == '.' {
			b[i], n = byte(n), 0
		} else {
			n++
		}
	}
	b[at] = byte(n)
	return b
}

// appendTypeHeader appends what follows a record's owner: its type,
// class IN, TTL and RDATA length.
func appendTypeHeader(b []byte, typ uint16, ttl uint32, rdlen int) []byte {
	return append(b, byte(typ>>8), byte(typ), byte(dns.ClassINET>>8), byte(dns.ClassINET),
		byte(ttl>>24), byte(ttl>>16), byte(ttl>>8), byte(ttl), byte(rdlen>>8), byte(rdlen))
}
