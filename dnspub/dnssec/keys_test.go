package dnssec

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// TestReadsDnssecKeygenFiles reads keys as BIND 9.18's dnssec-keygen
// wrote them (testdata: a KSK of algorithm 13 and a ZSK of 15), signs
// with them and checks the signature with the public key.
func TestReadsDnssecKeygenFiles(t *testing.T) {
	for _, tc := range []struct {
		base  string
		tag   uint16
		alg   uint8
		sep   bool
		flags uint16
	}{
		{"testdata/Kexample.test.+013+20619", 20619, 13, true, 257},
		{"testdata/Kexample.test.+015+07324", 7324, 15, false, 256},
	} {
		k, err := ReadKey(tc.base, "example.test.")
		if err != nil {
			t.Fatal(err)
		}
		if k.DNSKEY.KeyTag() != tc.tag || k.DNSKEY.Algorithm != tc.alg || k.SEP() != tc.sep || k.DNSKEY.Flags != tc.flags {
			t.Errorf("%s: %v", tc.base, k.DNSKEY)
		}
		ks := &KeySet{Origin: "example.test.", Keys: []*Key{k}}
		a := &dns.A{Hdr: dns.RR_Header{Name: "www.example.test.", Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 30}, A: []byte{192, 0, 2, 1}}
		sigs, err := ks.Sign([]dns.RR{a}, 1, 2)
		if err != nil || len(sigs) != 1 {
			t.Fatalf("%s: %v %v", tc.base, sigs, err)
		}
		if err := sigs[0].(*dns.RRSIG).Verify(k.DNSKEY, []dns.RR{a}); err != nil {
			t.Errorf("%s: %v", tc.base, err)
		}
	}
	if _, err := ReadKey("testdata/Kexample.test.+013+20619", "other.test."); err == nil || !strings.Contains(err.Error(), "not of zone other.test.") {
		t.Errorf("a key of another zone: %v", err)
	}
}

// TestLoadMakesKeysOnce: a zone without keys gets them, written as
// dnssec-keygen writes them (the private file 0600), and the next Load
// reads the same ones; a ZSK is added when a zone asks for split keys.
func TestLoadMakesKeysOnce(t *testing.T) {
	dir := t.TempDir()
	if _, err := Load(dir, "example.test", Options{Algorithm: 13}); err == nil || !strings.Contains(err.Error(), "dnssec-keygen") {
		t.Fatalf("no keys, none made: %v", err)
	}
	a, err := Load(dir, "example.test", Options{Algorithm: 13, Generate: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Keys) != 1 || !a.Keys[0].SEP() {
		t.Fatalf("a CSK: %v", a.Tags())
	}
	fi, err := os.Stat(a.Keys[0].File + ".private")
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("private key file: %v %v", fi.Mode(), err)
	}
	b, err := Load(dir, "example.test.", Options{Algorithm: 13, Generate: true})
	if err != nil || len(b.Keys) != 1 || b.Keys[0].DNSKEY.PublicKey != a.Keys[0].DNSKEY.PublicKey {
		t.Fatalf("read again: %v %v", b.Tags(), err)
	}
	c, err := Load(dir, "example.test.", Options{Algorithm: 13, SplitKeys: true, Generate: true})
	if err != nil || len(c.Keys) != 2 {
		t.Fatalf("split: %v %v", c.Tags(), err)
	}
	// The DNSKEY RRset is signed by the KSK only, the rest by the ZSK.
	keys := c.DNSKEYs(30)
	sigs, _ := c.Sign(keys, 1, 2)
	if len(sigs) != 1 || !c.keyOf(sigs[0]).SEP() {
		t.Errorf("DNSKEY RRset signed by %v", sigs)
	}
	ds := c.DS(3600)
	if len(ds) != 1 || ds[0].DigestType != dns.SHA256 {
		t.Errorf("DS: %v", ds)
	}
	// Another build's Ed25519 keys in the directory are not this zone's.
	d, err := Load(dir, "example.test.", Options{Algorithm: 15, Generate: true})
	if err != nil || len(d.Keys) != 1 || d.Keys[0].DNSKEY.Algorithm != 15 {
		t.Fatalf("ed25519: %v", err)
	}
	all, _ := Find(dir, "example.test")
	if len(all) != 3 {
		t.Errorf("Find: %d keys", len(all))
	}
}

func (ks *KeySet) keyOf(sig dns.RR) *Key {
	for _, k := range ks.Keys {
		if k.DNSKEY.KeyTag() == sig.(*dns.RRSIG).KeyTag {
			return k
		}
	}
	return nil
}

// TestRefusesBadKeyFiles: a private key that is not the public one's, a
// key file that is not a file, a .key without its .private.
func TestRefusesBadKeyFiles(t *testing.T) {
	dir := t.TempDir()
	a, err := Load(dir, "a.test", Options{Algorithm: 13, Generate: true})
	if err != nil {
		t.Fatal(err)
	}
	other, _ := Load(t.TempDir(), "a.test", Options{Algorithm: 13, Generate: true})
	priv, _ := os.ReadFile(other.Keys[0].File + ".private")
	os.WriteFile(a.Keys[0].File+".private", priv, 0o600)
	if _, err := ReadKey(a.Keys[0].File, "a.test."); err == nil || !strings.Contains(err.Error(), "is not the private key") {
		t.Errorf("mismatched private key: %v", err)
	}
	os.Remove(a.Keys[0].File + ".private")
	if _, err := Load(dir, "a.test", Options{Algorithm: 13, Generate: true}); err == nil {
		t.Error("a .key without its .private was used")
	}
	os.Remove(a.Keys[0].File + ".key")
	os.Mkdir(filepath.Join(dir, "Ka.test.+013+00001.key"), 0o700)
	if _, err := Load(dir, "a.test", Options{Algorithm: 13, Generate: true}); err == nil || !strings.Contains(err.Error(), "not a key file") {
		t.Errorf("a directory as key file: %v", err)
	}
}

// TestRollHealsAFailedRetirement: when the current key's retirement is
// lost (a crash, or a full disk, between the successor's files and the
// current key's), the successor is one of the keys and the next Roll,
// by this publisher or another of the store, retires the current key.
func TestRollHealsAFailedRetirement(t *testing.T) {
	dir := t.TempDir()
	ks, err := Load(dir, "example.test", Options{Algorithm: 13, SplitKeys: true, Generate: true})
	if err != nil {
		t.Fatal(err)
	}
	r := Rollover{Lifetime: 10 * 24 * time.Hour, Publish: time.Hour, Retire: 2 * time.Hour}
	t0 := time.Unix(2_000_000_000, 0).UTC()
	if _, err := ks.Roll(dir, t0, r); err != nil { // starts the clock
		t.Fatal(err)
	}
	cur := ks.currentZSK(t0)
	priv, _ := os.ReadFile(cur.File + ".private")
	at := t0.Add(r.Lifetime)
	if changed, err := ks.Roll(dir, at, r); err != nil || !changed {
		t.Fatalf("Roll: %v %v", changed, err)
	}
	os.WriteFile(cur.File+".private", priv, 0o600) // the retirement lost
	other, err := Load(dir, "example.test", Options{Algorithm: 13, SplitKeys: true})
	if err != nil || len(other.Keys) != 3 {
		t.Fatalf("after the loss: %v, %d keys", err, len(other.Keys))
	}
	if changed, err := other.Roll(dir, at, r); err != nil || !changed {
		t.Fatalf("the next Roll: %v %v", changed, err)
	}
	again, err := Load(dir, "example.test", Options{Algorithm: 13, SplitKeys: true})
	if err != nil || len(again.Keys) != 3 {
		t.Fatalf("reloaded: %v", err)
	}
	if v := again.At(at.Add(2*time.Hour), r); len(v.signers()) != 2 || v.currentZSK(at.Add(2*time.Hour)).DNSKEY.KeyTag() == cur.DNSKEY.KeyTag() {
		t.Errorf("after the rollover the old key still signs: %v", v.Phase())
	}
}

// TestRollOnce: two publishers sharing a key directory roll at the same
// time; one successor is made, and both take it.
func TestRollOnce(t *testing.T) {
	dir := t.TempDir()
	a, err := Load(dir, "example.test", Options{Algorithm: 13, Generate: true})
	if err != nil {
		t.Fatal(err)
	}
	b, err := Load(dir, "example.test", Options{Algorithm: 13, Generate: true})
	if err != nil || len(b.Keys) != 1 {
		t.Fatalf("a second publisher's Load: %v, %d keys", err, len(b.Keys))
	}
	r := Rollover{SEPLifetime: 10 * 24 * time.Hour, Publish: time.Hour, Retire: 2 * time.Hour}
	t0 := time.Unix(2_000_000_000, 0).UTC()
	a.Roll(dir, t0, r)
	b.Roll(dir, t0, r)
	at := t0.Add(r.SEPLifetime)
	done := make(chan error, 2)
	for _, ks := range []*KeySet{a, b} {
		go func() { _, err := ks.Roll(dir, at, r); done <- err }()
	}
	for range 2 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.key"))
	if len(files) != 2 || a.At(at, r).Phase() != b.At(at, r).Phase() {
		t.Errorf("%d key files; phases %s and %s", len(files), a.At(at, r).Phase(), b.At(at, r).Phase())
	}
}
