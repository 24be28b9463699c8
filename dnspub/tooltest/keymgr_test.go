//go:build tooltest

package tooltest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// TestKeymgrKeySigns: a CSK made by Knot's keymgr, imported with
// `dnssec import` into the key directory of a running publisher whose
// zone then becomes signed, is the zone's key: its DNSKEY RRset is the
// DNSKEY keymgr prints, and delv validates answers from that DNSKEY as
// trust anchor.
func TestKeymgrKeySigns(t *testing.T) {
	need(t, "knotd", "keymgr", "delv")
	kasp := t.TempDir()
	id := strings.TrimSpace(runStdout(t, "keymgr", "-D", kasp, "example.test.", "generate", "algorithm=13", "ksk=yes", "zsk=yes"))
	printed, err := dns.NewRR(runStdout(t, "keymgr", "-D", kasp, "example.test.", "dnskey", id))
	if err != nil {
		t.Fatalf("keymgr dnskey %s: %v", id, err)
	}
	want := printed.(*dns.DNSKEY)

	signed := signedConfig("", nil)
	unsigned := strings.Replace(signed, "    dnssec: {algorithm: ecdsap256sha256, keys: csk}\n", "", 1)
	p := startPublisher(t, unsigned)
	run(t, bin, "dnssec", "import", "example.test", filepath.Join(kasp, "keys", id+".pem"), "--role", "csk", "--config", p.file)
	p.reload(t, signed)
	var keys []dns.RR
	waitFor(t, "the zone to be signed", 10*time.Second, func() bool {
		keys = query(t, p.addr, "example.test.", dns.TypeDNSKEY).Answer
		return len(keys) > 0
	})
	if len(keys) != 1 || keys[0].(*dns.DNSKEY).Flags != want.Flags || keys[0].(*dns.DNSKEY).PublicKey != want.PublicKey {
		t.Fatalf("the zone's DNSKEY RRset %v, keymgr's key %v", keys, want)
	}
	anchor := filepath.Join(t.TempDir(), "anchor.conf")
	os.WriteFile(anchor, []byte(fmt.Sprintf("trust-anchors {\nexample.test. static-key %d %d %d \"%s\";\n};\n", want.Flags, want.Protocol, want.Algorithm, want.PublicKey)), 0o644)
	delvValidates(t, anchor, p.host, p.port, "TXT", "_grpc_config.echo.example.test")
	delvValidates(t, anchor, p.host, p.port, "A", "nope.example.test")
}
