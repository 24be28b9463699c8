package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/miekg/dns"

	"github.com/grpc-config-dns/grpc-config-dns/model"
)

// TestZoneSignedAndDS: zone prints a signed zone with keys it makes in
// FILE.keys, and dnssec ds prints the DS of the very key the zone
// publishes; without keys, dnssec ds says how to get them.
func TestZoneSignedAndDS(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "pub.yaml")
	os.WriteFile(file, bytes.Replace(model.Example, []byte("    ttl: 30s\n"), []byte("    ttl: 30s\n    dnssec: {}\n"), 1), 0o644)
	code, _, stderr := runCLI(t, "dnssec", "ds", "example.test", "--config", file)
	if code != 2 || !strings.Contains(stderr, "no key-signing key") {
		t.Fatalf("ds before any key: %d %s", code, stderr)
	}
	code, out, stderr := runCLI(t, "zone", "--config", file, "--state", "-")
	if code != 0 {
		t.Fatalf("zone: %d %s", code, stderr)
	}
	var key *dns.DNSKEY
	sigs := 0
	zp := dns.NewZoneParser(strings.NewReader(out), "", "")
	for rr, ok := zp.Next(); ok; rr, ok = zp.Next() {
		switch r := rr.(type) {
		case *dns.DNSKEY:
			key = r
		case *dns.RRSIG:
			sigs++
		}
	}
	if key == nil || sigs < 10 {
		t.Fatalf("zone printed no DNSKEY or few signatures (%d):\n%s", sigs, out)
	}
	code, out, stderr = runCLI(t, "dnssec", "ds", "example.test", "--config", file)
	if code != 0 {
		t.Fatalf("ds: %d %s", code, stderr)
	}
	ds, err := dns.NewRR(strings.TrimSpace(out))
	if err != nil || ds.(*dns.DS).KeyTag != key.KeyTag() || !strings.EqualFold(ds.(*dns.DS).Digest, key.ToDS(dns.SHA256).Digest) {
		t.Errorf("ds = %q (%v), zone's key %d %v", out, err, key.KeyTag(), key.ToDS(dns.SHA256))
	}
	if fi, err := os.Stat(filepath.Join(dir, "pub.yaml.keys")); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("key directory: %v", err)
	}
}
