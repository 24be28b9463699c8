//go:build faults

package faults

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// breaksFleet is a zone of n services whose zone-level keys come after
// the services list, with br written where a comment's line ends: yaml.v3
// ends the line there, so ttl: 7 and the compat setting are the zone's.
func breaksFleet(n int, br string, timeout string) string {
	var b strings.Builder
	b.WriteString("zones:\n  - origin: z.test.\n    nameservers: [{name: ns1, addresses: [127.0.0.1]}]\n    services:\n")
	for i := range n {
		fmt.Fprintf(&b, "      - name: s%d\n        addresses: [10.0.%d.%d]\n        serviceConfig: {methodConfig: [{name: [{service: s%d}], timeout: %s}]}\n", i, i/256, i%256, i, timeout)
	}
	b.WriteString("      # note" + br + "    ttl: 7\n    compat: {nineDigitDurations: false, clients: go}\n")
	return b.String()
}

// TestOddLineBreaksServed: configs whose lines break at a lone CR, U+0085,
// U+2028 or U+2029 (not only LF) are served as yaml.v3 reads them, by
// serve at its start and at a reload of one service, and by zone: the
// zone's TTL and compat after the services list are kept.
func TestOddLineBreaksServed(t *testing.T) {
	for _, br := range []string{"\r", "\u0085", "\u2028", "\u2029"} {
		t.Run(fmt.Sprintf("%q", br), func(t *testing.T) {
			dir := t.TempDir()
			cfg := filepath.Join(dir, "publisher.yaml")
			writeAtomic(t, cfg, breaksFleet(200, br, "1.5s"))
			out, err := exec.Command(bin, "zone", "--config", cfg, "--serial", "1").Output()
			if err != nil {
				t.Fatalf("zone: %v", err)
			}
			if !regexp.MustCompile(`(?m)^s199 +7 IN A `).Match(out) || !strings.Contains(string(out), `\"1.5s\"`) {
				t.Fatalf("zone printed no TTL 7 or no 1.5s:\n%.2000s", out)
			}
			addr := freePort(t)
			s := serve(t, addr, "--config", cfg)
			answering(t, addr, "z.test.")
			check := func(svc int, timeout string) {
				t.Helper()
				r, err := ask(addr, fmt.Sprintf("_grpc_config.s%d.z.test.", svc), dns.TypeTXT)
				if err != nil || len(r.Answer) != 1 {
					t.Fatalf("TXT of s%d: %v %v", svc, r, err)
				}
				txt := strings.Join(r.Answer[0].(*dns.TXT).Txt, "")
				if r.Answer[0].Header().Ttl != 7 || !strings.Contains(txt, `\"`+timeout+`\"`) {
					t.Fatalf("s%d: TTL %d and %s, want TTL 7 and %s", svc, r.Answer[0].Header().Ttl, txt, timeout)
				}
			}
			check(17, "1.5s")
			// A reload that changes one service's timeout.
			writeAtomic(t, cfg, strings.Replace(breaksFleet(200, br, "1.5s"), "s17}], timeout: 1.5s", "s17}], timeout: 2.5s", 1))
			s.signal(syscall.SIGHUP)
			deadline := time.Now().Add(10 * time.Second)
			for {
				r, err := ask(addr, "_grpc_config.s17.z.test.", dns.TypeTXT)
				if err == nil && len(r.Answer) == 1 && strings.Contains(strings.Join(r.Answer[0].(*dns.TXT).Txt, ""), "2.5s") {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("the reload was not served")
				}
				time.Sleep(20 * time.Millisecond)
			}
			check(17, "2.5s")
			check(18, "1.5s")
		})
	}
}
