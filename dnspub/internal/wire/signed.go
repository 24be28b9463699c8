package wire

import (
	"encoding/binary"
	"fmt"
	"slices"
	"strings"

	"github.com/miekg/dns"

	"github.com/grpc-config-dns/grpc-config-dns/dnspub/zone"
)

// What a signed zone (zone.Sign) adds to the table. A query with the DO
// bit gets, from the table as every other answer, the RRset with its
// RRSIG records, and a negative answer gets the SOA's signatures and the
// NSEC records that prove the name or type absent (RFC 4035 §3.1): the
// signatures are made when a version is built, never for a query.

// securedNode is what a name of a signed zone answers with to DO queries.
type securedNode struct {
	// sigs holds, in the order of node.answers, the RRSIG records of each
	// answer's RRset, packed, each owner a 2-byte compression pointer that
	// the answer points at the question's name (appendSigs): a DO answer
	// is the plain one with them inserted, not a second copy of it, and
	// the bytes are the zone's own (zone.Zone.Signatures).
	sigs []sigSet
	// nsec is the name's NSEC record and its RRSIG records, packed with
	// uncompressed names, and count their number: the proof a NODATA
	// answer at the name carries, or an NXDOMAIN answer whose name the
	// NSEC covers. Empty for an empty non-terminal, which has no NSEC.
	nsec  string
	count uint16
}

// sigSet is RRSIG records packed, and their number.
type sigSet struct {
	rrs string
	n   uint16
}

// securedZone is what the negative answers of a signed zone carry.
type securedZone struct {
	// soaSigs are the RRSIGs of the SOA, each without its owner name, as
	// nxSOA, with the negative TTL.
	soaSigs []string
	// chain is the zone's names that hold records, in canonical order
	// (zone.Zone.Chain): an absent name's NSEC is its predecessor's.
	chain []string
}

// secureZoneInfo adds to zi what the negative answers of z, a signed
// zone, carry.
func secureZoneInfo(zi *zoneInfo, z *zone.Zone, originKey string) error {
	sz := &securedZone{chain: z.Chain()}
	for _, rr := range z.RecordsAt(z.Origin) {
		sig, ok := rr.(*dns.RRSIG)
		if !ok || sig.TypeCovered != dns.TypeSOA {
			continue
		}
		c := *sig
		c.Hdr.Ttl = z.NegativeTTL()
		buf := make([]byte, dns.Len(&c)+16)
		n, err := dns.PackRR(&c, buf, 0, nil, false)
		if err != nil {
			return fmt.Errorf("wire: zone %s: SOA RRSIG: %v", z.Origin, err)
		}
		sz.soaSigs = append(sz.soaSigs, string(buf[len(originKey):n]))
	}
	zi.sec = sz
	return nil
}

// splitSigned separates the records of a name of a signed zone: its
// RRsets, and the RRSIG records by the type they cover.
func splitSigned(rrs []dns.RR) (plain []dns.RR, sigs map[uint16][]dns.RR) {
	sigs = map[uint16][]dns.RR{}
	for _, rr := range rrs {
		if s, ok := rr.(*dns.RRSIG); ok {
			sigs[s.TypeCovered] = append(sigs[s.TypeCovered], rr)
		} else {
			plain = append(plain, rr)
		}
	}
	return plain, sigs
}

// secureNode makes what nd, a node of a signed zone whose records at
// name are plain and sigs (splitSigned), adds for DO queries: the
// signatures of each answer's RRset, and its NSEC proof.
func secureNode(z *zone.Zone, nd *node, name string, sigs map[uint16][]dns.RR) error {
	sn := &securedNode{sigs: make([]sigSet, len(nd.answers))}
	for i := range nd.answers {
		t := nd.answers[i].qtype
		rrs, n := z.Signatures(name, t)
		if n == 0 && len(sigs[t]) > 0 {
			// The SOA's, which the zone keeps apart (a new serial's).
			var err error
			if sn.sigs[i], err = packSigs(name, sigs[t]); err != nil {
				return err
			}
			continue
		}
		sn.sigs[i] = sigSet{rrs: rrs, n: uint16(n)}
	}
	proof, n := z.NSECProof(name)
	sn.nsec, sn.count = proof, uint16(n)
	nd.sec = sn
	return nil
}

// packSigs packs the RRSIG records of an RRset at name to follow an
// answer section, its names uncompressed: each owner a pointer to the
// question's name (offset 12), which every answer at name has.
func packSigs(name string, sigs []dns.RR) (sigSet, error) {
	ownerLen := dns.Len(&dns.ANY{Hdr: dns.RR_Header{Name: name}}) - 10 // the name's wire length
	var buf []byte
	for _, rr := range sigs {
		at := len(buf)
		buf = slices.Grow(buf, dns.Len(rr)+16)[:at+dns.Len(rr)+16]
		n, err := dns.PackRR(rr, buf, at, nil, false)
		if err != nil {
			return sigSet{}, fmt.Errorf("wire: %s RRSIG: %v", name, err)
		}
		if buf = buf[:n]; n-at < ownerLen+10 {
			return sigSet{}, fmt.Errorf("wire: %s RRSIG packed short", name)
		}
		buf = append(buf[:at+2], buf[at+ownerLen:]...)
		buf[at], buf[at+1] = 0xc0, headerLen
	}
	return sigSet{rrs: string(buf), n: uint16(len(sigs))}, nil
}

// fromSigned answers a DO query with a, the plain answer, and ss, its
// RRSIG records: the answer section, the signatures, then the additional
// section, which is left out (minimal, or to fit) as fromAnswer does.
func (t *Table) fromSigned(dst, msg []byte, q *Query, a *answer, ss sigSet, minimal bool, limit int) ([]byte, bool) {
	body := a.full
	cut := len(body) // where the additional section starts
	if a.minLen != 0 {
		cut = int(a.minLen)
	}
	question := msg[headerLen : q.QNameEnd+4]
	opt := 0
	if q.EDNS {
		opt = optRRLen
	}
	if minimal || len(body)+len(ss.rrs)+len(question)+opt > limit {
		if cut+len(ss.rrs)+len(question)+opt > limit {
			return t.truncated(dst, msg, q, body[2]|0x02, body[3]), true
		}
		body = body[:cut]
	}
	resp := append(dst[:0], body[:headerLen]...)
	resp = append(resp, question...)
	resp = append(resp, body[headerLen:cut]...)
	resp = appendSigs(resp, ss.rrs, 0xc000|headerLen)
	resp = append(resp, body[cut:]...)
	binary.BigEndian.PutUint16(resp[6:], binary.BigEndian.Uint16(resp[6:])+ss.n)
	if len(body) == cut && len(body) < len(a.full) {
		resp[10], resp[11] = 0, 0 // ARCOUNT: the additional section was left out
	}
	patchHeader(resp, msg)
	return t.appendOPT(resp, q, RcodeSuccess), false
}

// allSigs answers a DO query for the RRSIG type: every signature at the
// name, as one answer section; false when it has none.
func (t *Table) allSigs(dst, msg []byte, q *Query, nd *node, limit int) ([]byte, bool, bool) {
	n, size := uint16(0), 0
	for _, ss := range nd.sec.sigs {
		n += ss.n
		size += len(ss.rrs)
	}
	if n == 0 {
		return nil, false, false
	}
	opt := 0
	if q.EDNS {
		opt = optRRLen
	}
	if q.QNameEnd+4+size+opt > limit {
		return t.truncated(dst, msg, q, 0x84, 0), true, true
	}
	resp := append(dst[:0], msg[:q.QNameEnd+4]...)
	resp[2], resp[3] = 0x84, 0 // QR, AA
	patchHeader(resp, msg)
	setCounts(resp, 1, n, 0, 0)
	for _, ss := range nd.sec.sigs {
		resp = appendSigs(resp, ss.rrs, 0xc000|headerLen)
	}
	return t.appendOPT(resp, q, RcodeSuccess), false, true
}

// appendSigs appends packed records whose owners are 2-byte compression
// pointers, each pointer set to ptr.
func appendSigs(resp []byte, rrs string, ptr uint16) []byte {
	for off := 0; off+12 <= len(rrs); {
		end := min(off+12+int(rrs[off+10])<<8+int(rrs[off+11]), len(rrs))
		resp = append(resp, byte(ptr>>8), byte(ptr))
		resp = append(resp, rrs[off+2:end]...)
		off = end
	}
	return resp
}

// appendProof appends an NSEC proof (zone.Zone.NSECProof): the NSEC
// record as it is, then its signatures, their owners pointed at the
// NSEC's.
func appendProof(resp []byte, proof string) []byte {
	if proof == "" {
		return resp
	}
	at := len(resp)
	owner := 0
	for owner < len(proof) && proof[owner] != 0 {
		owner += int(proof[owner]) + 1
	}
	owner++
	if owner+10 > len(proof) {
		return resp
	}
	end := min(owner+10+int(proof[owner+8])<<8+int(proof[owner+9]), len(proof))
	resp = append(resp, proof[:end]...)
	return appendSigs(resp, proof[end:], 0xc000|uint16(at))
}

// proof returns the NSEC record (with its RRSIGs) that covers or matches
// key, a name of the zone (lower-case wire format): the one of the last
// name of the chain at or before it in canonical order.
func (t *Table) proof(sz *securedZone, key []byte) (string, uint16) {
	chain := sz.chain
	if len(chain) == 0 {
		return "", 0
	}
	// The first name after key; the one before it covers key.
	lo, hi := 0, len(chain) // a search by hand: sort's closures would move key to the heap
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if compareWireText(key, chain[m]) >= 0 {
			lo = m + 1
		} else {
			hi = m
		}
	}
	name := chain[(lo-1+len(chain))%len(chain)]
	var buf [255]byte
	wk, ok := textToWire(buf[:0], name)
	if !ok {
		return "", 0
	}
	nd, ok := t.nodes.GetBytes(wk)
	if !ok || nd.sec == nil {
		return "", 0
	}
	return nd.sec.nsec, nd.sec.count
}

// textToWire appends the wire form of name (lower case, no escapes) to
// dst; ok is false for a name with escapes, which the zones the table
// holds do not have.
func textToWire(dst []byte, name string) ([]byte, bool) {
	if strings.IndexByte(name, '\\') >= 0 || len(name) > 255 {
		return dst, false
	}
	if name == "." {
		return append(dst, 0), true
	}
	for len(name) > 0 {
		i := strings.IndexByte(name, '.')
		if i <= 0 || i > 63 {
			return dst, false
		}
		dst = append(dst, byte(i))
		dst = append(dst, name[:i]...)
		name = name[i+1:]
	}
	return append(dst, 0), true
}

// compareWireText orders a name in lower-case wire format and a name in
// lower-case text without escapes canonically (RFC 4034 §6.1).
func compareWireText(w []byte, name string) int {
	var ws [128]uint8 // label offsets in w
	nw := 0
	for i := 0; i < len(w) && w[i] != 0 && nw < len(ws); i += int(w[i]) + 1 {
		ws[nw] = uint8(i)
		nw++
	}
	var ts [128][2]uint8 // label [start, end) in name
	nt := 0
	if name != "." {
		start := 0
		for i := 0; i < len(name) && nt < len(ts); i++ {
			if name[i] == '.' {
				ts[nt] = [2]uint8{uint8(start), uint8(i)}
				nt++
				start = i + 1
			}
		}
	}
	for nw > 0 && nt > 0 {
		nw--
		nt--
		lw := w[int(ws[nw])+1 : int(ws[nw])+1+int(w[ws[nw]])]
		lt := name[ts[nt][0]:ts[nt][1]]
		if c := compareLabel(lw, lt); c != 0 {
			return c
		}
	}
	switch {
	case nw > 0:
		return 1
	case nt > 0:
		return -1
	}
	return 0
}

// negativeSigned is negative for a DO query in a signed zone: the SOA
// with its signatures and the NSEC records that prove the answer. nd is
// the node of the question's name (nil for NXDOMAIN), key the name in
// lower-case wire format, apex the offset of the zone's name in it.
func (t *Table) negativeSigned(dst, msg []byte, q *Query, zi *zoneInfo, nd *node, key []byte, apex, rcode, limit int) ([]byte, bool) {
	sz := zi.sec
	var proofs [2]string
	var counts [2]uint16
	switch {
	case nd != nil && nd.sec != nil && nd.sec.nsec != "":
		// NODATA at a name with records: its own NSEC lists its types.
		proofs[0], counts[0] = nd.sec.nsec, nd.sec.count
	case nd != nil:
		// NODATA at an empty non-terminal: the NSEC that covers it.
		proofs[0], counts[0] = t.proof(sz, key)
	default:
		// NXDOMAIN: the NSEC that covers the name, and the one that
		// covers the wildcard of its closest encloser (RFC 4035 §3.1.3.2).
		proofs[0], counts[0] = t.proof(sz, key)
		ce := apex
		for i := int(key[0]) + 1; i < apex; i += int(key[i]) + 1 {
			if _, ok := t.nodes.GetBytes(key[i:]); ok {
				ce = i
				break
			}
		}
		var wbuf [257]byte
		wild := append(append(wbuf[:0], 1, '*'), key[ce:]...)
		if len(wild) <= 255 {
			if p, n := t.proof(sz, wild); p != proofs[0] {
				proofs[1], counts[1] = p, n
			}
		}
	}
	size := q.QNameEnd + 4 + 2 + len(zi.nxSOA) + len(proofs[0]) + len(proofs[1])
	for _, s := range sz.soaSigs {
		size += 2 + len(s)
	}
	if q.EDNS {
		size += optRRLen
	}
	flags2, flags3 := byte(0x84), byte(rcode) // QR, AA
	if size > limit {
		return t.truncated(dst, msg, q, flags2, flags3), true
	}
	resp := append(dst[:0], msg[:q.QNameEnd+4]...)
	resp[2], resp[3] = flags2, flags3
	patchHeader(resp, msg)
	ptr := 0xc000 | uint16(headerLen+apex)
	resp = append(resp, byte(ptr>>8), byte(ptr))
	resp = append(resp, zi.nxSOA...)
	for _, s := range sz.soaSigs {
		resp = append(resp, byte(ptr>>8), byte(ptr))
		resp = append(resp, s...)
	}
	resp = appendProof(resp, proofs[0])
	resp = appendProof(resp, proofs[1])
	setCounts(resp, 1, 0, 1+uint16(len(sz.soaSigs))+counts[0]+counts[1], 0)
	return t.appendOPT(resp, q, RcodeSuccess), false
}

// compareLabel compares two labels as octet strings (strings.Compare
// would copy a to the heap, once a query).
func compareLabel(a []byte, b string) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] != b[i] {
			if a[i] < b[i] {
				return -1
			}
			return 1
		}
	}
	switch {
	case len(a) < len(b):
		return -1
	case len(a) > len(b):
		return 1
	}
	return 0
}
