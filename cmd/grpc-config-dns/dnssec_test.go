package main

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/miekg/dns"

	"github.com/grpc-config-dns/grpc-config-dns/dnspub"
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

// TestLintTrustAnchor: lint and select of a record of a signed zone,
// validated from its DS: ok; from a wrong DS: bogus (exit 1); from an
// anchor of another zone: insecure (a warning).
func TestLintTrustAnchor(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "pub.yaml")
	os.WriteFile(file, bytes.Replace(model.Example, []byte("    ttl: 30s\n"), []byte("    ttl: 30s\n    dnssec: {}\n"), 1), 0o644)
	srv, err := dnspub.New(dnspub.Options{ConfigFile: file, StateFile: "-", Listen: "127.0.0.1:0", WatchInterval: -1, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Shutdown(t.Context()) })
	code, ds, stderr := runCLI(t, "dnssec", "ds", "example.test", "--config", file)
	if code != 0 {
		t.Fatal(stderr)
	}
	anchors := map[string]string{
		"good":  ds,
		"wrong": "example.test. IN DS 1 13 2 " + strings.Repeat("AB", 32),
		"other": "other.test. IN DS 1 13 2 " + strings.Repeat("AB", 32),
	}
	for name, text := range anchors {
		os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644)
	}
	in := "dns://" + srv.Addr().String() + "/echo.example.test"
	for _, tc := range []struct {
		anchor string
		code   int
		want   string
	}{
		{"good", 0, "ok"},
		{"wrong", 1, "[dnssec-bogus]"},
		{"other", 0, "[dnssec-insecure]"},
	} {
		code, out, stderr := runCLI(t, "lint", "--trust-anchor", filepath.Join(dir, tc.anchor), in)
		if code != tc.code || !strings.Contains(out+stderr, tc.want) {
			t.Errorf("lint with the %s anchor: exit %d, want %d and %q:\n%s%s", tc.anchor, code, tc.code, tc.want, out, stderr)
		}
	}
	if code, out, stderr := runCLI(t, "select", "--trust-anchor", filepath.Join(dir, "good"), "dnsconfig://"+srv.Addr().String()+"/echo.example.test"); code != 0 || !strings.Contains(out, "round_robin") {
		t.Errorf("select: %d %s %s", code, out, stderr)
	}
	if code, _, stderr := runCLI(t, "select", "--trust-anchor", filepath.Join(dir, "wrong"), in); code != 1 || !strings.Contains(stderr, "dnssec-bogus") {
		t.Errorf("select with a wrong anchor: %d %s", code, stderr)
	}
	if code, _, stderr := runCLI(t, "lint", "--trust-anchor", filepath.Join(dir, "missing"), in); code != 2 || !strings.Contains(stderr, "--trust-anchor") {
		t.Errorf("a missing anchor file: %d %s", code, stderr)
	}
}
