package dnssec

import (
	"crypto"
	"crypto/ecdh"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// signs checks that k signs an RRset and, for a SEP key, the DNSKEY
// RRset, and that miekg/dns verifies the signatures with the key's
// DNSKEY.
func signs(t *testing.T, k *Key) {
	t.Helper()
	ks := &KeySet{Origin: k.DNSKEY.Hdr.Name, Keys: []*Key{k}}
	txt := &dns.TXT{Hdr: dns.RR_Header{Name: "_grpc_config.echo." + ks.Origin, Rrtype: dns.TypeTXT, Class: dns.ClassINET, Ttl: 30}, Txt: []string{"grpc_config=[]"}}
	rrsets := [][]dns.RR{{txt}}
	if k.SEP() {
		rrsets = append(rrsets, ks.DNSKEYs(3600))
	}
	for _, rrset := range rrsets {
		sigs, err := ks.Sign(rrset, 1_800_000_000, 1_900_000_000)
		if err != nil || len(sigs) != 1 {
			t.Fatalf("key %d signing %v: %v %v", k.DNSKEY.KeyTag(), rrset[0].Header(), sigs, err)
		}
		sig := sigs[0].(*dns.RRSIG)
		if sig.KeyTag != k.DNSKEY.KeyTag() || sig.Algorithm != k.DNSKEY.Algorithm {
			t.Errorf("signature %v of key %d", sig, k.DNSKEY.KeyTag())
		}
		if err := sig.Verify(k.DNSKEY, rrset); err != nil {
			t.Errorf("key %d: the signature of %s does not verify: %v", k.DNSKEY.KeyTag(), dns.TypeToString[rrset[0].Header().Rrtype], err)
		}
	}
}

// TestImportKeymgrPEM imports the keys Knot DNS 3.2.6's keymgr made
// (testdata/knot: a CSK of algorithm 13, whose private scalar Knot
// writes with a leading zero byte, and a ZSK of algorithm 15): the DNSKEY
// and DS records are those keymgr printed for them, the files are read
// back by ReadKey and Load, and the keys sign.
func TestImportKeymgrPEM(t *testing.T) {
	expected, _ := filepath.Glob("testdata/knot/*.keymgr")
	if len(expected) != 2 {
		t.Fatalf("testdata/knot: %v", expected)
	}
	for _, exp := range expected {
		var want *dns.DNSKEY
		var ds []*dns.DS
		text, err := os.ReadFile(exp)
		if err != nil {
			t.Fatal(err)
		}
		zp := dns.NewZoneParser(strings.NewReader("$TTL 3600\n"+string(text)), "", exp)
		for rr, ok := zp.Next(); ok; rr, ok = zp.Next() {
			switch r := rr.(type) {
			case *dns.DNSKEY:
				want = r
			case *dns.DS:
				ds = append(ds, r)
			}
		}
		if err := zp.Err(); err != nil || want == nil || len(ds) != 2 {
			t.Fatalf("%s: %v %v %v", exp, want, ds, err)
		}
		pemFile := strings.TrimSuffix(exp, ".keymgr") + ".pem"
		dir := t.TempDir()
		k, err := ImportPEMFile(dir, "example.test", pemFile, want.Flags&dns.SEP != 0)
		if err != nil {
			t.Fatal(err)
		}
		got := k.DNSKEY
		if got.Hdr.Name != want.Hdr.Name || got.Flags != want.Flags || got.Protocol != want.Protocol || got.Algorithm != want.Algorithm || got.PublicKey != want.PublicKey {
			t.Errorf("%s: imported %v\nkeymgr says %v", pemFile, got, want)
		}
		for _, d := range ds {
			mine := got.ToDS(d.DigestType)
			if mine == nil || mine.KeyTag != d.KeyTag || mine.Algorithm != d.Algorithm || !strings.EqualFold(mine.Digest, d.Digest) {
				t.Errorf("%s: DS %v, keymgr says %v", pemFile, mine, d)
			}
		}
		wantBase := filepath.Join(dir, fmt.Sprintf("Kexample.test.+%03d+%05d", want.Algorithm, ds[0].KeyTag))
		if k.File != wantBase {
			t.Errorf("files %s, want %s", k.File, wantBase)
		}
		if fi, err := os.Stat(k.File + ".private"); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s.private: %v %v", k.File, fi, err)
		}
		if fi, err := os.Stat(k.File + ".key"); err != nil || fi.Mode().Perm() != 0o644 {
			t.Errorf("%s.key: %v %v", k.File, fi, err)
		}
		signs(t, k)
		again, err := ReadKey(k.File, "example.test.")
		if err != nil || again.DNSKEY.String() != want.String() || !again.Timing.Published(time.Now()) || !again.Timing.Active(time.Now()) {
			t.Errorf("ReadKey: %v %v %+v", again, err, again.Timing)
		}
		if k.SEP() {
			// A CSK: the zone is signed with it and no key is made.
			ks, err := Load(dir, "example.test.", Options{Algorithm: want.Algorithm})
			if err != nil || len(ks.Keys) != 1 || ks.Keys[0].DNSKEY.KeyTag() != ds[0].KeyTag {
				t.Fatalf("Load: %v %v", ks, err)
			}
			if d := ks.DS(3600); len(d) != 1 || !strings.EqualFold(d[0].Digest, ds[0].Digest) {
				t.Errorf("KeySet.DS: %v", d)
			}
		}
	}
}

func pemOf(t testing.TB, typ string, der []byte) []byte {
	t.Helper()
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

func pkcs8(t testing.TB, k any) []byte {
	t.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	return pemOf(t, "PRIVATE KEY", der)
}

// fieldNames is the shape of a key file: its lines with the values
// left out, to compare the files of an imported key with those generate
// writes.
func fieldNames(text string) string {
	re := regexp.MustCompile(`(?m)^(; This is a [a-z-]+ key, keyid |; Created: |[A-Za-z-]+:|example\.test\.\s+\d+\s+IN\s+DNSKEY\s+\d+ 3 ).*$`)
	return re.ReplaceAllString(text, "$1")
}

// TestImportPEMGenerated imports keys made here, PKCS#8 and SEC1 (with
// the EC PARAMETERS block openssl ecparam writes before the key), as a
// KSK/CSK and as a ZSK: the key is the PEM's, the flags the role's, and
// the files are shaped as those of a key Load makes.
func TestImportPEMGenerated(t *testing.T) {
	p256, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	_, ed, _ := ed25519.GenerateKey(rand.Reader)
	sec1, err := x509.MarshalECPrivateKey(p256)
	if err != nil {
		t.Fatal(err)
	}
	params, _ := asn1.Marshal(asn1.ObjectIdentifier{1, 2, 840, 10045, 3, 1, 7})
	ref := t.TempDir()
	made, err := Load(ref, "example.test.", Options{Algorithm: 13, SplitKeys: true, Generate: true})
	if err != nil {
		t.Fatal(err)
	}
	shapes := map[bool][2]string{}
	for _, k := range made.Keys {
		pub, _ := os.ReadFile(k.File + ".key")
		priv, _ := os.ReadFile(k.File + ".private")
		shapes[k.SEP()] = [2]string{fieldNames(string(pub)), fieldNames(string(priv))}
	}
	for _, tc := range []struct {
		name   string
		pem    []byte
		alg    uint8
		signer crypto.Signer
	}{
		{"P-256 PKCS#8", pkcs8(t, p256), 13, p256},
		{"P-256 SEC1", append(pemOf(t, "EC PARAMETERS", params), pemOf(t, "EC PRIVATE KEY", sec1)...), 13, p256},
		{"Ed25519 PKCS#8", pkcs8(t, ed), 15, ed},
	} {
		for _, sep := range []bool{true, false} {
			dir := filepath.Join(t.TempDir(), "keys") // made
			k, err := importPEM(dir, "Example.Test", "the PEM data", tc.pem, sep)
			if err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			wantFlags := uint16(256)
			if sep {
				wantFlags = 257
			}
			if k.DNSKEY.Hdr.Name != "example.test." || k.DNSKEY.Algorithm != tc.alg || k.DNSKEY.Flags != wantFlags || k.DNSKEY.Protocol != 3 || k.DNSKEY.PublicKey != publicKeyString(tc.signer) {
				t.Errorf("%s sep=%v: %v", tc.name, sep, k.DNSKEY)
			}
			if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
				t.Errorf("%s: key directory %v %v", tc.name, fi, err)
			}
			pub, _ := os.ReadFile(k.File + ".key")
			priv, _ := os.ReadFile(k.File + ".private")
			if got, want := fieldNames(string(pub)), shapes[sep][0]; got != want {
				t.Errorf("%s sep=%v: .key shaped\n%s\nnot as generate writes it:\n%s", tc.name, sep, got, want)
			}
			if got, want := fieldNames(string(priv)), shapes[sep][1]; got != want {
				t.Errorf("%s sep=%v: .private shaped\n%s\nnot as generate writes it:\n%s", tc.name, sep, got, want)
			}
			signs(t, k)
		}
	}
}

// ed448PKCS8 is a PKCS#8 structure of an Ed448 key, which x509 does not
// read (RFC 8410).
func ed448PKCS8(t *testing.T) []byte {
	inner, _ := asn1.Marshal(make([]byte, 57))
	der, err := asn1.Marshal(struct {
		Version    int
		Algorithm  pkix.AlgorithmIdentifier
		PrivateKey []byte
	}{0, pkix.AlgorithmIdentifier{Algorithm: asn1.ObjectIdentifier{1, 3, 101, 113}}, inner})
	if err != nil {
		t.Fatal(err)
	}
	return pemOf(t, "PRIVATE KEY", der)
}

// secp256k1SEC1 is a SEC1 key on a curve x509 does not read.
func secp256k1SEC1(t *testing.T) []byte {
	der, err := asn1.Marshal(struct {
		Version    int
		PrivateKey []byte
		Curve      asn1.ObjectIdentifier `asn1:"optional,explicit,tag:0"`
	}{1, make([]byte, 32), asn1.ObjectIdentifier{1, 3, 132, 0, 10}})
	if err != nil {
		t.Fatal(err)
	}
	return pemOf(t, "EC PRIVATE KEY", der)
}

// TestImportPEMRefuses: keys the publisher does not sign with, files
// that are no private key, and keys already there are refused, and the
// error says what the file holds and what to do.
func TestImportPEMRefuses(t *testing.T) {
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	p384, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	p384sec1, _ := x509.MarshalECPrivateKey(p384)
	p521, _ := ecdsa.GenerateKey(elliptic.P521(), rand.Reader)
	x25519, _ := ecdh.X25519().GenerateKey(rand.Reader)
	p256, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	p256pub, _ := x509.MarshalPKIXPublicKey(p256.Public())
	_, ed, _ := ed25519.GenerateKey(rand.Reader)
	edDER, _ := x509.MarshalPKCS8PrivateKey(ed)
	damaged := append([]byte(nil), edDER...)
	damaged[len(damaged)-33] = 0x21 // the seed's length: 33 bytes
	bind, _ := os.ReadFile("testdata/Kexample.test.+013+20619.private")
	const fix = "ECDSA P-256 (algorithm 13) or Ed25519 (algorithm 15): make such a key (keymgr example.test. generate algorithm=13"
	for _, tc := range []struct {
		name string
		pem  []byte
		want []string
	}{
		{"RSA PKCS#8", pkcs8(t, rsaKey), []string{"holds an RSA key (2048 bits)", fix}},
		{"RSA PKCS#1", pemOf(t, "RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(rsaKey)), []string{"holds an RSA key", fix}},
		{"P-384 PKCS#8", pkcs8(t, p384), []string{"holds an ECDSA P-384 key (DNSSEC algorithm 14)", fix}},
		{"P-384 SEC1", pemOf(t, "EC PRIVATE KEY", p384sec1), []string{"holds an ECDSA P-384 key", fix}},
		{"P-521", pkcs8(t, p521), []string{"holds an ECDSA P-521 key", fix}},
		{"X25519", pkcs8(t, x25519), []string{"holds an X25519 key (for key agreement, not signatures)", fix}},
		{"Ed448", ed448PKCS8(t), []string{"holds an Ed448 key (DNSSEC algorithm 16): the publisher", fix}},
		{"secp256k1", secp256k1SEC1(t), []string{"holds an ECDSA key on curve secp256k1", fix}},
		{"damaged Ed25519", pemOf(t, "PRIVATE KEY", damaged), []string{"holds an Ed25519 key that is damaged"}},
		{"garbage", []byte("not a key\x00\xff"), []string{"holds no PEM private key", "PKCS#8 PEM file"}},
		{"garbage in PEM", pemOf(t, "PRIVATE KEY", []byte("\x30\x03\x02\x01\x00")), []string{"not a private key that can be read", "PKCS#8 PEM file"}},
		{"empty", nil, []string{"holds no PEM private key"}},
		{"public key", pemOf(t, "PUBLIC KEY", p256pub), []string{`holds a "PUBLIC KEY" PEM block, not a private key`, "<kasp-db>/keys/"}},
		{"encrypted", pemOf(t, "ENCRYPTED PRIVATE KEY", []byte{0x30, 0}), []string{"encrypted private key", "openssl pkey"}},
		{"two keys", append(pkcs8(t, p256), pkcs8(t, ed)...), []string{"holds 2 private keys", "one key per file"}},
		{"BIND file", bind, []string{"BIND private key file, not PEM", "copy it and its .key file"}},
	} {
		dir := t.TempDir()
		_, err := importPEM(dir, "example.test.", "the PEM data", tc.pem, true)
		if err == nil {
			t.Errorf("%s: imported", tc.name)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %v\nwant %q", tc.name, err, w)
			}
		}
		if files, _ := os.ReadDir(dir); len(files) != 0 {
			t.Errorf("%s: files written: %v", tc.name, files)
		}
	}

	// Errors of a file name it.
	dir := t.TempDir()
	file := filepath.Join(t.TempDir(), "rsa.pem")
	os.WriteFile(file, pkcs8(t, rsaKey), 0o600)
	if _, err := ImportPEMFile(dir, "example.test.", file, true); err == nil || !strings.Contains(err.Error(), file+" holds an RSA key") {
		t.Errorf("a file's error: %v", err)
	}
	if _, err := ImportPEMFile(dir, "example.test.", filepath.Dir(file), true); err == nil || !strings.Contains(err.Error(), "not a key file") {
		t.Errorf("a directory: %v", err)
	}
	for _, origin := range []string{"../etc", "a/b.test", "a b.test", `a\.test`} {
		if _, err := importPEM(dir, origin, "the PEM data", pkcs8(t, p256), true); err == nil || !strings.Contains(err.Error(), "not a zone name") {
			t.Errorf("origin %q: %v", origin, err)
		}
	}

	// A key already there: the same tag, or the same key as a ZSK.
	k, err := importPEM(dir, "example.test.", "the PEM data", pkcs8(t, p256), true)
	if err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(k.File + ".private")
	if _, err := importPEM(dir, "example.test.", "the PEM data", pkcs8(t, p256), true); err == nil || !strings.Contains(err.Error(), k.File+".key exists") || !strings.Contains(err.Error(), "remove its .key and .private files first") {
		t.Errorf("the same key again: %v", err)
	}
	if _, err := importPEM(dir, "example.test.", "the PEM data", pkcs8(t, p256), false); err == nil || !strings.Contains(err.Error(), "already in "+dir+" as "+k.File+".key (flags 257)") {
		t.Errorf("the same key as a ZSK: %v", err)
	}
	os.Remove(k.File + ".key") // a .private left alone is not overwritten either
	if _, err := importPEM(dir, "example.test.", "the PEM data", pkcs8(t, p256), true); err == nil || !strings.Contains(err.Error(), k.File+".private exists") {
		t.Errorf("over a .private: %v", err)
	}
	if after, _ := os.ReadFile(k.File + ".private"); string(after) != string(before) {
		t.Error("the .private file was rewritten")
	}
}

// FuzzImportPEM: whatever the bytes, importPEM returns a key that reads
// back and signs, or an error; it does not panic, and writes nothing
// when it refuses.
func FuzzImportPEM(f *testing.F) {
	for _, name := range []string{"testdata/knot/ad57d9cde9ee8ebe445b460ed7ad2070c34d4448.pem", "testdata/knot/ae847648b539b6125430dba7004f9bc6900a6f93.pem"} {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, true)
	}
	f.Add([]byte("-----BEGIN PRIVATE KEY-----\nMAA=\n-----END PRIVATE KEY-----\n"), false)
	f.Fuzz(func(t *testing.T, data []byte, sep bool) {
		dir := t.TempDir()
		k, err := importPEM(dir, "example.test.", "the PEM data", data, sep)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "dnssec: ") {
				t.Errorf("error %q", err)
			}
			if files, _ := os.ReadDir(dir); len(files) != 0 {
				t.Errorf("refused (%v), but wrote %v", err, files)
			}
			return
		}
		if k.SEP() != sep || (k.DNSKEY.Algorithm != 13 && k.DNSKEY.Algorithm != 15) {
			t.Errorf("imported %v", k.DNSKEY)
		}
		if _, err := ReadKey(k.File, "example.test."); err != nil {
			t.Error(err)
		}
		signs(t, k)
	})
}
