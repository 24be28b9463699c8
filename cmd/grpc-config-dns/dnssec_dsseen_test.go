package main

import (
	"strings"
	"testing"
	"time"

	"github.com/grpc-config-dns/grpc-config-dns/dnspub/dnssec"
)

// TestDnssecDSSeen: ds-seen refuses when no rollover waits for the
// parent, and when one does, writes DSPublish into the new key's file.
func TestDnssecDSSeen(t *testing.T) {
	dir := t.TempDir()
	ks, err := dnssec.Load(dir, "example.test", dnssec.Options{Algorithm: 13, Generate: true})
	if err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := runCLI(t, "dnssec", "ds-seen", "example.test", "--dnssec-keys", dir); code != 2 || !strings.Contains(stderr, "no key rollover") {
		t.Errorf("without a rollover: %d %s", code, stderr)
	}
	r := dnssec.Rollover{SEPLifetime: 24 * time.Hour, Publish: time.Hour, Retire: time.Hour}
	now := time.Now()
	if _, err := ks.Roll(dir, now.Add(-10*24*time.Hour), r); err != nil { // the clock starts
		t.Fatal(err)
	}
	if _, err := ks.Roll(dir, now.Add(-30*time.Minute), r); err != nil { // a successor, not ready
		t.Fatal(err)
	}
	if code, _, stderr := runCLI(t, "dnssec", "ds-seen", "example.test", "--dnssec-keys", dir); code != 2 || !strings.Contains(stderr, "not ready yet") {
		t.Errorf("before the new key is ready: %d %s", code, stderr)
	}
	// Another zone whose new key is ready.
	dir2 := t.TempDir()
	ks2, _ := dnssec.Load(dir2, "example.test", dnssec.Options{Algorithm: 13, Generate: true})
	ks2.Roll(dir2, now.Add(-10*24*time.Hour), r)
	ks2.Roll(dir2, now.Add(-2*time.Hour), r)
	code, out, stderr := runCLI(t, "dnssec", "ds-seen", "example.test", "--dnssec-keys", dir2)
	if code != 0 || !strings.HasPrefix(out, "recorded: the parent of example.test. publishes the DS of key ") {
		t.Fatalf("ds-seen: %d %s%s", code, out, stderr)
	}
	ks2, _ = dnssec.Load(dir2, "example.test", dnssec.Options{Algorithm: 13})
	if succ := ks2.AwaitingDS(now); succ == nil || succ.Timing.DSPublish.IsZero() || !strings.Contains(out, succ.DNSKEY.ToDS(2).String()) {
		t.Errorf("the new key's timing: %+v", succ)
	}
	if code, out, _ := runCLI(t, "dnssec", "ds", "example.test", "--dnssec-keys", dir2); code != 0 || strings.Count(out, "\n") != 2 {
		t.Errorf("dnssec ds during the rollover: both keys' DS, got %d\n%s", code, out)
	}
}
