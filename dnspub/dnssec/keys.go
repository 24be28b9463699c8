// Package dnssec holds the signing keys of the publisher's zones: made,
// written and read in the files BIND's dnssec-keygen writes
// (Kexample.test.+013+12345.key and .private), so that operators can
// bring their own, and the signing of RRsets with them (RFC 4034, 4035).
//
// What is signed, when, and how a zone's names are chained with NSEC
// records is the zone package's: this one knows keys and signatures.
package dnssec

import (
	"bytes"
	"crypto"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/miekg/dns"
)

// Key is one signing key of a zone.
type Key struct {
	// DNSKEY is the key as published at the zone's apex.
	DNSKEY *dns.DNSKEY
	// File is the key's files' path without their extension.
	File string
	// Timing is when the key is published and signs (BIND's timing
	// metadata, kept in its .private file).
	Timing Timing
	signer crypto.Signer
}

// SEP reports whether k signs the DNSKEY RRset (a KSK or a CSK, flags
// 257): the key the parent's DS record points to.
func (k *Key) SEP() bool { return k.DNSKEY.Flags&dns.SEP != 0 }

// KeySet is the keys of one zone: those Load found, or those At says
// are published at a time. A set from At is immutable.
type KeySet struct {
	// Origin is the zone's name.
	Origin string
	// Keys are sorted by key tag: published in the DNSKEY RRset.
	Keys []*Key
	// active are the keys that sign (At); nil: all of Keys.
	active []*Key
	// parent are the SEP keys the parent is to name in DS records (At):
	// published long enough, not being retired; nil: every SEP key.
	parent []*Key
	// next is when the set At made changes next (zero: never).
	next time.Time
	// algorithm is the keys' algorithm (Load).
	algorithm uint8
}

// Options say which keys a zone is signed with.
type Options struct {
	// Algorithm is the DNSSEC algorithm number: 13 or 15.
	Algorithm uint8
	// SplitKeys asks for a KSK and a ZSK; else one CSK.
	SplitKeys bool
	// Generate makes the keys missing from the directory (and writes
	// them there); else a zone without keys is an error.
	Generate bool
}

// Load reads the keys of zone origin from dir: every pair of files
// K<origin>+<algorithm>+<tag>.key and .private of the wanted algorithm.
// When there are none (or, with SplitKeys, no key of one kind) and
// Generate is set, it makes them and writes them there (the private key
// with mode 0600, written whole or not at all) before returning them.
func Load(dir, origin string, o Options) (*KeySet, error) {
	origin = dns.CanonicalName(origin)
	if o.Algorithm != dns.ECDSAP256SHA256 && o.Algorithm != dns.ED25519 {
		return nil, fmt.Errorf("dnssec: zone %s: algorithm %d is not one the publisher signs with (13 or 15)", origin, o.Algorithm)
	}
	if o.Generate {
		unlock, err := lockKeys(dir, origin)
		if err != nil {
			return nil, err
		}
		defer unlock()
	}
	ks := &KeySet{Origin: origin, algorithm: o.Algorithm}
	if err := ks.Reload(dir); err != nil {
		return nil, err
	}
	sep, zsk := 0, 0
	for _, k := range ks.Keys {
		if k.SEP() {
			sep++
		} else {
			zsk++
		}
	}
	var want []uint16
	switch {
	case sep == 0 && zsk > 0:
		return nil, fmt.Errorf("dnssec: zone %s: the keys in %s are all zone-signing keys (flags 256): add a key-signing key (dnssec-keygen -f KSK), or remove them to have keys made", origin, dir)
	case sep == 0 && o.SplitKeys:
		want = []uint16{dns.ZONE | dns.SEP, dns.ZONE}
	case sep == 0:
		want = []uint16{dns.ZONE | dns.SEP}
	case o.SplitKeys && zsk == 0:
		want = []uint16{dns.ZONE}
	}
	if len(want) > 0 && !o.Generate {
		return nil, fmt.Errorf("dnssec: zone %s has no signing keys in %s: make them with dnssec-keygen -a %s %s (and -f KSK for a key-signing key), or let serve make them", origin, dir, dns.AlgorithmToString[o.Algorithm], origin)
	}
	for _, flags := range want {
		k, err := generate(dir, origin, o.Algorithm, flags, Timing{})
		if err != nil {
			return nil, err
		}
		ks.Keys = append(ks.Keys, k)
	}
	slices.SortFunc(ks.Keys, func(a, b *Key) int { return int(a.DNSKEY.KeyTag()) - int(b.DNSKEY.KeyTag()) })
	return ks, nil
}

// Reload reads the keys of a set from Load again from dir: those another
// publisher of the store made, and timing an operator wrote (dnssec
// ds-seen, dnssec-settime).
func (ks *KeySet) Reload(dir string) error {
	pattern := filepath.Join(dir, "K"+escapeGlob(ks.Origin)+fmt.Sprintf("+%03d+*.key", ks.algorithm))
	files, err := filepath.Glob(pattern)
	if err != nil {
		return fmt.Errorf("dnssec: zone %s: %v", ks.Origin, err)
	}
	keys := make([]*Key, 0, len(files))
	for _, f := range files {
		k, err := ReadKey(strings.TrimSuffix(f, ".key"), ks.Origin)
		if err != nil {
			return err
		}
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b *Key) int { return int(a.DNSKEY.KeyTag()) - int(b.DNSKEY.KeyTag()) })
	ks.Keys = keys
	return nil
}

// escapeGlob escapes the characters filepath.Match treats specially.
func escapeGlob(s string) string {
	r := strings.NewReplacer(`*`, `\*`, `?`, `\?`, `[`, `\[`, `\`, `\\`)
	return r.Replace(s)
}

// ReadKey reads the key in files base.key and base.private, which must
// be a DNSKEY of zone origin (any origin when it is "").
func ReadKey(base, origin string) (*Key, error) {
	pub, err := readBounded(base + ".key")
	if err != nil {
		return nil, err
	}
	var key *dns.DNSKEY
	zp := dns.NewZoneParser(strings.NewReader(string(pub)), "", base+".key")
	for rr, ok := zp.Next(); ok; rr, ok = zp.Next() {
		if k, isKey := rr.(*dns.DNSKEY); isKey {
			if key != nil {
				return nil, fmt.Errorf("dnssec: %s.key holds more than one DNSKEY record: keep one key per file, as dnssec-keygen writes", base)
			}
			key = k
		}
	}
	if err := zp.Err(); err != nil {
		return nil, fmt.Errorf("dnssec: %s.key: %v", base, err)
	}
	if key == nil {
		return nil, fmt.Errorf("dnssec: %s.key holds no DNSKEY record", base)
	}
	key.Hdr.Name = dns.CanonicalName(key.Hdr.Name)
	if origin != "" && key.Hdr.Name != origin {
		return nil, fmt.Errorf("dnssec: %s.key is a key of %s, not of zone %s", base, key.Hdr.Name, origin)
	}
	if key.Protocol != 3 || key.Flags&dns.ZONE == 0 || key.Flags&^(dns.ZONE|dns.SEP) != 0 {
		return nil, fmt.Errorf("dnssec: %s.key: flags %d protocol %d: a zone key has flags 256 or 257 and protocol 3", base, key.Flags, key.Protocol)
	}
	priv, err := readBounded(base + ".private")
	if err != nil {
		return nil, err
	}
	p, err := key.ReadPrivateKey(strings.NewReader(string(priv)), base+".private")
	if err != nil {
		return nil, fmt.Errorf("dnssec: %s.private: %v", base, err)
	}
	signer, ok := p.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("dnssec: %s.private: not a key the publisher can sign with", base)
	}
	if !samePublic(key, signer) {
		return nil, fmt.Errorf("dnssec: %s.private is not the private key of %s.key", base, base)
	}
	return &Key{DNSKEY: key, File: base, Timing: parseTiming(string(priv)), signer: signer}, nil
}

// samePublic reports whether signer's public key is the one key holds.
func samePublic(key *dns.DNSKEY, signer crypto.Signer) bool {
	probe := &dns.DNSKEY{Hdr: key.Hdr, Flags: key.Flags, Protocol: key.Protocol, Algorithm: key.Algorithm}
	switch key.Algorithm {
	case dns.ECDSAP256SHA256, dns.ED25519:
	default:
		return false
	}
	probe.PublicKey = publicKeyString(signer)
	return probe.PublicKey != "" && probe.PublicKey == key.PublicKey
}

// readBounded reads a key file, refusing anything but a small regular
// file: a key file is a few hundred bytes.
func readBounded(name string) ([]byte, error) {
	fi, err := os.Stat(name)
	if err != nil {
		return nil, fmt.Errorf("dnssec: %v", err)
	}
	if !fi.Mode().IsRegular() || fi.Size() > 64<<10 {
		return nil, fmt.Errorf("dnssec: %s is not a key file (a small regular file)", name)
	}
	b, err := os.ReadFile(name)
	if err != nil {
		return nil, fmt.Errorf("dnssec: %v", err)
	}
	return b, nil
}

// generate makes a key of zone origin and writes its files into dir.
func generate(dir, origin string, alg uint8, flags uint16, tm Timing) (*Key, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("dnssec: key directory: %v", err)
	}
	key := &dns.DNSKEY{
		Hdr:       dns.RR_Header{Name: origin, Rrtype: dns.TypeDNSKEY, Class: dns.ClassINET, Ttl: 3600},
		Flags:     flags,
		Protocol:  3,
		Algorithm: alg,
	}
	p, err := key.Generate(256)
	if err != nil {
		return nil, fmt.Errorf("dnssec: zone %s: making a key: %v", origin, err)
	}
	signer := p.(crypto.Signer)
	base := filepath.Join(dir, fmt.Sprintf("K%s+%03d+%05d", origin, alg, key.KeyTag()))
	kind := "zone-signing"
	if flags&dns.SEP != 0 {
		kind = "key-signing"
	}
	// A zone's first keys have no timing: published and active from the
	// start (Roll starts a rollover's clock when one is asked for).
	created := time.Now()
	now := created.UTC().Format(timeFormat)
	k := &Key{DNSKEY: key, File: base, Timing: tm, signer: signer}
	// The private file first: a .key without its .private is an error
	// at the next Load, a .private alone is ignored.
	if err := k.writePrivate(created); err != nil {
		return nil, err
	}
	public := fmt.Sprintf("; This is a %s key, keyid %d, for %s\n; Created: %s\n%s\n", kind, key.KeyTag(), origin, now, key.String())
	if err := writeFile(base+".key", []byte(public), 0o644); err != nil {
		return nil, err
	}
	return k, nil
}

// writeFile writes name whole or not at all: a temporary file in the
// same directory, synced, renamed over name, the directory synced.
func writeFile(name string, data []byte, mode fs.FileMode) error {
	dir := filepath.Dir(name)
	f, err := os.CreateTemp(dir, ".key-*")
	if err != nil {
		return fmt.Errorf("dnssec: %v", err)
	}
	tmp := f.Name()
	err = f.Chmod(mode)
	if err == nil {
		_, err = f.Write(data)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, name)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("dnssec: writing %s: %v", name, err)
	}
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// DNSKEYs returns the zone's DNSKEY records with TTL ttl.
func (ks *KeySet) DNSKEYs(ttl uint32) []dns.RR {
	out := make([]dns.RR, len(ks.Keys))
	for i, k := range ks.Keys {
		c := *k.DNSKEY
		c.Hdr.Ttl = ttl
		out[i] = &c
	}
	return out
}

// DS returns the DS records (SHA-256, RFC 4509) of the zone's SEP keys
// the parent zone is to publish: during a rollover (Rollover.SEPLifetime)
// the old and the new key's, then the new key's alone.
func (ks *KeySet) DS(ttl uint32) []*dns.DS {
	var out []*dns.DS
	for _, k := range ks.parentKeys() {
		ds := k.DNSKEY.ToDS(dns.SHA256)
		ds.Hdr.Ttl = ttl
		out = append(out, ds)
	}
	return out
}

// parentKeys are the keys DS names.
func (ks *KeySet) parentKeys() []*Key {
	if ks.parent != nil {
		return ks.parent
	}
	var out []*Key
	for _, k := range ks.Keys {
		if k.SEP() && k.Timing.Delete.IsZero() {
			out = append(out, k)
		}
	}
	return out
}

// Parent returns the CDS and CDNSKEY records of the zone's SEP keys
// (RFC 7344): the DS and DNSKEY a parent that polls its children copies.
func (ks *KeySet) Parent(ttl uint32) []dns.RR {
	var out []dns.RR
	for _, ds := range ks.DS(ttl) {
		out = append(out, ds.ToCDS())
	}
	for _, k := range ks.parentKeys() {
		c := k.DNSKEY.ToCDNSKEY()
		c.Hdr.Ttl = ttl
		out = append(out, c)
	}
	return out
}

// Tags returns the key tags, for logs and to tell key sets apart.
func (ks *KeySet) Tags() []uint16 {
	out := make([]uint16, len(ks.Keys))
	for i, k := range ks.Keys {
		out[i] = k.DNSKEY.KeyTag()
	}
	return out
}

// Sign returns the RRSIG records of rrset (one RRset: one owner, type
// and class) valid from inception to expiration (Unix seconds): by every
// published SEP key for the DNSKEY RRset (during a rollover, the parent
// may name either), else by every zone-signing key that signs (the SEP
// keys that sign when there is none: a CSK). It is SignPacked, unpacked.
func (ks *KeySet) Sign(rrset []dns.RR, inception, expiration uint32) ([]dns.RR, error) {
	b, n, err := ks.SignPacked(nil, rrset, inception, expiration)
	if err != nil {
		return nil, err
	}
	out := make([]dns.RR, 0, n)
	for off := 0; off < len(b); {
		rr, next, err := dns.UnpackRR(b, off)
		if err != nil {
			return nil, fmt.Errorf("dnssec: a signature packed wrong: %v", err)
		}
		out = append(out, rr)
		off = next
	}
	return out, nil
}

// SignPacked appends to dst the RRSIG records Sign makes, packed with
// uncompressed names, and returns how many. It signs the records' wire
// form as RFC 4034 §3.1.8.1 says (the names of a zone are lower case),
// with no parsed record made: a zone of 100 000 services makes 400 000
// signatures.
func (ks *KeySet) SignPacked(dst []byte, rrset []dns.RR, inception, expiration uint32) ([]byte, int, error) {
	if len(rrset) == 0 {
		return dst, 0, errors.New("dnssec: signing an empty RRset")
	}
	h := rrset[0].Header()
	owner, err := wireName(h.Name)
	if err != nil {
		return dst, 0, err
	}
	signer, err := wireName(ks.Origin)
	if err != nil {
		return dst, 0, err
	}
	// Each record's data, in canonical order.
	var buf []byte
	datas := make([][]byte, 0, len(rrset))
	for _, rr := range rrset {
		at := len(buf)
		buf = slices.Grow(buf, dns.Len(rr)+16)[:at+dns.Len(rr)+16]
		n, err := dns.PackRR(rr, buf, at, nil, false)
		if err != nil {
			return dst, 0, fmt.Errorf("dnssec: signing %s %s: %v", h.Name, dns.TypeToString[h.Rrtype], err)
		}
		buf = buf[:n]
		datas = append(datas, buf[at+len(owner)+10:n])
	}
	slices.SortFunc(datas, bytes.Compare)
	datas = slices.CompactFunc(datas, bytes.Equal)
	labels := dns.CountLabel(h.Name)
	if strings.HasPrefix(h.Name, "*.") {
		labels--
	}
	signers := ks.signers()
	if h.Rrtype == dns.TypeDNSKEY {
		signers = ks.Keys
	}
	hasZSK := slices.ContainsFunc(signers, func(k *Key) bool { return !k.SEP() })
	n := 0
	for _, k := range signers {
		if h.Rrtype == dns.TypeDNSKEY && !k.SEP() || h.Rrtype != dns.TypeDNSKEY && k.SEP() && hasZSK {
			continue
		}
		// The RRSIG's data up to the signature, then the records.
		head := binary.BigEndian.AppendUint16(nil, h.Rrtype)
		head = append(head, k.DNSKEY.Algorithm, byte(labels))
		head = binary.BigEndian.AppendUint32(head, h.Ttl)
		head = binary.BigEndian.AppendUint32(head, expiration)
		head = binary.BigEndian.AppendUint32(head, inception)
		head = binary.BigEndian.AppendUint16(head, k.DNSKEY.KeyTag())
		head = append(head, signer...)
		data := slices.Clone(head)
		for _, d := range datas {
			data = append(data, owner...)
			data = binary.BigEndian.AppendUint16(data, h.Rrtype)
			data = binary.BigEndian.AppendUint16(data, h.Class)
			data = binary.BigEndian.AppendUint32(data, h.Ttl)
			data = binary.BigEndian.AppendUint16(data, uint16(len(d)))
			data = append(data, d...)
		}
		sig, err := k.sign(data)
		if err != nil {
			return dst, 0, fmt.Errorf("dnssec: signing %s %s: %v", h.Name, dns.TypeToString[h.Rrtype], err)
		}
		dst = append(dst, owner...)
		dst = binary.BigEndian.AppendUint16(dst, dns.TypeRRSIG)
		dst = binary.BigEndian.AppendUint16(dst, h.Class)
		dst = binary.BigEndian.AppendUint32(dst, h.Ttl)
		dst = binary.BigEndian.AppendUint16(dst, uint16(len(head)+len(sig)))
		dst = append(dst, head...)
		dst = append(dst, sig...)
		n++
	}
	return dst, n, nil
}

// sign signs data as the key's algorithm says, the signature in DNSKEY
// form: r and s of 32 bytes each for ECDSA P-256 (RFC 6605), 64 bytes for
// Ed25519 (RFC 8080).
func (k *Key) sign(data []byte) ([]byte, error) {
	switch k.DNSKEY.Algorithm {
	case dns.ECDSAP256SHA256:
		sum := sha256.Sum256(data)
		// No random source: RFC 6979. The same data signed with the same
		// key gives the same signature, on every publisher of a store.
		der, err := k.signer.Sign(nil, sum[:], crypto.SHA256)
		if err != nil {
			return nil, err
		}
		return rawECDSA(der, 32)
	case dns.ED25519:
		return k.signer.Sign(nil, data, crypto.Hash(0))
	}
	return nil, fmt.Errorf("algorithm %d is not one the publisher signs with", k.DNSKEY.Algorithm)
}

// rawECDSA turns an ASN.1 ECDSA signature (SEQUENCE of INTEGER r and s)
// into r and s, each size bytes.
func rawECDSA(der []byte, size int) ([]byte, error) {
	bad := errors.New("an ECDSA signature that is not DER")
	if len(der) < 8 || der[0] != 0x30 || int(der[1]) != len(der)-2 {
		return nil, bad
	}
	out := make([]byte, 2*size)
	rest := der[2:]
	for i := range 2 {
		if len(rest) < 2 || rest[0] != 0x02 || int(rest[1])+2 > len(rest) {
			return nil, bad
		}
		v := rest[2 : 2+int(rest[1])]
		for len(v) > 0 && v[0] == 0 {
			v = v[1:]
		}
		if len(v) > size {
			return nil, bad
		}
		copy(out[(i+1)*size-len(v):(i+1)*size], v)
		rest = rest[2+int(rest[1]):]
	}
	return out, nil
}

// wireName is a name in lower-case wire format.
func wireName(name string) ([]byte, error) {
	b := make([]byte, 256)
	n, err := dns.PackDomainName(dns.CanonicalName(name), b, 0, nil, false)
	if err != nil {
		return nil, fmt.Errorf("dnssec: name %q: %v", name, err)
	}
	return b[:n], nil
}

// Find reads every key of zone origin in dir, of any algorithm, sorted
// by key tag: what `dnssec ds` prints the DS records of.
func Find(dir, origin string) ([]*Key, error) {
	origin = dns.CanonicalName(origin)
	files, err := filepath.Glob(filepath.Join(dir, "K"+escapeGlob(origin)+"+*.key"))
	if err != nil {
		return nil, fmt.Errorf("dnssec: zone %s: %v", origin, err)
	}
	var out []*Key
	for _, f := range files {
		k, err := ReadKey(strings.TrimSuffix(f, ".key"), origin)
		if err != nil {
			return nil, err
		}
		out = append(out, k)
	}
	slices.SortFunc(out, func(a, b *Key) int { return int(a.DNSKEY.KeyTag()) - int(b.DNSKEY.KeyTag()) })
	return out, nil
}
