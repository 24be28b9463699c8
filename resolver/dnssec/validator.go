// Package dnssec validates the answers of the dnsconfig resolver with
// DNSSEC, up to trust anchors (RFC 4033-4035, RFC 6840), so that a forged,
// stripped or stale config is refused whatever the network between a
// client and the zone's servers:
//
//	v, err := dnssec.New(anchors, dnssec.Options{})
//	b := resolver.NewBuilder(resolver.Options{Validator: v})
//
// It is a package of its own so that a client that does not validate
// does not link it (resolver's TestClientSize). It reads the records it
// needs from the wire (no DNS library) and checks signatures with the
// standard library: ECDSA P-256 and P-384 (13, 14), Ed25519 (15) and
// RSA/SHA-256 (8).
//
// Scope: the signer of an answer must be a zone with a trust anchor (a
// chain of DS records down from an anchor is not followed), and an answer
// synthesised from a wildcard is refused. Names under no anchor are not
// validated (insecure), as a validating resolver treats them.
package dnssec

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/binary"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/grpc-config-dns/grpc-config-dns/resolver/internal/dnswire"
)

// Record types and codes read here.
const (
	typeCNAME  uint16 = 5
	typeOPT    uint16 = 41
	typeDS     uint16 = 43
	typeRRSIG  uint16 = 46
	typeNSEC   uint16 = 47
	typeDNSKEY uint16 = 48

	classINET      = 1
	rcodeNameError = 3
)

// typeName is a record type's mnemonic, for messages.
func typeName(t uint16) string {
	switch t {
	case 1:
		return "A"
	case 28:
		return "AAAA"
	case 16:
		return "TXT"
	case typeCNAME:
		return "CNAME"
	case 6:
		return "SOA"
	case typeDNSKEY:
		return "DNSKEY"
	case typeNSEC:
		return "NSEC"
	}
	return fmt.Sprintf("TYPE%d", t)
}

// BogusError is an answer for a name under a trust anchor that does not
// validate: forged, stripped of its signatures, signed by an unknown key,
// expired, or without the proof of a negative answer. The resolver treats
// it as a failed lookup (gRFC A21): a running channel keeps its config, a
// new one gets the default, and its State counts the problem as "bogus".
type BogusError struct {
	// Name and Type are the question's.
	Name, Type string
	// Reason says what failed.
	Reason string
}

func (e *BogusError) Error() string {
	return fmt.Sprintf("bogus DNSSEC answer for %s %s: %s", e.Name, e.Type, e.Reason)
}

// Bogus marks the error for the resolver (resolver.Validator).
func (e *BogusError) Bogus() bool { return true }

// Options tune a Validator.
type Options struct {
	// Skew is the clock difference tolerated at both ends of a
	// signature's validity; 0 means a minute.
	Skew time.Duration
	// Now is the clock signatures are checked against; nil means
	// time.Now.
	Now func() time.Time
}

// Validator checks answers against trust anchors, and keeps the validated
// DNSKEY RRsets of the anchored zones. It implements resolver.Validator;
// one Validator may serve every channel of a process.
type Validator struct {
	anchors []*anchor // longest zone first
	skew    time.Duration
	now     func() time.Time

	mu   sync.Mutex
	keys map[string]*zoneKeys
}

// New returns a validator of the names under anchors (ParseAnchors,
// ReadAnchorFile).
func New(anchors []*Anchor, o Options) (*Validator, error) {
	if len(anchors) == 0 {
		return nil, fmt.Errorf("dnssec: no trust anchor: give DS or DNSKEY records, like the output of grpc-config-dns dnssec ds")
	}
	v := &Validator{anchors: slices.Clone(anchors), skew: o.Skew, now: o.Now}
	if v.skew == 0 {
		v.skew = time.Minute
	}
	if v.now == nil {
		v.now = time.Now
	}
	slices.SortStableFunc(v.anchors, func(a, b *anchor) int { return len(labels(b.zone)) - len(labels(a.zone)) })
	return v, nil
}

// zoneKeys is a validated DNSKEY RRset, usable until until.
type zoneKeys struct {
	keys  []dnskey
	until time.Time
}

type dnskey struct {
	flags uint16
	alg   uint8
	tag   uint16
	pub   []byte
	rdata []byte
}

// maxKeyCache bounds how long a validated DNSKEY RRset is used without
// being asked again, whatever its TTL.
const maxKeyCache = time.Hour

// anchorFor returns the trust anchor of the zone that holds name, or nil.
func (v *Validator) anchorFor(name string) *anchor {
	for _, a := range v.anchors {
		if isBelow(name, a.zone) {
			return a
		}
	}
	return nil
}

// isBelow reports whether name is zone or lies below it.
func isBelow(name, zone string) bool {
	name, zone = strings.ToLower(name), strings.ToLower(zone)
	return zone == "." || name == zone || strings.HasSuffix(name, "."+zone)
}

// Asker asks the nameservers of a lookup another question, returning
// their answer (a DNS message).
type Asker func(ctx context.Context, name string, qtype uint16) ([]byte, error)

// Validate checks msg, the answer (a DNS message) to qtype at name, asking
// the zone's DNSKEY records with ask when it does not hold them. It
// reports whether the answer was validated (false, and no error, for a
// name under no anchor) and when the first of its signatures expires; an
// answer that does not validate is a *BogusError.
func (v *Validator) Validate(ctx context.Context, msg []byte, name string, qtype uint16, ask func(ctx context.Context, name string, qtype uint16) ([]byte, error)) (secure bool, expires time.Time, err error) {
	an := v.anchorFor(name)
	if an == nil {
		return false, time.Time{}, nil
	}
	r, err := parseMessage(msg)
	if err != nil {
		return false, time.Time{}, &BogusError{Name: name, Type: typeName(qtype), Reason: "an answer that does not parse: " + err.Error()}
	}
	vd, err := v.verdict(ctx, ask, r, name, qtype, an)
	return vd.secure, vd.expires, err
}

// verdict is what validation found of an answer that passed it.
type verdict struct {
	secure  bool
	expires time.Time
}

// verdict validates r, the answer to qtype at name, under anchor an.
func (v *Validator) verdict(ctx context.Context, ask Asker, r *message, name string, qtype uint16, an *anchor) (verdict, error) {
	bogus := func(format string, args ...any) error {
		return &BogusError{Name: name, Type: typeName(qtype), Reason: fmt.Sprintf(format, args...)}
	}
	keys, err := v.zoneKeys(ctx, ask, an)
	if err != nil {
		return verdict{}, err
	}
	vd := verdict{secure: true}
	now := v.now()
	positive := false
	for _, rr := range r.answers {
		if strings.EqualFold(rr.name, name) && (rr.rtype == qtype || rr.rtype == typeCNAME) {
			positive = true
		}
	}
	sections := [][]record{r.answers}
	if !positive {
		sections = append(sections, r.authorities)
	}
	for _, sec := range sections {
		for _, set := range rrsets(sec) {
			if v.anchorFor(set[0].name) == nil {
				continue // beyond the anchors: insecure
			}
			exp, err := verifySet(set, sec, keys, an.zone, now, v.skew)
			if err != "" {
				return verdict{}, bogus("%s %s: %s", set[0].name, typeName(set[0].rtype), err)
			}
			if vd.expires.IsZero() || exp.Before(vd.expires) {
				vd.expires = exp
			}
		}
	}
	if positive {
		return vd, nil
	}
	return vd, denial(r, name, qtype, an.zone, bogus)
}

// rrsets groups the records of a section, but the signatures, by owner and
// type, in their order.
func rrsets(sec []record) [][]record {
	var out [][]record
	for _, rr := range sec {
		if rr.rtype == typeRRSIG || rr.rtype == typeOPT || rr.class != classINET {
			continue
		}
		i := slices.IndexFunc(out, func(s []record) bool { return s[0].rtype == rr.rtype && strings.EqualFold(s[0].name, rr.name) })
		if i < 0 {
			out = append(out, []record{rr})
		} else {
			out[i] = append(out[i], rr)
		}
	}
	return out
}

// denial checks the NSEC proof of a negative answer (RFC 4035 §5.4): for
// NXDOMAIN, an NSEC that covers the name and one that covers the
// wildcard at its closest encloser; for NODATA, the NSEC of the name
// without the type (or, at an empty non-terminal, one that covers it and
// leads below it). The NSEC records were verified with the rest.
func denial(r *message, name string, qtype uint16, zone string, bogus func(string, ...any) error) error {
	var nsecs []nsec
	for _, rr := range r.authorities {
		if rr.rtype == typeNSEC && rr.class == classINET {
			n, err := parseNSEC(rr)
			if err != nil {
				return bogus("NSEC of %s: %v", rr.name, err)
			}
			nsecs = append(nsecs, n)
		}
	}
	if len(nsecs) == 0 {
		return bogus("a negative answer without NSEC records: nothing proves the name or type absent")
	}
	covering := func(n string) *nsec {
		for i := range nsecs {
			if nsecs[i].covers(n) {
				return &nsecs[i]
			}
		}
		return nil
	}
	if r.rcode == rcodeNameError {
		c := covering(name)
		if c == nil {
			return bogus("NXDOMAIN, but no NSEC record covers the name")
		}
		ce := commonAncestor(name, c.owner)
		if a := commonAncestor(name, c.next); len(a) > len(ce) {
			ce = a
		}
		if !isBelow(ce, zone) {
			return bogus("NXDOMAIN, but the NSEC records lead outside zone %s", zone)
		}
		wild := "*." + ce
		if ce == "." {
			wild = "*."
		}
		if covering(wild) == nil {
			return bogus("NXDOMAIN, but no NSEC record proves that no wildcard %s answers instead", wild)
		}
		return nil
	}
	for _, n := range nsecs {
		if strings.EqualFold(n.owner, name) {
			if slices.Contains(n.types, qtype) || slices.Contains(n.types, typeCNAME) {
				return bogus("no %s record, but the name's NSEC lists the type", typeName(qtype))
			}
			return nil
		}
	}
	if c := covering(name); c != nil && isBelow(c.next, name) {
		return nil // an empty non-terminal
	}
	return bogus("no %s record, and no NSEC record proves it absent", typeName(qtype))
}

// nsec is an NSEC record read.
type nsec struct {
	owner, next string
	types       []uint16
}

// covers reports whether name sorts strictly between the NSEC's owner and
// its next name; the last NSEC of a zone (its next name the apex) covers
// every name after it.
func (n *nsec) covers(name string) bool {
	after := compareNames(n.owner, name) < 0
	if compareNames(n.owner, n.next) >= 0 {
		return after
	}
	return after && compareNames(name, n.next) < 0
}

func parseNSEC(rr record) (nsec, error) {
	next, end, err := dnswire.ReadName(rr.rdata, 0)
	if err != nil {
		return nsec{}, err
	}
	n := nsec{owner: rr.name, next: next}
	bm := rr.rdata[end:]
	for len(bm) > 0 {
		if len(bm) < 2 || int(bm[1]) > 32 || len(bm) < 2+int(bm[1]) {
			return nsec{}, errors.New("malformed type bitmap")
		}
		window, l := int(bm[0]), int(bm[1])
		for i, b := range bm[2 : 2+l] {
			for bit := range 8 {
				if b&(0x80>>bit) != 0 {
					n.types = append(n.types, uint16(window<<8|i*8+bit))
				}
			}
		}
		bm = bm[2+l:]
	}
	return n, nil
}

func labels(name string) []string { return dnswire.Labels(name) }

// compareNames orders names canonically (RFC 4034 §6.1): label by label
// from the right, each as lower-case bytes.
func compareNames(a, b string) int {
	la, lb := labels(a), labels(b)
	for i, j := len(la)-1, len(lb)-1; i >= 0 || j >= 0; i, j = i-1, j-1 {
		switch {
		case i < 0:
			return -1
		case j < 0:
			return 1
		}
		if c := strings.Compare(la[i], lb[j]); c != 0 {
			return c
		}
	}
	return 0
}

// commonAncestor is the longest name both a and b are at or below.
func commonAncestor(a, b string) string {
	la, lb := labels(a), labels(b)
	n := 0
	for n < len(la) && n < len(lb) && la[len(la)-1-n] == lb[len(lb)-1-n] {
		n++
	}
	if n == 0 {
		return "."
	}
	return strings.Join(la[len(la)-n:], ".") + "."
}

// zoneKeys returns the validated DNSKEY RRset of an anchored zone, asking
// for it when it is not cached.
func (v *Validator) zoneKeys(ctx context.Context, ask Asker, an *anchor) ([]dnskey, error) {
	now := v.now()
	v.mu.Lock()
	zk := v.keys[an.zone]
	v.mu.Unlock()
	if zk != nil && now.Before(zk.until) {
		return zk.keys, nil
	}
	bogus := func(format string, args ...any) error {
		return &BogusError{Name: an.zone, Type: "DNSKEY", Reason: fmt.Sprintf(format, args...)}
	}
	b, err := ask(ctx, an.zone, typeDNSKEY)
	if err != nil {
		return nil, fmt.Errorf("asking the DNSKEY records of %s to validate: %w", an.zone, err)
	}
	r, err := parseMessage(b)
	if err != nil {
		return nil, bogus("the DNSKEY answer does not parse: %v", err)
	}
	var set []record
	var keys []dnskey
	ttl := uint32(maxKeyCache / time.Second)
	for _, rr := range r.answers {
		if rr.rtype != typeDNSKEY || rr.class != classINET || !strings.EqualFold(rr.name, an.zone) {
			continue
		}
		k, err := parseDNSKEY(rr.rdata)
		if err != nil {
			return nil, bogus("%v", err)
		}
		set = append(set, rr)
		keys = append(keys, k)
		ttl = min(ttl, rr.ttl)
	}
	if len(keys) == 0 {
		return nil, bogus("the zone has a trust anchor but answers no DNSKEY record (an unsigned answer is not accepted under a trust anchor)")
	}
	// The RRset must be signed by a key the anchor vouches for.
	var trusted []dnskey
	for _, k := range keys {
		if an.vouches(an.zone, k) {
			trusted = append(trusted, k)
		}
	}
	if len(trusted) == 0 {
		return nil, bogus("no DNSKEY of the zone matches its trust anchor (key tags %v): the zone's keys changed, or the anchor is wrong", tags(keys))
	}
	if _, msg := verifySet(set, r.answers, trusted, an.zone, now, v.skew); msg != "" {
		return nil, bogus("the DNSKEY RRset: %s", msg)
	}
	var usable []dnskey
	for _, k := range keys {
		if k.flags&0x0100 != 0 { // a zone key
			usable = append(usable, k)
		}
	}
	until := now.Add(min(time.Duration(ttl)*time.Second, maxKeyCache))
	v.mu.Lock()
	if v.keys == nil {
		v.keys = map[string]*zoneKeys{}
	}
	v.keys[an.zone] = &zoneKeys{keys: usable, until: until}
	v.mu.Unlock()
	return usable, nil
}

func tags(keys []dnskey) []uint16 {
	out := make([]uint16, len(keys))
	for i, k := range keys {
		out[i] = k.tag
	}
	return out
}

func parseDNSKEY(rdata []byte) (dnskey, error) {
	if len(rdata) < 5 {
		return dnskey{}, errors.New("a DNSKEY record shorter than its fixed fields")
	}
	if rdata[2] != 3 {
		return dnskey{}, fmt.Errorf("a DNSKEY record of protocol %d (not 3)", rdata[2])
	}
	return dnskey{flags: binary.BigEndian.Uint16(rdata), alg: rdata[3], tag: keyTag(rdata), pub: rdata[4:], rdata: rdata}, nil
}

// keyTag computes the key tag of a DNSKEY's data (RFC 4034 Appendix B).
func keyTag(rdata []byte) uint16 {
	var ac uint32
	for i, b := range rdata {
		if i&1 == 0 {
			ac += uint32(b) << 8
		} else {
			ac += uint32(b)
		}
	}
	ac += ac >> 16 & 0xffff
	return uint16(ac)
}

// rrsig is the data of an RRSIG record.
type rrsig struct {
	covered    uint16
	alg        uint8
	labels     uint8
	origTTL    uint32
	expiration uint32
	inception  uint32
	tag        uint16
	signer     string
	head       []byte // the data up to the signature: what is signed first
	sig        []byte
}

func parseRRSIG(rdata []byte) (rrsig, error) {
	if len(rdata) < 19 {
		return rrsig{}, errors.New("an RRSIG record shorter than its fixed fields")
	}
	s := rrsig{
		covered: binary.BigEndian.Uint16(rdata), alg: rdata[2], labels: rdata[3],
		origTTL: binary.BigEndian.Uint32(rdata[4:]), expiration: binary.BigEndian.Uint32(rdata[8:]),
		inception: binary.BigEndian.Uint32(rdata[12:]), tag: binary.BigEndian.Uint16(rdata[16:]),
	}
	signer, end, err := dnswire.ReadName(rdata, 18)
	if err != nil {
		return rrsig{}, fmt.Errorf("the signer's name: %v", err)
	}
	s.signer, s.head, s.sig = signer, rdata[:end], rdata[end:]
	return s, nil
}

// verifySet checks that set (one RRset) has a valid signature in sec by
// one of keys, made by zone: it returns when the signature expires and
// "" when it has, else why not.
func verifySet(set []record, sec []record, keys []dnskey, zone string, now time.Time, skew time.Duration) (time.Time, string) {
	owner, rtype := set[0].name, set[0].rtype
	why := "no RRSIG record: the answer is not signed"
	for _, rr := range sec {
		if rr.rtype != typeRRSIG || !strings.EqualFold(rr.name, owner) {
			continue
		}
		s, err := parseRRSIG(rr.rdata)
		if err != nil {
			why = err.Error()
			continue
		}
		if s.covered != rtype {
			continue
		}
		switch {
		case !strings.EqualFold(s.signer, zone):
			why = fmt.Sprintf("signed by %s, not by %s, the zone of the trust anchor (a chain of trust below an anchor is not followed: add an anchor for %s)", s.signer, zone, s.signer)
			continue
		case int(s.labels) != len(labels(owner)):
			why = "the answer was made from a wildcard, which this resolver does not accept"
			continue
		case !inWindow(s, now, skew):
			why = fmt.Sprintf("the signature is valid from %s to %s, not now (%s): expired, replayed, or the clocks differ", sigTime(s.inception, now), sigTime(s.expiration, now), now.UTC().Format(time.RFC3339))
			continue
		}
		data := signedData(s, set)
		for _, k := range keys {
			if k.tag != s.tag || k.alg != s.alg {
				continue
			}
			if err := verifySig(k, data, s.sig); err == nil {
				return sigTime(s.expiration, now), ""
			} else {
				why = fmt.Sprintf("the signature by key %d does not verify: %v", k.tag, err)
			}
		}
		if !slices.ContainsFunc(keys, func(k dnskey) bool { return k.tag == s.tag && k.alg == s.alg }) {
			why = fmt.Sprintf("signed by key %d (algorithm %d), which is not among the zone's validated keys %v", s.tag, s.alg, tags(keys))
		}
	}
	return time.Time{}, why
}

// inWindow reports whether now lies in the signature's validity, widened
// by skew, its times read in serial arithmetic around now (RFC 4034
// §3.1.5).
func inWindow(s rrsig, now time.Time, skew time.Duration) bool {
	inc, exp := sigTime(s.inception, now), sigTime(s.expiration, now)
	return !now.Add(skew).Before(inc) && !now.Add(-skew).After(exp)
}

// sigTime is the time t (seconds, modulo 2^32) nearest to now.
func sigTime(t uint32, now time.Time) time.Time {
	n := uint32(now.Unix())
	d := int64(int32(t - n))
	return time.Unix(now.Unix()+d, 0)
}

// signedData is what the signature s of set signs (RFC 4034 §3.1.8.1):
// the RRSIG's data up to the signature, then each record in canonical
// form and order, with the original TTL.
func signedData(s rrsig, set []record) []byte {
	// The signer's name in canonical (lower-case) form.
	head := bytes.Clone(s.head)
	for i := 18; i < len(head) && head[i] != 0; i += int(head[i]) + 1 {
		lowerLabel(head[i+1 : min(i+1+int(head[i]), len(head))])
	}
	owner := wireLower(set[0].name)
	datas := make([][]byte, 0, len(set))
	for _, rr := range set {
		datas = append(datas, rr.rdata)
	}
	slices.SortFunc(datas, bytes.Compare)
	datas = slices.CompactFunc(datas, bytes.Equal)
	out := head
	for _, d := range datas {
		out = append(out, owner...)
		out = binary.BigEndian.AppendUint16(out, set[0].rtype)
		out = binary.BigEndian.AppendUint16(out, classINET)
		out = binary.BigEndian.AppendUint32(out, s.origTTL)
		out = binary.BigEndian.AppendUint16(out, uint16(len(d)))
		out = append(out, d...)
	}
	return out
}

func lowerLabel(b []byte) {
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
}

func wireLower(name string) []byte { return dnswire.WireLower(name) }

// verifySig checks a signature over data with key k.
func verifySig(k dnskey, data, sig []byte) error {
	switch k.alg {
	case 13, 14:
		curve, h, size := elliptic.P256(), crypto.SHA256, 32
		if k.alg == 14 {
			curve, h, size = elliptic.P384(), crypto.SHA384, 48
		}
		if len(k.pub) != 2*size || len(sig) != 2*size {
			return errors.New("key or signature of the wrong size")
		}
		pub, err := ecdsa.ParseUncompressedPublicKey(curve, append([]byte{4}, k.pub...))
		if err != nil {
			return err
		}
		var sum []byte
		if h == crypto.SHA256 {
			s := sha256.Sum256(data)
			sum = s[:]
		} else {
			s := sha512.Sum384(data)
			sum = s[:]
		}
		if !ecdsa.Verify(pub, sum, new(big.Int).SetBytes(sig[:size]), new(big.Int).SetBytes(sig[size:])) {
			return errors.New("wrong signature")
		}
		return nil
	case 15:
		if len(k.pub) != ed25519.PublicKeySize {
			return errors.New("an Ed25519 key of the wrong size")
		}
		if !ed25519.Verify(ed25519.PublicKey(k.pub), data, sig) {
			return errors.New("wrong signature")
		}
		return nil
	case 8:
		pub, err := rsaKey(k.pub)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(data)
		return rsa.VerifyPKCS1v15(pub, crypto.SHA256, sum[:], sig)
	}
	return fmt.Errorf("algorithm %d is not one this resolver validates (8, 13, 14, 15)", k.alg)
}

// rsaKey reads an RSA public key in DNSKEY form (RFC 3110 §2).
func rsaKey(b []byte) (*rsa.PublicKey, error) {
	if len(b) < 3 {
		return nil, errors.New("RSA key too short")
	}
	elen, off := int(b[0]), 1
	if elen == 0 {
		elen, off = int(binary.BigEndian.Uint16(b[1:])), 3
	}
	if elen == 0 || elen > 4 || off+elen >= len(b) {
		return nil, errors.New("RSA key with an exponent this resolver does not take")
	}
	e := 0
	for _, c := range b[off : off+elen] {
		e = e<<8 | int(c)
	}
	n := new(big.Int).SetBytes(b[off+elen:])
	if n.BitLen() < 1024 || n.BitLen() > 4096 {
		return nil, fmt.Errorf("an RSA key of %d bits (1024 to 4096 accepted)", n.BitLen())
	}
	return &rsa.PublicKey{N: n, E: e}, nil
}
