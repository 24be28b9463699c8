package zone

import (
	"bytes"
	"crypto/sha512"
	"encoding/hex"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/miekg/dns"

	"github.com/grpc-config-dns/grpc-config-dns/model"
)

// ZONEMD (RFC 8976). With dnssec: {zonemd: true}, every version of a
// signed zone carries at its apex a ZONEMD record: the SHA-384 digest of
// all its records by the SIMPLE scheme, serial the SOA's. Its NSEC lists
// the type (the placeholder of RFC 8976 §3.1, which changes nothing else
// the digest covers), the digest is made once the DNSSEC records are,
// then the record is signed. The SOA's serial is in the digest, so it is
// made again for every version: a pass over the whole zone, in the order
// of the NSEC chain, hashing the DNSSEC records as they are packed
// (canonical already) and writing the services' records as serviceShape
// does, without making them.

// ZONEMD parameters (RFC 8976 §5.2, §5.3).
const (
	zonemdSimple = 1
	zonemdSHA384 = 1
)

// canonicalName gathers the records at one owner name in canonical wire
// form (RFC 4034 §6.2: no compression, names in lower case), to be
// written in canonical order (§6.3, and by type: RFC 8976 §3.3.1.1).
type canonicalName struct {
	owner []byte // the owner name in wire form
	// recs holds each record after its owner: type, class, TTL, RDATA
	// length and RDATA; at says where each starts.
	recs    []byte
	at      []int32
	scratch []byte
	w       serviceWire // addService's, of wOf
	wOf     *model.Service
	// last is the unit of the name before, lastKey its key and
	// lastShaped whether addService writes its records: a service's names
	// are most often next to each other in the chain.
	last       *unit
	lastKey    string
	lastShaped bool
}

func (c *canonicalName) reset(name string) {
	c.owner = appendCanonicalName(c.owner[:0], name)
	c.recs, c.at = c.recs[:0], c.at[:0]
}

// add adds a record without its owner (type to RDATA).
func (c *canonicalName) add(rec string) {
	c.at = append(c.at, int32(len(c.recs)))
	c.recs = append(c.recs, rec...)
}

// addRR adds rr, packed in canonical form; its owner must be the name's.
func (c *canonicalName) addRR(rr dns.RR) error {
	rr = canonicalRR(rr)
	need := dns.Len(rr) + 16
	if cap(c.scratch) < need {
		c.scratch = make([]byte, need)
	}
	b := c.scratch[:cap(c.scratch)]
	n, err := dns.PackRR(rr, b, 0, nil, false)
	if err != nil {
		return fmt.Errorf("ZONEMD: %s %s: %v", rr.Header().Name, dns.TypeToString[rr.Header().Rrtype], err)
	}
	c.at = append(c.at, int32(len(c.recs)))
	c.recs = append(c.recs, b[packedNameLen(b[:n]):n]...)
	return nil
}

// addPacked adds the DNSSEC records of a name as secured.packed holds
// them: the NSEC record with its owner, then records whose owners are
// 2-byte compression pointers.
func (c *canonicalName) addPacked(packed string) {
	owner := packedNameLen(packed)
	if owner+10 > len(packed) {
		return
	}
	end := min(owner+10+int(packed[owner+8])<<8+int(packed[owner+9]), len(packed))
	c.add(packed[owner:end])
	for off := end; off+12 <= len(packed); {
		end := min(off+12+int(packed[off+10])<<8+int(packed[off+11]), len(packed))
		c.add(packed[off+2 : end])
		off = end
	}
}

// addService adds the records of service s owned by the name, as
// serviceWire writes them. s's names must be in lower case (canonical).
func (c *canonicalName) addService(s *model.Service, name string) {
	if c.wOf != s { // a service's names are most often next to each other
		c.w.write(s)
		c.wOf = s
	}
	for _, r := range c.w.recs {
		if prefixed(name, r.prefix, s.Name) {
			c.at = append(c.at, int32(len(c.recs)))
			c.recs = append(c.recs, c.w.b[r.rdata-10:r.end]...)
		}
	}
}

// hasUpper reports whether name holds an upper-case letter (a model
// name does not: it is the canonical form already).
func hasUpper(name string) bool {
	return strings.ContainsFunc(name, func(r rune) bool { return 'A' <= r && r <= 'Z' })
}

// prefixed reports whether name is prefix followed by rest.
func prefixed(name, prefix, rest string) bool {
	return len(name) == len(prefix)+len(rest) && strings.HasPrefix(name, prefix) && strings.HasSuffix(name, rest)
}

// appendTo appends the records in canonical order, each with its owner
// and once (RFC 8976 §3.3.1.2: duplicates omitted), to dst. At the apex
// the ZONEMD RRset and the RRSIGs covering it are left out.
func (c *canonicalName) appendTo(dst []byte, apex bool) []byte {
	rec := func(i int32) []byte {
		b := c.recs[i:]
		return b[:min(len(b), 10+int(b[8])<<8+int(b[9]))]
	}
	slices.SortFunc(c.at, func(i, j int32) int {
		a, b := rec(i), rec(j)
		if x := bytes.Compare(a[:2], b[:2]); x != 0 { // type
			return x
		}
		if x := bytes.Compare(a[10:], b[10:]); x != 0 { // RDATA
			return x
		}
		return bytes.Compare(a[2:10], b[2:10])
	})
	var last []byte
	for _, i := range c.at {
		r := rec(i)
		if len(r) < 10 {
			continue
		}
		typ := uint16(r[0])<<8 | uint16(r[1])
		if apex && (typ == dns.TypeZONEMD || typ == dns.TypeRRSIG && len(r) >= 12 && uint16(r[10])<<8|uint16(r[11]) == dns.TypeZONEMD) {
			continue
		}
		if last != nil && bytes.Equal(last[:4], r[:4]) && bytes.Equal(last[10:], r[10:]) {
			continue // the same type, class and RDATA
		}
		last = r
		dst = append(dst, c.owner...)
		dst = append(dst, r...)
	}
	return dst
}

// appendCanonicalName appends name in wire form, in lower case.
func appendCanonicalName(b []byte, name string) []byte {
	if plainName(name) {
		at := len(b)
		b = appendWireName(b, name)
		for i := at; i < len(b); i++ {
			if 'A' <= b[i] && b[i] <= 'Z' {
				b[i] += 'a' - 'A'
			}
		}
		return b
	}
	// Escapes: miekg/dns reads them.
	var buf [256]byte
	n, err := dns.PackDomainName(dns.CanonicalName(name), buf[:], 0, nil, false)
	if err != nil {
		return append(b, 0)
	}
	return append(b, buf[:n]...)
}

// canonicalRR returns rr with the names in its RDATA in lower case (RFC
// 4034 §6.2, for the types with names a zone of services holds): a copy
// for those types, rr itself for the others.
func canonicalRR(rr dns.RR) dns.RR {
	switch r := rr.(type) {
	case *dns.NS:
		c := *r
		c.Ns = strings.ToLower(c.Ns)
		return &c
	case *dns.SOA:
		c := *r
		c.Ns, c.Mbox = strings.ToLower(c.Ns), strings.ToLower(c.Mbox)
		return &c
	case *dns.SRV:
		c := *r
		c.Target = strings.ToLower(c.Target)
		return &c
	case *dns.CNAME:
		c := *r
		c.Target = strings.ToLower(c.Target)
		return &c
	case *dns.MX:
		c := *r
		c.Mx = strings.ToLower(c.Mx)
		return &c
	case *dns.PTR:
		c := *r
		c.Ptr = strings.ToLower(c.Ptr)
		return &c
	}
	return rr
}

// zonemdDigest returns the SHA-384 digest of z, a signed version with
// its SOA's signatures, by RFC 8976's SIMPLE scheme: its names in the
// order of the NSEC chain (canonical), at each its records as the
// services' configs make them and its DNSSEC records as packed. The hash
// is one stream; workers write the canonical records of the chain's
// blocks of names ahead of it (a block's names cost twice its hashing:
// three lookups each in maps of 200 000 names).
func (z *Zone) zonemdDigest() ([]byte, error) {
	h := sha512.New384()
	chain := z.sec.chain
	const per = 256 // names a block
	workers := runtime.GOMAXPROCS(0)
	if len(chain) < 4*per || workers < 2 {
		var c canonicalName
		var out []byte
		for i := 0; i < len(chain); i += per {
			var err error
			if out, err = z.appendCanonical(out[:0], &c, chain[i:min(i+per, len(chain))]); err != nil {
				return nil, err
			}
			h.Write(out)
		}
		return h.Sum(nil), nil
	}
	type block struct {
		out  []byte
		err  error
		done chan struct{}
	}
	blocks := make([]block, (len(chain)+per-1)/per)
	for i := range blocks {
		blocks[i].done = make(chan struct{})
	}
	// At most window blocks written and not yet hashed: tokens taken by
	// a worker before a block, given back once it is hashed. Blocks are
	// taken in order, so the one the hash waits for always has its token.
	window := 4 * workers
	tokens := make(chan struct{}, window)
	free := make(chan []byte, window)
	var next atomic.Int64
	var failed atomic.Bool
	for range workers {
		go func() {
			var c canonicalName
			for {
				tokens <- struct{}{}
				i := int(next.Add(1) - 1)
				if i >= len(blocks) {
					<-tokens
					return
				}
				b := &blocks[i]
				if !failed.Load() {
					var buf []byte
					select {
					case buf = <-free:
					default:
					}
					b.out, b.err = z.appendCanonical(buf[:0], &c, chain[i*per:min((i+1)*per, len(chain))])
					if b.err != nil {
						failed.Store(true)
					}
				}
				close(b.done)
			}
		}()
	}
	var err error
	for i := range blocks {
		b := &blocks[i]
		<-b.done
		if b.err != nil && err == nil {
			err = b.err
		}
		h.Write(b.out)
		select {
		case free <- b.out:
		default:
		}
		b.out = nil
		<-tokens
	}
	if err != nil {
		return nil, err
	}
	return h.Sum(nil), nil
}

// appendCanonical appends to dst the records at names, in canonical
// form and order, with c.
func (z *Zone) appendCanonical(dst []byte, c *canonicalName, names []string) ([]byte, error) {
	for _, name := range names {
		if err := z.canonicalAt(c, name); err != nil {
			return dst, err
		}
		dst = c.appendTo(dst, name == z.Origin)
	}
	return dst, nil
}

// canonicalAt puts in c the records at name, a name of z's chain, but
// its ZONEMD.
func (z *Zone) canonicalAt(c *canonicalName, name string) error {
	c.reset(name)
	if name == z.Origin {
		for _, rr := range append(z.plainAt(name), z.sec.soa...) {
			if err := c.addRR(rr); err != nil {
				return err
			}
		}
	} else if o, ok := z.owners.Get(name); ok {
		for _, key := range o.units {
			u := c.last
			if key != c.lastKey || u == nil {
				var ok bool
				if u, ok = z.units.Get(key); !ok {
					continue
				}
				c.last, c.lastKey, c.lastShaped = u, key, u.src != nil && !hasUpper(u.src.Name)
			}
			if c.lastShaped {
				c.addService(u.src, name)
				continue
			}
			for _, rr := range u.records() {
				if rr.Header().Name != name {
					continue
				}
				if err := c.addRR(rr); err != nil {
					return err
				}
			}
		}
	}
	s, ok := z.sec.at.Get(name)
	if !ok {
		return fmt.Errorf("ZONEMD: %s holds records but no NSEC record", name)
	}
	for _, rr := range s.keys {
		if err := c.addRR(rr); err != nil {
			return err
		}
	}
	c.addPacked(s.packed)
	return nil
}

// makeZONEMD makes the ZONEMD record of z, signed by sg, with the digest
// of z.
func (z *Zone) makeZONEMD(sg *signer) ([]dns.RR, error) {
	d, err := z.zonemdDigest()
	if err != nil {
		return nil, err
	}
	rr := &dns.ZONEMD{Hdr: hdr(z.Origin, dns.TypeZONEMD, z.SOA.Hdr.Ttl), Serial: z.SOA.Serial, Scheme: zonemdSimple, Hash: zonemdSHA384, Digest: hex.EncodeToString(d)}
	sigs, err := sg.keys.Sign([]dns.RR{rr}, sg.inception, sg.hour+sg.p.Validity)
	if err != nil {
		return nil, fmt.Errorf("ZONEMD: %w", err)
	}
	return append([]dns.RR{rr}, sigs...), nil
}

// ZONEMD returns the zone's ZONEMD record, nil when it has none.
func (z *Zone) ZONEMD() *dns.ZONEMD {
	if z.sec == nil || len(z.sec.zonemd) == 0 {
		return nil
	}
	rr, _ := z.sec.zonemd[0].(*dns.ZONEMD)
	return rr
}
