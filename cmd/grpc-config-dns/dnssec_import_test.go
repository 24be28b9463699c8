package main

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/miekg/dns"

	"github.com/grpc-config-dns/grpc-config-dns/model"
)

// knotKeys are the keys Knot's keymgr made, in the dnssec package's
// testdata: a CSK of algorithm 13, a ZSK of algorithm 15.
const (
	knotCSK = "../../dnspub/dnssec/testdata/knot/ad57d9cde9ee8ebe445b460ed7ad2070c34d4448"
	knotZSK = "../../dnspub/dnssec/testdata/knot/ae847648b539b6125430dba7004f9bc6900a6f93"
)

// keymgrSays reads the DNSKEY and SHA-256 DS keymgr printed for a key.
func keymgrSays(t *testing.T, base string) (*dns.DNSKEY, *dns.DS) {
	t.Helper()
	text, err := os.ReadFile(base + ".keymgr")
	if err != nil {
		t.Fatal(err)
	}
	var key *dns.DNSKEY
	var ds *dns.DS
	zp := dns.NewZoneParser(strings.NewReader("$TTL 3600\n"+string(text)), "", base)
	for rr, ok := zp.Next(); ok; rr, ok = zp.Next() {
		switch r := rr.(type) {
		case *dns.DNSKEY:
			key = r
		case *dns.DS:
			if r.DigestType == dns.SHA256 {
				ds = r
			}
		}
	}
	if key == nil || ds == nil {
		t.Fatalf("%s.keymgr: %v", base, zp.Err())
	}
	return key, ds
}

// TestDnssecImport: a CSK from keymgr imported with --config is the key
// zone signs with and dnssec ds prints, with the DNSKEY and DS keymgr
// printed; a ZSK of another algorithm is imported with a warning that
// the zone does not use it; what is refused says why, naming the file.
func TestDnssecImport(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "pub.yaml")
	os.WriteFile(file, bytes.Replace(model.Example, []byte("    ttl: 30s\n"), []byte("    ttl: 30s\n    dnssec: {}\n"), 1), 0o644)
	wantKey, wantDS := keymgrSays(t, knotCSK)

	code, out, stderr := runCLI(t, "dnssec", "import", "example.test", knotCSK+".pem", "--role", "csk", "--config", file)
	base := filepath.Join(file+".keys", "Kexample.test.+013+52473")
	if code != 0 || out != "imported key 52473 of example.test.: ECDSAP256SHA256, flags 257 (csk)\n"+base+".key\n"+base+".private\n" {
		t.Fatalf("import: %d\n%s%s", code, out, stderr)
	}
	if !strings.Contains(stderr, "grpc-config-dns dnssec ds example.test --config "+file) || strings.Contains(stderr, "warning") {
		t.Errorf("import's hints: %s", stderr)
	}
	code, out, stderr = runCLI(t, "dnssec", "ds", "example.test", "--config", file)
	ds, err := dns.NewRR(strings.TrimSpace(out))
	if code != 0 || err != nil || ds.(*dns.DS).KeyTag != wantDS.KeyTag || !strings.EqualFold(ds.(*dns.DS).Digest, wantDS.Digest) {
		t.Errorf("ds: %d %q %s, keymgr says %v", code, out, stderr, wantDS)
	}
	code, out, stderr = runCLI(t, "zone", "--config", file, "--state", "-")
	if code != 0 {
		t.Fatalf("zone: %d %s", code, stderr)
	}
	var keys []*dns.DNSKEY
	zp := dns.NewZoneParser(strings.NewReader(out), "", "")
	for rr, ok := zp.Next(); ok; rr, ok = zp.Next() {
		if k, ok := rr.(*dns.DNSKEY); ok {
			keys = append(keys, k)
		}
	}
	if len(keys) != 1 || keys[0].Flags != wantKey.Flags || keys[0].Algorithm != wantKey.Algorithm || keys[0].PublicKey != wantKey.PublicKey {
		t.Errorf("the zone's DNSKEY RRset %v, keymgr's key %v", keys, wantKey)
	}

	// Another algorithm than the zone's: imported, with a warning.
	code, out, stderr = runCLI(t, "dnssec", "import", "example.test.", knotZSK+".pem", "--role", "zsk", "--dnssec-keys", file+".keys", "--config", file)
	if code != 0 || !strings.Contains(out, "imported key 39083 of example.test.: ED25519, flags 256 (zsk)") || !strings.Contains(stderr, "warning: zone example.test. of "+file+" is signed with algorithm 13") || !strings.Contains(stderr, "algorithm: ed25519") {
		t.Errorf("a ZSK of algorithm 15: %d\n%s%s", code, out, stderr)
	}

	p384Key, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	der, _ := x509.MarshalPKCS8PrivateKey(p384Key)
	p384 := filepath.Join(dir, "p384.pem")
	os.WriteFile(p384, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{knotCSK + ".pem", "--config", file}, "needs --role csk, ksk or zsk"},
		{[]string{knotCSK + ".pem", "--role", "KSK2", "--config", file}, `--role "KSK2": csk, ksk or zsk`},
		{[]string{knotCSK + ".pem", "--role", "ksk"}, "needs --dnssec-keys DIR or --config FILE"},
		{[]string{knotCSK + ".pem", "--role", "csk", "--config", file}, base + ".key exists"},
		{[]string{p384, "--role", "ksk", "--config", file}, p384 + " holds an ECDSA P-384 key (DNSSEC algorithm 14): the publisher signs with ECDSA P-256"},
		{[]string{filepath.Join(dir, "missing.pem"), "--role", "ksk", "--config", file}, "missing.pem: no such file"},
	} {
		code, out, stderr := runCLI(t, append([]string{"dnssec", "import", "example.test"}, tc.args...)...)
		if code != 2 || out != "" || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d\n%s%s\nwant %q", tc.args, code, out, stderr, tc.want)
		}
	}
}
