//go:build tooltest

package tooltest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// TestZONEMDVerifies: a signed zone with zonemd: true, along three
// versions, passes ldns-verify-zone -Z -Z (a ZONEMD matching the zone's
// data, and the zone validly signed) on its AXFR, answers ZONEMD queries
// with the record of the transfer and its RRSIG, and Knot DNS as
// secondary with zonemd-verify (which refuses a zone whose digest does
// not match) follows it by AXFR then IXFR. A tampered copy of a
// transfer fails ldns-verify-zone. kzonecheck (Knot 3.2) does not check
// a ZONEMD's digest, so it is not run.
func TestZONEMDVerifies(t *testing.T) {
	need(t, "ldns-verify-zone", "knotd")
	config := func(notify string, extra []string) string {
		return strings.Replace(signedConfig(notify, extra), "keys: csk}", "keys: csk, zonemd: true}", 1)
	}
	dir := t.TempDir()
	port := freePort(t)
	knotAddr := "127.0.0.1:" + port
	p := startPublisher(t, config(knotAddr, nil))
	confFile := filepath.Join(dir, "knot.conf")
	os.WriteFile(confFile, []byte(knotConf(dir, "127.0.0.1@"+port, p.host+"@"+p.port, secret)+"    zonemd-verify: on\n"), 0o644)
	s := startSecondary(t, "Knot", knotAddr, "knotd", "-c", confFile)
	serial := func() uint32 { return query(t, p.addr, "example.test.", dns.TypeSOA).Answer[0].(*dns.SOA).Serial }
	for round, extra := range [][]string{nil, {"api"}, {"api", "web"}} {
		before := serial()
		if round > 0 {
			p.reload(t, config(knotAddr, extra))
			waitFor(t, "a new serial", 10*time.Second, func() bool { return serial() != before })
		}
		v := serial()
		text := transferZone(t, p.addr)
		file := filepath.Join(dir, fmt.Sprintf("v%d.zone", round))
		os.WriteFile(file, []byte(text), 0o644)
		run(t, "ldns-verify-zone", "-Z", "-Z", file)

		r := askDO(t, p.addr, "example.test.", dns.TypeZONEMD)
		if len(r.Answer) != 2 {
			t.Fatalf("ZONEMD query: %v", r.Answer)
		}
		md, ok := r.Answer[0].(*dns.ZONEMD)
		if !ok || md.Serial != v || !strings.Contains(text, md.String()) {
			t.Errorf("ZONEMD query: %v, serial %d, not the transfer's", r.Answer[0], v)
		}
		if sig, ok := r.Answer[1].(*dns.RRSIG); !ok || sig.TypeCovered != dns.TypeZONEMD {
			t.Errorf("ZONEMD query: %v, not its RRSIG", r.Answer[1])
		}
		waitFor(t, "Knot to verify and serve the version", 30*time.Second, func() bool { return s.serial() == v })
	}
	if !strings.Contains(s.log.String(), "ZONEMD, verification successful") {
		t.Errorf("Knot did not verify the ZONEMD:\n%s", s.log.String())
	}
	if !strings.Contains(p.logs.String(), "type=ixfr") {
		t.Errorf("no change went by IXFR:\n%s", p.logs.String())
	}
	// A record changed after the digest was made: refused.
	text, _ := os.ReadFile(filepath.Join(dir, "v2.zone"))
	bad := filepath.Join(dir, "bad.zone")
	os.WriteFile(bad, []byte(strings.Replace(string(text), "192.0.2.80", "192.0.2.81", 1)), 0o644)
	if out, err := exec.Command("ldns-verify-zone", "-Z", "-Z", bad).CombinedOutput(); err == nil || !strings.Contains(string(out), "zone digest") {
		t.Errorf("ldns-verify-zone -Z -Z on a changed record: %v\n%s", err, out)
	}
}
