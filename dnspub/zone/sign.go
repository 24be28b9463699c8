package zone

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/miekg/dns"

	"github.com/grpc-config-dns/grpc-config-dns/dnspub/dnssec"
	"github.com/grpc-config-dns/grpc-config-dns/dnspub/internal/cow"
	"github.com/grpc-config-dns/grpc-config-dns/model"
)

// signing is the DNSSEC records of a signed version of a zone (RFC 4034,
// 4035), beside its records: the NSEC chain, every RRset's signatures,
// and the keys at the apex. Sign makes them for what changed; versions
// share the rest.
type signing struct {
	params model.DNSSEC
	// phase and signers name the keys published and those that sign
	// (dnssec.KeySet.Phase): other signers sign everything again, other
	// published keys the apex.
	phase, signers string
	// chain is the names with records, in canonical order: the NSEC
	// chain. Versions share it until a name comes or goes.
	chain []string
	at    cow.Map[*secured]
	// soa is the RRSIGs of this version's SOA, which every serial changes.
	soa []dns.RR
	// zonemd is, when params.ZONEMD, this version's ZONEMD record and its
	// RRSIGs, made for every serial too (zonemd.go).
	zonemd []dns.RR
	// due is when the earliest signature is to be made again (Unix
	// seconds): a Sign at or after it refreshes the signatures due.
	due          uint32
	count, bytes int
}

// secured is the DNSSEC records at one name.
type secured struct {
	// keys holds, at the apex, the DNSKEY, CDS and CDNSKEY records.
	keys []dns.RR
	// packed is the name's NSEC record, its RRSIGs, then those of the
	// name's other RRsets (the SOA's aside) in canonical order, packed with
	// uncompressed names: a fleet's zone holds 200 000 of them, and as
	// parsed records they took three times the memory and were most of
	// what the collector scanned. Unpacked when they are read (a change,
	// a transfer, the answers of the name).
	packed string
	// n is the number of records packed, proof the length of the NSEC
	// record and its signatures at its start (NSECProof).
	n      uint16
	proof  uint16
	proofN uint8
	// due is when the earliest signature is to be made again.
	due uint32
}

// newSecured makes the DNSSEC records of a name from its NSEC record,
// the NSEC's signatures (packed with their owner names) and the other
// signatures (packed with pointers for owners: pointerOwners).
func newSecured(keys []dns.RR, nsec *dns.NSEC, nsecSigs []byte, nsecN int, others []byte, othersN int, due uint32) (*secured, error) {
	b := make([]byte, dns.Len(nsec)+16, dns.Len(nsec)+16+len(nsecSigs)+len(others))
	n, err := dns.PackRR(nsec, b, 0, nil, false)
	if err != nil {
		return nil, err
	}
	b = pointerOwners(b[:n], nsecSigs, packedNameLen(b))
	proof := len(b)
	b = append(b, others...)
	if len(b) > 0xffff || nsecN > 254 {
		return nil, fmt.Errorf("the DNSSEC records at %s are larger than a DNS message", nsec.Hdr.Name)
	}
	return &secured{keys: keys, packed: string(b), n: uint16(1 + nsecN + othersN), proof: uint16(proof), proofN: uint8(1 + nsecN), due: due}, nil
}

// pointerOwners appends to dst the records of part, each owner name (of
// ownerLen bytes) replaced by a compression pointer to offset 0, where a
// name's packed DNSSEC records start with its name: 30 bytes less a
// signature, and the answer table copies the records as they are,
// pointing them at the question's name.
func pointerOwners(dst, part []byte, ownerLen int) []byte {
	for off := 0; off+ownerLen+10 <= len(part); {
		end := off + ownerLen + 10 + int(binary.BigEndian.Uint16(part[off+ownerLen+8:]))
		dst = append(dst, 0xc0, 0)
		dst = append(dst, part[off+ownerLen:end]...)
		off = end
	}
	return dst
}

// packedNameLen is the length of the uncompressed name at the start of b.
func packedNameLen[T string | []byte](b T) int {
	i := 0
	for i < len(b) && b[i] != 0 {
		i += int(b[i]) + 1
	}
	return i + 1
}

// NSECProof returns what a negative answer at or covered by name carries
// in a signed zone: name's NSEC record and its RRSIGs, packed, and their
// number; "" when name holds no records. The NSEC's owner is written
// out, each RRSIG's owner is a compression pointer to offset 0 of the
// string, which the caller points at where the NSEC's owner lands. The
// string is shared with the zone.
func (z *Zone) NSECProof(name string) (string, int) {
	if z.sec == nil {
		return "", 0
	}
	s, ok := z.sec.at.Get(name)
	if !ok {
		return "", 0
	}
	return s.packed[:s.proof], int(s.proofN)
}

// Signatures returns the RRSIG records that sign the RRset of type t at
// name (the SOA's aside), packed, each owner a 2-byte compression pointer
// for the caller to point at the name, and how many. The string is
// shared with the zone.
func (z *Zone) Signatures(name string, t uint16) (string, int) {
	if z.sec == nil {
		return "", 0
	}
	s, ok := z.sec.at.Get(name)
	if !ok {
		return "", 0
	}
	from, n := -1, 0
	b := s.packed
	off := int(s.proof)
	if t == dns.TypeNSEC {
		owner := packedNameLen(b)
		off = owner + 10 + int(b[owner+8])<<8 + int(b[owner+9])
	}
	for off+14 <= len(b) {
		end := off + 12 + int(b[off+10])<<8 + int(b[off+11])
		if end > len(b) {
			break
		}
		if covered := uint16(b[off+12])<<8 | uint16(b[off+13]); covered == t {
			if from < 0 {
				from = off
			}
			n++
		} else if from >= 0 {
			return b[from:off], n
		}
		off = end
	}
	if from < 0 {
		return "", 0
	}
	return b[from:off], n
}

// unpacked returns the NSEC record and the signatures.
func (s *secured) unpacked() (*dns.NSEC, []dns.RR) {
	msg := []byte(s.packed)
	var out []dns.RR
	for off := 0; off < len(msg); {
		rr, next, err := dns.UnpackRR(msg, off)
		if err != nil {
			break // packed by newSecured: does not happen
		}
		out = append(out, rr)
		off = next
	}
	if len(out) == 0 {
		return nil, nil
	}
	nsec, _ := out[0].(*dns.NSEC)
	return nsec, out[1:]
}

func (s *secured) records() []dns.RR {
	nsec, sigs := s.unpacked()
	out := make([]dns.RR, 0, len(s.keys)+1+len(sigs))
	out = append(out, s.keys...)
	out = append(out, nsec)
	return append(out, sigs...)
}

// signer signs the RRsets of one Sign.
type signer struct {
	keys      *dnssec.KeySet
	p         model.DNSSEC
	inception uint32
	now       uint32
	hour      uint32 // now, to the hour below
}

// sign appends the signatures of rrset to dst, packed, and returns how
// many and when they are due again.
func (sg *signer) sign(dst []byte, rrset []dns.RR) ([]byte, int, uint32, error) {
	// Each RRset's signatures expire at a time of their own within the
	// last eighth of the validity, so that refreshes spread rather than
	// come at once. The offset is a hash of the owner and type, not a
	// draw, and the times are whole hours: with the keys' deterministic
	// signatures, every publisher of a store signing the same records in
	// the same hour publishes the same bytes.
	h := fnv.New32a()
	h.Write([]byte(strings.ToLower(rrset[0].Header().Name)))
	h.Write([]byte{byte(rrset[0].Header().Rrtype >> 8), byte(rrset[0].Header().Rrtype)})
	jitter := h.Sum32() % (sg.p.Validity/8 + 1)
	exp := sg.hour + sg.p.Validity - jitter
	dst, n, err := sg.keys.SignPacked(dst, rrset, sg.inception, exp)
	return dst, n, exp - sg.p.Refresh, err
}

// Signed reports whether z is signed.
func (z *Zone) Signed() bool { return z.sec != nil }

// Chain returns the names of a signed zone that hold records, in
// canonical order (the NSEC chain), nil for an unsigned zone. The slice
// must not be modified.
func (z *Zone) Chain() []string {
	if z.sec == nil {
		return nil
	}
	return z.sec.chain
}

// RefreshDue returns when a signature of z is next to be made again,
// the zero time for an unsigned zone.
func (z *Zone) RefreshDue() time.Time {
	if z.sec == nil {
		return time.Time{}
	}
	return time.Unix(int64(z.sec.due), 0)
}

// SameKeys reports whether z is signed with keys (the same phase of the
// same keys) and p.
func (z *Zone) SameKeys(keys *dnssec.KeySet, p *model.DNSSEC) bool {
	return z.sec != nil && p != nil && z.sec.phase == keys.Phase() && z.sec.params == *p
}

// Sign returns z, a version made by Update and given its serial, signed
// with keys as p says: the RRSIG records of each of its RRsets, the NSEC
// chain of its names, the DNSKEY, CDS and CDNSKEY records at its apex,
// and with p.ZONEMD the ZONEMD record, a digest of all of them made for
// every version (zonemd.go). prev is the version z follows (nil for
// none) and ch what Update changed from it: when prev is signed with the
// same keys, only the names ch changed, their neighbours in the chain,
// the SOA (and ZONEMD) and the signatures due for refresh at now are
// signed again, the rest shared. ch gains the DNSSEC records' changes
// (the names whose answers change, and for a change from a previous
// version, the records deleted and added).
func Sign(prev, z *Zone, ch *Change, keys *dnssec.KeySet, p model.DNSSEC, now time.Time) (*Zone, error) {
	if ch == nil {
		ch = &Change{fresh: true}
	}
	out := *z
	z = &out
	sg := &signer{keys: keys, p: p, now: uint32(now.Unix())}
	// Signatures valid from the hour before the last whole hour: a
	// validator whose clock is behind ours accepts them.
	sg.hour = sg.now - sg.now%3600
	sg.inception = sg.hour - 3600
	var err error
	if prev == nil || prev.sec == nil || prev.sec.signers != keys.SignersPhase() || prev.sec.params != p || ch.FromNothing() {
		err = z.signAll(sg, prev, ch)
	} else {
		err = z.signChanges(sg, prev, ch)
	}
	if err != nil {
		return nil, err
	}
	z.sec.phase, z.sec.signers = keys.Phase(), keys.SignersPhase()
	if next := keys.Next(); !next.IsZero() {
		z.sec.due = min(z.sec.due, uint32(min(next.Unix(), 1<<32-1)))
	}
	soa := *z.SOA
	if z.sec.soa, err = sg.keys.Sign([]dns.RR{&soa}, sg.inception, sg.hour+sg.p.Validity); err != nil {
		return nil, err
	}
	z.sec.count += len(z.sec.soa)
	z.sec.bytes += size(z.sec.soa)
	if p.ZONEMD {
		// The digest covers every record but itself: made last.
		if z.sec.zonemd, err = z.makeZONEMD(sg); err != nil {
			return nil, err
		}
		z.sec.count += len(z.sec.zonemd)
		z.sec.bytes += size(z.sec.zonemd)
	}
	if !ch.fresh && prev != nil && prev.sec != nil {
		ch.Deleted = append(ch.Deleted, prev.sec.soa...)
		ch.Deleted = append(ch.Deleted, prev.sec.zonemd...)
	}
	if !ch.fresh {
		ch.Added = append(ch.Added, z.sec.soa...)
		ch.Added = append(ch.Added, z.sec.zonemd...)
	}
	return z, nil
}

// signAll signs every name of z.
func (z *Zone) signAll(sg *signer, prev *Zone, ch *Change) error {
	chain := []string{z.Origin}
	for name, o := range z.owners.All() {
		if len(o.units) > 0 && name != z.Origin {
			chain = append(chain, name)
		}
	}
	sortCanonical(chain)
	sec := &signing{params: sg.p, chain: chain, due: ^uint32(0)}
	made := make([]*secured, len(chain))
	errs := make([]error, len(chain))
	workers := runtime.GOMAXPROCS(0)
	if len(chain) < 256 {
		workers = 1
	}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := w; i < len(chain); i += workers {
				next := chain[(i+1)%len(chain)]
				made[i], errs[i] = z.secure(sg, chain[i], next)
				if errs[i] != nil {
					return
				}
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	ed := cow.NewEditor[*secured](len(chain))
	for i, s := range made {
		ed.Set(chain[i], s)
		sec.add(s)
	}
	sec.at = ed.Map()
	if prev != nil && prev.sec != nil && !ch.fresh {
		// Everything signed again (new keys or settings): every name's
		// answers change, and a transfer replaces every DNSSEC record.
		for name, s := range prev.sec.at.All() {
			ch.Owners = append(ch.Owners, name)
			ch.Deleted = append(ch.Deleted, s.records()...)
		}
	}
	if !ch.fresh {
		for i, s := range made {
			ch.Owners = append(ch.Owners, chain[i])
			ch.Added = append(ch.Added, s.records()...)
		}
		ch.Owners = sortUnique(ch.Owners)
	}
	z.sec = sec
	return nil
}

func (sec *signing) add(s *secured) {
	sec.count += len(s.keys) + int(s.n)
	sec.bytes += size(s.keys) + len(s.packed)
	sec.due = min(sec.due, s.due)
}

func (sec *signing) sub(s *secured) {
	sec.count -= len(s.keys) + int(s.n)
	sec.bytes -= size(s.keys) + len(s.packed)
}

// signChanges signs what changed since prev, which is signed with the
// same keys and settings.
func (z *Zone) signChanges(sg *signer, prev *Zone, ch *Change) error {
	old := prev.sec
	sec := &signing{params: old.params, chain: old.chain, due: old.due,
		count: old.count - len(old.soa) - len(old.zonemd), bytes: old.bytes - size(old.soa) - size(old.zonemd)}
	// The names whose records changed, and whether they still hold any.
	changed := map[string]bool{}
	for _, list := range [2][]dns.RR{ch.Deleted, ch.Added} {
		for _, rr := range list {
			if rr.Header().Rrtype != dns.TypeRRSIG && rr.Header().Rrtype != dns.TypeNSEC {
				changed[rr.Header().Name] = true
			}
		}
	}
	var gone, come []string
	for name := range changed {
		_, had := old.at.Get(name)
		has := z.holds(name)
		switch {
		case had && !has:
			gone = append(gone, name)
		case !had && has:
			come = append(come, name)
		}
	}
	if len(gone)+len(come) > 0 {
		sec.chain = editChain(old.chain, gone, come)
	}
	// The names to sign again: the changed ones that hold records, and
	// the predecessors of names that came or went (their NSEC's next);
	// the apex when other keys are published.
	redo := map[string]bool{}
	for name := range changed {
		if z.holds(name) {
			redo[name] = true
		}
	}
	if old.phase != sg.keys.Phase() {
		redo[z.Origin] = true
	}
	neighbours := map[string]bool{}
	for _, name := range slices.Concat(gone, come) {
		i, _ := slices.BinarySearchFunc(sec.chain, name, CompareNames)
		neighbours[sec.chain[(i-1+len(sec.chain))%len(sec.chain)]] = true
	}
	refresh := sg.now >= old.due
	if refresh {
		sec.due = ^uint32(0)
	}
	at := old.at.Edit()
	var deleted, added []dns.RR
	touched := map[string]bool{}
	for _, name := range gone {
		s, _ := at.Get(name)
		at.Delete(name)
		sec.sub(s)
		deleted = append(deleted, s.records()...)
		touched[name] = true
	}
	put := func(name string, s, was *secured) {
		if was != nil {
			sec.sub(was)
			deleted = append(deleted, was.records()...)
		}
		at.Set(name, s)
		sec.add(s)
		added = append(added, s.records()...)
		touched[name] = true
	}
	next := func(name string) string {
		i, _ := slices.BinarySearchFunc(sec.chain, name, CompareNames)
		return sec.chain[(i+1)%len(sec.chain)]
	}
	for name := range redo {
		was, _ := at.Get(name)
		s, err := z.secure(sg, name, next(name))
		if err != nil {
			return err
		}
		put(name, s, was)
	}
	for name := range neighbours {
		if redo[name] {
			continue
		}
		was, _ := at.Get(name)
		s, err := z.renewNSEC(sg, was, name, next(name))
		if err != nil {
			return err
		}
		if s != was {
			put(name, s, was)
		}
	}
	if refresh {
		for name, was := range old.at.All() {
			if redo[name] || touched[name] {
				continue
			}
			if was.due > sg.now {
				sec.due = min(sec.due, was.due)
				continue
			}
			s, err := z.secure(sg, name, next(name))
			if err != nil {
				return err
			}
			put(name, s, was)
		}
		for name := range touched {
			if s, ok := at.Get(name); ok {
				sec.due = min(sec.due, s.due)
			}
		}
	}
	sec.at = at.Map()
	for name := range touched {
		ch.Owners = append(ch.Owners, name)
	}
	ch.Owners = sortUnique(ch.Owners)
	ch.Deleted = append(ch.Deleted, deleted...)
	ch.Added = append(ch.Added, added...)
	z.sec = sec
	return nil
}

// holds reports whether name holds records in z (not an empty
// non-terminal, nor a name outside it).
func (z *Zone) holds(name string) bool {
	if name == z.Origin {
		return true
	}
	o, ok := z.owners.Get(name)
	return ok && len(o.units) > 0
}

// secure makes the DNSSEC records of name, whose successor in the chain
// is next: its NSEC record and the signatures of its RRsets.
func (z *Zone) secure(sg *signer, name, next string) (*secured, error) {
	due := ^uint32(0)
	var keys []dns.RR
	rrs := z.plainAt(name)
	if name == z.Origin {
		// The keys' TTL is the zone's, as its NS records have.
		keys = slices.Concat(sg.keys.DNSKEYs(z.SOA.Hdr.Ttl), sg.keys.Parent(z.SOA.Hdr.Ttl))
		rrs = append(rrs, keys...)
		slices.SortFunc(rrs, compareRR)
	}
	nsec := z.nsec(name, next, rrs)
	if name == z.Origin && sg.p.ZONEMD {
		// The ZONEMD record, made once the digest is (Sign).
		nsec.TypeBitMap = append(nsec.TypeBitMap, dns.TypeZONEMD)
		slices.Sort(nsec.TypeBitMap)
	}
	nsecSigs, nsecN, d, err := sg.sign(nil, []dns.RR{nsec})
	if err != nil {
		return nil, err
	}
	due = min(due, d)
	var others []byte
	othersN := 0
	for set := range rrsets(rrs) {
		if set[0].Header().Rrtype == dns.TypeSOA {
			continue // signed for each serial (Sign)
		}
		var n int
		if others, n, d, err = sg.sign(others, set); err != nil {
			return nil, err
		}
		othersN += n
		due = min(due, d)
	}
	if len(others) > 0 {
		others = pointerOwners(nil, others, packedNameLen(others))
	}
	return newSecured(keys, nsec, nsecSigs, nsecN, others, othersN, due)
}

// renewNSEC returns was with the NSEC record of name pointing to next,
// signed again, or was itself when it already does.
func (z *Zone) renewNSEC(sg *signer, was *secured, name, next string) (*secured, error) {
	old, _ := was.unpacked()
	if old.NextDomain == next {
		return was, nil
	}
	n := *old
	n.NextDomain = next
	sigs, sigsN, due, err := sg.sign(nil, []dns.RR{&n})
	if err != nil {
		return nil, err
	}
	// The other signatures are kept, after the NSEC proof.
	others := []byte(was.packed[was.proof:])
	othersN := int(was.n) - int(was.proofN)
	if othersN > 0 {
		due = min(due, was.due)
	}
	return newSecured(was.keys, &n, sigs, sigsN, others, othersN, due)
}

// nsec makes the NSEC record of name (RFC 4034 §4), whose records are
// rrs, with the negative TTL (RFC 9077).
func (z *Zone) nsec(name, next string, rrs []dns.RR) *dns.NSEC {
	types := []uint16{dns.TypeRRSIG, dns.TypeNSEC}
	for _, rr := range rrs {
		types = append(types, rr.Header().Rrtype)
	}
	slices.Sort(types)
	return &dns.NSEC{Hdr: hdr(name, dns.TypeNSEC, z.NegativeTTL()), NextDomain: next, TypeBitMap: slices.Compact(types)}
}

// plainAt returns the records at name without the DNSSEC ones.
func (z *Zone) plainAt(name string) []dns.RR {
	var out []dns.RR
	if name == z.Origin {
		out = append(out, dns.Copy(z.SOA)) // a copy, as unit.records says
	}
	o, ok := z.owners.Get(name)
	if ok {
		for _, key := range o.units {
			u, _ := z.units.Get(key)
			for _, rr := range u.records() {
				if rr.Header().Name == name {
					out = append(out, rr)
				}
			}
		}
	}
	if ok && len(o.units) > 1 || name == z.Origin {
		// Records of several units (or the SOA) merged: sorted. One
		// unit's are canonical already: comparing their data (as text)
		// was most of a signed zone's table build.
		out = canonical(out)
	}
	return out
}

// securedAt returns the DNSSEC records at name, the SOA's signatures
// included at the apex.
func (z *Zone) securedAt(name string) []dns.RR {
	if z.sec == nil {
		return nil
	}
	s, ok := z.sec.at.Get(name)
	if !ok {
		return nil
	}
	out := s.records()
	if name == z.Origin {
		out = append(out, z.sec.soa...)
		out = append(out, z.sec.zonemd...)
	}
	return out
}

// rrsets yields the RRsets of records in canonical order.
func rrsets(records []dns.RR) func(func([]dns.RR) bool) {
	return func(yield func([]dns.RR) bool) {
		for i := 0; i < len(records); {
			t := records[i].Header().Rrtype
			j := i + 1
			for j < len(records) && records[j].Header().Rrtype == t {
				j++
			}
			if !yield(records[i:j:j]) {
				return
			}
			i = j
		}
	}
}

// editChain returns chain without gone and with come, in canonical order.
func editChain(chain, gone, come []string) []string {
	drop := make(map[string]bool, len(gone))
	for _, n := range gone {
		drop[n] = true
	}
	out := make([]string, 0, len(chain)+len(come))
	for _, n := range chain {
		if !drop[n] {
			out = append(out, n)
		}
	}
	for _, n := range come {
		i, found := slices.BinarySearchFunc(out, n, CompareNames)
		if !found {
			out = slices.Insert(out, i, n)
		}
	}
	return out
}

// sortCanonical sorts names in canonical order (RFC 4034 §6.1), by a key
// made once per name: each label, from the last, followed by a zero byte.
func sortCanonical(names []string) {
	type keyed struct{ key, name string }
	ks := make([]keyed, len(names))
	for i, n := range names {
		ks[i] = keyed{canonicalKey(n), n}
	}
	slices.SortFunc(ks, func(a, b keyed) int { return cmp.Compare(a.key, b.key) })
	for i := range ks {
		names[i] = ks[i].name
	}
}

func canonicalKey(name string) string {
	labels := dns.SplitDomainName(name)
	var b strings.Builder
	b.Grow(len(name) + 1)
	for i := len(labels) - 1; i >= 0; i-- {
		b.WriteString(labels[i])
		b.WriteByte(0)
	}
	return b.String()
}

func sortUnique(s []string) []string {
	slices.Sort(s)
	return slices.Compact(s)
}

// eachSigned is EachName for a signed zone: every name's records with
// their DNSSEC records.
func (z *Zone) eachSigned(workers int, fn func(worker int, name string, records []dns.RR)) {
	names := z.Names()
	workers = max(workers, 1)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := w; i < len(names); i += workers {
				fn(w, names[i], z.RecordsAt(names[i]))
			}
		})
	}
	wg.Wait()
}
