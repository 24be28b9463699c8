package dnssec

import (
	"bytes"
	"crypto"
	"crypto/ecdh"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/miekg/dns"
)

// importFix says what to do with a key the publisher cannot sign with.
const importFix = "the publisher signs with ECDSA P-256 (algorithm 13) or Ed25519 (algorithm 15): make such a key (keymgr %[3]s generate algorithm=13, or algorithm=15; or dnssec-keygen -a ECDSAP256SHA256 %[3]s) and import it, or let serve make the zone's keys"

// ImportPEMFile makes a key of zone origin from the private key in the
// PEM file name (which its errors name), as Knot's keymgr keeps them
// (<kasp-db>/keys/<key id>.pem: PKCS#8 "PRIVATE KEY"; SEC1 "EC PRIVATE
// KEY" is read too), and writes it into dir in the files dnssec-keygen
// writes, as Load makes keys: the .private file (mode 0600) first, then
// the .key, each written whole or not at all. The key is ECDSA P-256
// (algorithm 13) or Ed25519 (15); sep makes it a key-signing key or CSK
// (flags 257), else a zone-signing key (256).
// It has no timing: published and signing from the start, as a zone's
// first keys (the timing Knot keeps in its database is not read).
//
// It refuses any other key, and a key already in dir (the same key tag,
// or the same key with the other role). The key returned is the one
// ReadKey reads back from the files written.
func ImportPEMFile(dir, origin, name string, sep bool) (*Key, error) {
	f, err := os.Open(name)
	if errors.Is(err, fs.ErrPermission) {
		return nil, fmt.Errorf("dnssec: %v: run the import as a user that can read it (Knot's key files are its user's and group's only), or copy it somewhere readable", err)
	} else if err != nil {
		return nil, fmt.Errorf("dnssec: %v", err)
	}
	f.Close()
	data, err := readBounded(name)
	if err != nil {
		return nil, err
	}
	return importPEM(dir, origin, name, data, sep)
}

func importPEM(dir, origin, what string, data []byte, sep bool) (*Key, error) {
	origin = dns.CanonicalName(origin)
	if !fileSafeName(origin) {
		return nil, fmt.Errorf("dnssec: %q is not a zone name key files can be named after (letters, digits, '-', '_' and dots)", origin)
	}
	signer, alg, err := parsePEMKey(what, origin, data)
	if err != nil {
		return nil, err
	}
	flags := uint16(dns.ZONE)
	if sep {
		flags |= dns.SEP
	}
	key := &dns.DNSKEY{
		Hdr:       dns.RR_Header{Name: origin, Rrtype: dns.TypeDNSKEY, Class: dns.ClassINET, Ttl: 3600},
		Flags:     flags,
		Protocol:  3,
		Algorithm: alg,
		PublicKey: publicKeyString(signer),
	}
	if key.PublicKey == "" {
		return nil, fmt.Errorf("dnssec: %s: no public key can be derived from its private key", what)
	}
	tag := key.KeyTag()
	// Under the directory's lock: a publisher making a key at the same
	// moment does not race the check below.
	unlock, err := lockKeys(dir, origin)
	if err != nil {
		return nil, err
	}
	defer unlock()
	base := filepath.Join(dir, fmt.Sprintf("K%s+%03d+%05d", origin, alg, tag))
	for _, ext := range []string{".key", ".private"} {
		if _, err := os.Lstat(base + ext); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("dnssec: %v", err)
		} else if err == nil {
			return nil, fmt.Errorf("dnssec: %s%s exists: key %d of %s is already in %s; to replace it, remove its .key and .private files first", base, ext, tag, origin, dir)
		}
	}
	// The same key with the other role has another tag (the flags are
	// part of it): two keys with one private half would be published.
	others, _ := filepath.Glob(filepath.Join(dir, "K"+escapeGlob(origin)+fmt.Sprintf("+%03d+*.key", alg)))
	for _, f := range others {
		if k, err := ReadKey(strings.TrimSuffix(f, ".key"), origin); err == nil && k.DNSKEY.PublicKey == key.PublicKey {
			return nil, fmt.Errorf("dnssec: the key of %s is already in %s as %s (flags %d): a key is imported once, with one role; to change its role, remove that key's .key and .private files first", what, dir, f, k.DNSKEY.Flags)
		}
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("dnssec: key directory: %v", err)
	}
	// As generate writes a key's files: the .private first, for a .key
	// without its .private is an error at the next Load.
	k := &Key{DNSKEY: key, File: base, signer: signer}
	created := time.Now()
	if err := k.writePrivate(created); err != nil {
		return nil, err
	}
	kind := "zone-signing"
	if sep {
		kind = "key-signing"
	}
	public := fmt.Sprintf("; This is a %s key, keyid %d, for %s\n; Created: %s\n%s\n", kind, tag, origin, created.UTC().Format(timeFormat), key.String())
	if err := writeFile(base+".key", []byte(public), 0o644); err != nil {
		os.Remove(base + ".private")
		return nil, err
	}
	read, err := ReadKey(base, origin)
	if err != nil {
		os.Remove(base + ".key")
		os.Remove(base + ".private")
		return nil, fmt.Errorf("dnssec: the key imported from %s does not read back: %v", what, err)
	}
	return read, nil
}

// fileSafeName reports whether a zone's name can go in a key file's name
// as it is: no path separator, nothing a shell or a zone file would
// quote.
func fileSafeName(origin string) bool {
	if _, ok := dns.IsDomainName(origin); !ok {
		return false
	}
	for _, c := range origin {
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '-', c == '_', c == '.':
		default:
			return false
		}
	}
	return origin == "." || !strings.HasPrefix(origin, ".")
}

// parsePEMKey reads the one private key of a PEM file and returns it with
// its DNSSEC algorithm, or says what the file holds instead and what to
// do.
func parsePEMKey(what, origin string, data []byte) (crypto.Signer, uint8, error) {
	var keys, others []*pem.Block
	for rest := data; ; {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		switch b.Type {
		case "PRIVATE KEY", "EC PRIVATE KEY", "RSA PRIVATE KEY", "DSA PRIVATE KEY", "ENCRYPTED PRIVATE KEY", "OPENSSH PRIVATE KEY":
			keys = append(keys, b)
		case "EC PARAMETERS":
			// openssl ecparam -genkey writes the curve before the key.
		default:
			others = append(others, b)
		}
	}
	switch {
	case len(keys) > 1:
		return nil, 0, fmt.Errorf("dnssec: %s holds %d private keys: import one key per file, as keymgr keeps them", what, len(keys))
	case len(keys) == 0 && len(others) > 0:
		return nil, 0, fmt.Errorf("dnssec: %s holds a %q PEM block, not a private key: give the private key's file (Knot keeps them in <kasp-db>/keys/<key id>.pem)", what, others[0].Type)
	case len(keys) == 0 && bytes.Contains(data, []byte("Private-key-format:")):
		return nil, 0, fmt.Errorf("dnssec: %s is a BIND private key file, not PEM: copy it and its .key file into the key directory as they are", what)
	case len(keys) == 0:
		return nil, 0, fmt.Errorf("dnssec: %s holds no PEM private key (no -----BEGIN PRIVATE KEY----- block): give the PKCS#8 PEM file of the key, as Knot keeps them in <kasp-db>/keys/<key id>.pem (a DER file: openssl pkey -inform DER -in FILE -out FILE.pem)", what)
	}
	b := keys[0]
	if _, ok := b.Headers["Proc-Type"]; ok || b.Type == "ENCRYPTED PRIVATE KEY" {
		return nil, 0, fmt.Errorf("dnssec: %s holds an encrypted private key: decrypt it first (openssl pkey -in FILE -out PLAIN.pem), then import PLAIN.pem", what)
	}
	var parsed any
	var err error
	switch b.Type {
	case "PRIVATE KEY":
		parsed, err = x509.ParsePKCS8PrivateKey(b.Bytes)
		if err != nil {
			return nil, 0, refuse(what, origin, pkcs8KeyType(b.Bytes), err)
		}
	case "EC PRIVATE KEY":
		parsed, err = x509.ParseECPrivateKey(b.Bytes)
		if err != nil {
			return nil, 0, refuse(what, origin, sec1KeyType(b.Bytes), err)
		}
	case "RSA PRIVATE KEY":
		return nil, 0, refuse(what, origin, "an RSA key", nil)
	case "DSA PRIVATE KEY":
		return nil, 0, refuse(what, origin, "a DSA key", nil)
	default:
		return nil, 0, fmt.Errorf("dnssec: %s holds an OpenSSH private key: give a PKCS#8 PEM file (ssh-keygen -p -m PKCS8 -f FILE rewrites it as one)", what)
	}
	switch k := parsed.(type) {
	case *ecdsa.PrivateKey:
		if k.Curve == elliptic.P256() {
			return k, dns.ECDSAP256SHA256, nil
		}
		kind := "an ECDSA " + k.Curve.Params().Name + " key"
		if k.Curve == elliptic.P384() {
			kind += " (DNSSEC algorithm 14)"
		}
		return nil, 0, refuse(what, origin, kind, nil)
	case ed25519.PrivateKey:
		return k, dns.ED25519, nil
	case *rsa.PrivateKey:
		return nil, 0, refuse(what, origin, fmt.Sprintf("an RSA key (%d bits)", k.N.BitLen()), nil)
	case *ecdh.PrivateKey:
		return nil, 0, refuse(what, origin, "an X25519 key (for key agreement, not signatures)", nil)
	}
	return nil, 0, refuse(what, origin, fmt.Sprintf("a key of type %T", parsed), nil)
}

// refuse is the error for a key the publisher does not sign with, or for
// a key that does not parse (err; kind is "" when not even its kind is
// known).
func refuse(what, origin, kind string, err error) error {
	switch {
	case err == nil:
		return fmt.Errorf("dnssec: %s holds %s: "+importFix, what, kind, origin)
	case kind == "":
		return fmt.Errorf("dnssec: %s: not a private key that can be read (%v): give the PKCS#8 PEM file of an ECDSA P-256 or Ed25519 key, as keymgr keeps them", what, err)
	case kind == keyAlgorithms[oidEd25519] || kind == "an ECDSA key on curve P-256":
		return fmt.Errorf("dnssec: %s holds %s that is damaged (%v): take the file again from where it was made", what, kind, err)
	}
	// A kind x509 does not read: the publisher does not sign with it.
	return refuse(what, origin, kind, nil)
}

const (
	oidECDSA   = "1.2.840.10045.2.1"
	oidEd25519 = "1.3.101.112"
)

// Names of the algorithms and curves a PKCS#8 or SEC1 key may be of, to
// say what a key the publisher refuses is.
var (
	keyAlgorithms = map[string]string{
		"1.2.840.113549.1.1.1":  "an RSA key",
		"1.2.840.113549.1.1.10": "an RSA-PSS key",
		"1.2.840.10040.4.1":     "a DSA key",
		oidECDSA:                "an ECDSA key",
		"1.3.101.110":           "an X25519 key (for key agreement, not signatures)",
		"1.3.101.111":           "an X448 key (for key agreement, not signatures)",
		oidEd25519:              "an Ed25519 key",
		"1.3.101.113":           "an Ed448 key (DNSSEC algorithm 16)",
		"1.2.643.7.1.1.1.1":     "a GOST R 34.10-2012 key (DNSSEC algorithm 23)",
	}
	curves = map[string]string{
		"1.2.840.10045.3.1.7":   "P-256",
		"1.3.132.0.33":          "P-224",
		"1.3.132.0.34":          "P-384",
		"1.3.132.0.35":          "P-521",
		"1.3.132.0.10":          "secp256k1",
		"1.3.36.3.3.2.8.1.1.7":  "brainpoolP256r1",
		"1.3.36.3.3.2.8.1.1.11": "brainpoolP384r1",
		"1.2.840.10045.3.1.1":   "P-192",
		"1.3.36.3.3.2.8.1.1.13": "brainpoolP512r1",
	}
)

// pkcs8KeyType names the key of a PKCS#8 structure that x509 does not
// read, from its algorithm (and curve) identifiers; "" when not even
// those parse.
func pkcs8KeyType(der []byte) string {
	var p struct {
		Version    int
		Algorithm  pkix.AlgorithmIdentifier
		PrivateKey []byte
	}
	if _, err := asn1.Unmarshal(der, &p); err != nil {
		return ""
	}
	oid := p.Algorithm.Algorithm.String()
	kind, ok := keyAlgorithms[oid]
	if !ok {
		return "a key of algorithm " + oid
	}
	if oid == oidECDSA {
		var curve asn1.ObjectIdentifier
		if _, err := asn1.Unmarshal(p.Algorithm.Parameters.FullBytes, &curve); err == nil {
			kind = "an ECDSA key on curve " + curveName(curve)
		}
	}
	return kind
}

// sec1KeyType names the key of a SEC1 EC private key that x509 does not
// read, from its curve; "" when it does not parse.
func sec1KeyType(der []byte) string {
	var k struct {
		Version    int
		PrivateKey []byte
		Curve      asn1.ObjectIdentifier `asn1:"optional,explicit,tag:0"`
	}
	if _, err := asn1.Unmarshal(der, &k); err != nil || len(k.Curve) == 0 {
		return ""
	}
	return "an ECDSA key on curve " + curveName(k.Curve)
}

func curveName(oid asn1.ObjectIdentifier) string {
	if name := curves[oid.String()]; name != "" {
		return name
	}
	return oid.String()
}
