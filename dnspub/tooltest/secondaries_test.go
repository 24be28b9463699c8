//go:build tooltest

package tooltest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// secondary is a DNS server run as our secondary for a test.
type secondary struct {
	name string
	addr string
	cmd  *exec.Cmd
	log  *lockedBuffer
}

// startSecondary runs a server in the foreground and stops it (SIGTERM,
// then SIGKILL after 10s) when the test ends, showing its log on failure.
func startSecondary(t *testing.T, name, addr string, bin string, args ...string) *secondary {
	t.Helper()
	s := &secondary{name: name, addr: addr, cmd: exec.Command(bin, args...), log: &lockedBuffer{}}
	s.cmd.Stdout, s.cmd.Stderr = s.log, s.log
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { s.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			s.cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("%s log:\n%s", name, s.log.String())
		}
	})
	return s
}

// serial is the SOA serial the secondary serves, 0 when it serves none.
func (s *secondary) serial() uint32 {
	m := new(dns.Msg)
	m.SetQuestion("example.test.", dns.TypeSOA)
	r, _, err := (&dns.Client{Timeout: time.Second}).Exchange(m, s.addr)
	if err != nil || r.Rcode != dns.RcodeSuccess || len(r.Answer) != 1 {
		return 0
	}
	if soa, ok := r.Answer[0].(*dns.SOA); ok {
		return soa.Serial
	}
	return 0
}

// followsChanges: the secondary transfers the zone, is told of a change by
// our NOTIFY, follows it (by IXFR when ixfr is set), and answers every
// record as we do.
func followsChanges(t *testing.T, p *publisher, s *secondary, cfg func(echo string) string, ixfr bool) {
	t.Helper()
	ourSerial := func() uint32 { return query(t, p.addr, "example.test.", dns.TypeSOA).Answer[0].(*dns.SOA).Serial }
	v1 := ourSerial()
	waitFor(t, s.name+" to transfer the zone", 30*time.Second, func() bool { return s.serial() == v1 })
	sameAnswersAs(t, s.name, p.addr, s.addr)

	p.reload(t, cfg("192.0.2.77"))
	waitFor(t, "a new serial", 10*time.Second, func() bool { return ourSerial() != v1 })
	v2 := ourSerial()
	// Well within any refresh timer: only our NOTIFY brings it this fast.
	waitFor(t, s.name+" to follow the change after our NOTIFY", 20*time.Second, func() bool { return s.serial() == v2 })
	acked := regexp.MustCompile(`msg="NOTIFY acknowledged" zone=example.test. secondary=` + regexp.QuoteMeta(s.addr) + ` serial=` + fmt.Sprint(v2))
	waitFor(t, s.name+" to acknowledge our NOTIFY", 10*time.Second, func() bool { return acked.MatchString(p.logs.String()) })
	if ixfr && !regexp.MustCompile(`msg="zone transfer" zone=example.test. type=ixfr serial=`+fmt.Sprint(v2)).MatchString(p.logs.String()) {
		t.Errorf("%s did not follow the change by incremental IXFR:\n%s", s.name, p.logs.String())
	}
	sameAnswersAs(t, s.name, p.addr, s.addr)
	r := query(t, s.addr, "echo.example.test.", dns.TypeA)
	if len(r.Answer) != 1 || r.Answer[0].(*dns.A).A.String() != "192.0.2.77" {
		t.Errorf("%s serves %v after the change", s.name, r.Answer)
	}
}

// sameAnswersAs is sameAnswers naming the secondary.
func sameAnswersAs(t *testing.T, name, ours, theirs string) {
	t.Helper()
	for _, q := range []struct {
		name  string
		qtype uint16
	}{
		{"_grpc_config.echo.example.test.", dns.TypeTXT},
		{"_grpc_config.big.example.test.", dns.TypeTXT},
		{"_grpc._tcp.echo.example.test.", dns.TypeSRV},
		{"echo.example.test.", dns.TypeA},
		{"echo.example.test.", dns.TypeAAAA},
		{"example.test.", dns.TypeSOA},
		{"example.test.", dns.TypeNS},
	} {
		a := query(t, ours, q.name, q.qtype)
		b := query(t, theirs, q.name, q.qtype)
		if wireRRs(t, a.Answer) != wireRRs(t, b.Answer) || len(a.Answer) == 0 {
			t.Errorf("%s %s differs:\nours:  %v\n%s: %v", q.name, dns.TypeToString[q.qtype], a.Answer, name, b.Answer)
		}
	}
}

// TestKnotSecondary: Knot DNS transfers the zone from us with TSIG, is
// told of a change by our signed NOTIFY, fetches it by IXFR, and answers
// our records as we do (issue 18). The config is the one
// docs/production.md shows.
func TestKnotSecondary(t *testing.T) {
	need(t, "knotd")
	dir := t.TempDir()
	knotAddr := "127.0.0.1:" + freePort(t)
	cfg := func(echo string) string { return pubConfig(knotAddr, echo) }
	p := startPublisher(t, cfg("192.0.2.1"))
	conf := knotConf(dir, strings.Replace(knotAddr, ":", "@", 1), p.host+"@"+p.port, secret)
	confFile := filepath.Join(dir, "knot.conf")
	if err := os.WriteFile(confFile, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	s := startSecondary(t, "Knot", knotAddr, "knotd", "-c", confFile)
	followsChanges(t, p, s, cfg, true)
}

// knotConf is a Knot DNS secondary of example.test. (docs/production.md).
func knotConf(dir, listen, primary, secret string) string {
	return fmt.Sprintf(`server:
    rundir: "%[1]s"
    listen: %[2]s
log:
  - target: stderr
    any: info
database:
    storage: "%[1]s"
key:
  - id: xfr-key
    algorithm: hmac-sha256
    secret: %[4]s
remote:
  - id: publisher
    address: %[3]s
    key: xfr-key
acl:
  - id: notify-from-publisher
    address: 127.0.0.1
    key: xfr-key
    action: notify
template:
  - id: default
    storage: "%[1]s"
    zonefile-sync: -1
    zonefile-load: none
    journal-content: all
zone:
  - domain: example.test.
    master: publisher
    acl: notify-from-publisher
`, dir, listen, primary, secret)
}

// TestCoreDNSSecondary: CoreDNS's secondary plugin transfers the zone from
// us (AXFR: the plugin neither asks IXFR nor signs with TSIG, so the zone
// allows 127.0.0.1 without a key), follows a change on our NOTIFY, and
// answers our records as we do (issue 18). run.sh builds CoreDNS with go
// install github.com/coredns/coredns@v1.15.0; the Corefile is the one
// docs/production.md shows.
func TestCoreDNSSecondary(t *testing.T) {
	need(t, "coredns")
	dir := t.TempDir()
	port := freePort(t)
	coreAddr := "127.0.0.1:" + port
	cfg := func(echo string) string {
		return strings.Replace(pubConfig(coreAddr, echo), ", key: xfr-key", "", 1)
	}
	p := startPublisher(t, cfg("192.0.2.1"))
	corefile := filepath.Join(dir, "Corefile")
	if err := os.WriteFile(corefile, []byte(coreFile(port, p.addr)), 0o644); err != nil {
		t.Fatal(err)
	}
	s := startSecondary(t, "CoreDNS", coreAddr, "coredns", "-conf", corefile)
	followsChanges(t, p, s, cfg, false)
}

// coreFile is a CoreDNS secondary of example.test. (docs/production.md).
func coreFile(port, primary string) string {
	return fmt.Sprintf(`example.test.:%s {
    bind 127.0.0.1
    secondary {
        transfer from %s
    }
    errors
    log
}
`, port, primary)
}
