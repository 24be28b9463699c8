//go:build tooltest

package tooltest

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/grpc-config-dns/grpc-config-dns/model"
)

const secret = "OAaUj0VV0dB/m2fzq5ZTHRBXoWO8UbaqU8S5PVXHe8o="

var bin string // the grpc-config-dns binary under test

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "tooltest")
	if err != nil {
		panic(err)
	}
	bin = filepath.Join(dir, "grpc-config-dns")
	build := exec.Command("go", "build", "-o", bin, "github.com/grpc-config-dns/grpc-config-dns/cmd/grpc-config-dns")
	build.Stdout, build.Stderr = os.Stdout, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building grpc-config-dns:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// need skips the test when a tool is missing, or fails it when run.sh
// (which installs them) asked for TOOLTEST_REQUIRE.
func need(t *testing.T, tools ...string) {
	t.Helper()
	pkgs := map[string]string{"dig": "dnsutils", "kdig": "knot-dnsutils", "named": "bind9", "named-checkzone": "bind9-utils", "knotd": "knot", "coredns": "(go install github.com/coredns/coredns@v1.15.0)", "delv": "bind9-dnsutils", "dnssec-verify": "bind9-utils", "ldns-verify-zone": "ldnsutils", "unbound": "unbound"}
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			msg := fmt.Sprintf("%s not found (Debian package %s): run dnspub/tooltest/run.sh, which installs the tools", tool, pkgs[tool])
			if os.Getenv("TOOLTEST_REQUIRE") != "" {
				t.Fatal(msg)
			}
			t.Skip(msg)
		}
	}
}

// config is the publisher config of the tool tests. notify is the
// secondary's address ("" for none).
func pubConfig(notify string, echoAddr string) string {
	return pubConfigPadded(notify, echoAddr, hugePadding)
}

func pubConfigPadded(notify string, echoAddr string, hugePadding int) string {
	n := ""
	if notify != "" {
		n = `, notify: ["` + notify + `"]`
	}
	return `
tsigKeys:
  - {name: xfr-key, algorithm: hmac-sha256, secret: "` + secret + `"}
zones:
  - origin: example.test.
    ttl: 60
    nameservers: [{name: ns1, addresses: [127.0.0.1]}]
    transfer: {allow: [127.0.0.1], key: xfr-key` + n + `}
    services:
      - name: echo
        addresses: [` + echoAddr + `, "2001:db8::1"]
        port: 50051
        ttl: 30
        choices:
          - clientLanguage: [GO]
            percentage: 20
            serviceConfig: {loadBalancingConfig: [{round_robin: {}}]}
          - serviceConfig:
              methodConfig: [{name: [{service: "caf\u00e9.Echo"}], timeout: 1.5s}]
      - name: big
        serviceConfig:
          methodConfig: [{name: [{service: ` + strings.Repeat("x", 1250) + `}]}]
      - name: huge
        serviceConfig:
          methodConfig: [{name: [{service: ` + strings.Repeat("h", hugePadding) + `}]}]
`
}

// hugePadding makes the TXT record of service huge the largest the
// publisher accepts with the TSIG key configured, so that every tool sees
// an answer and signed transfers of near 64 KiB.
var hugePadding = func() int {
	lo, hi := 0, 65535 // accepted, refused
	for hi-lo > 1 {
		hugePadding := (lo + hi) / 2
		if cfg, _ := model.Parse([]byte(pubConfigPadded("", "192.0.2.1", hugePadding))); cfg != nil {
			lo = hugePadding
		} else {
			hi = hugePadding
		}
	}
	return lo
}()

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// waitFor polls cond for up to d.
func waitFor(t *testing.T, what string, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// publisher is `grpc-config-dns serve` running as a process.
type publisher struct {
	cmd  *exec.Cmd
	file string
	addr string
	host string
	port string
	logs *lockedBuffer
}

func startPublisher(t *testing.T, cfg string) *publisher {
	t.Helper()
	dir := t.TempDir()
	p := &publisher{file: filepath.Join(dir, "publisher.yaml"), logs: &lockedBuffer{}}
	if err := os.WriteFile(p.file, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	p.cmd = exec.Command(bin, "serve", "--config", p.file, "--listen", "127.0.0.1:0")
	p.cmd.Stderr = p.logs
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { p.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			p.cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("publisher log:\n%s", p.logs.String())
		}
	})
	re := regexp.MustCompile(`msg=serving udp=(\S+)`)
	waitFor(t, "the publisher to start", 10*time.Second, func() bool {
		if m := re.FindStringSubmatch(p.logs.String()); m != nil {
			p.addr = m[1]
			return true
		}
		return false
	})
	p.host, p.port, _ = net.SplitHostPort(p.addr)
	return p
}

// reload writes a new config and sends SIGHUP.
func (p *publisher) reload(t *testing.T, cfg string) {
	t.Helper()
	if err := os.WriteFile(p.file, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	p.cmd.Process.Signal(syscall.SIGHUP)
}

// run runs a tool and returns its output, stdout and stderr together.
func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	var out bytes.Buffer
	return runTo(t, &out, &out, name, args...)
}

// runStdout runs a tool and returns its stdout; stderr goes to the log.
func runStdout(t *testing.T, name string, args ...string) string {
	t.Helper()
	var out, errs bytes.Buffer
	s := runTo(t, &out, &errs, name, args...)
	if errs.Len() > 0 {
		t.Logf("%s stderr:\n%s", name, errs.String())
	}
	return s
}

func runTo(t *testing.T, out *bytes.Buffer, errs *bytes.Buffer, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = out, errs
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("%s %s: %v\n%s%s", name, strings.Join(args, " "), err, out.String(), errs.String())
		}
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("%s %s did not finish", name, strings.Join(args, " "))
	}
	return out.String()
}

func query(t *testing.T, addr, name string, qtype uint16) *dns.Msg {
	t.Helper()
	m := new(dns.Msg)
	m.SetQuestion(name, qtype)
	r, _, err := (&dns.Client{Net: "tcp", Timeout: 3 * time.Second}).Exchange(m, addr)
	if err != nil {
		t.Fatalf("%s %s at %s: %v", name, dns.TypeToString[qtype], addr, err)
	}
	return r
}

// TestDigAndKdig asks our server with both clients, over UDP with and
// without EDNS and over TCP.
func TestDigAndKdig(t *testing.T) {
	need(t, "dig", "kdig")
	p := startPublisher(t, pubConfig("", "192.0.2.1"))
	ours := query(t, p.addr, "_grpc_config.echo.example.test.", dns.TypeTXT).Answer[0].(*dns.TXT)
	txtPresentation := regexp.QuoteMeta(`"` + strings.Join(ours.Txt, `" "`) + `"`)
	type check struct {
		args []string
		want []string // regexps the output must match
	}
	dig := []check{
		{[]string{"A", "echo.example.test"}, []string{`status: NOERROR`, `flags: qr aa;`, `(?m)^echo\.example\.test\.\s+30\s+IN\s+A\s+192\.0\.2\.1$`, `; EDNS: version: 0.*udp: 1232`}},
		// RD is echoed, RA stays clear, the question keeps its case.
		{[]string{"AAAA", "ECHO.Example.Test", "+noedns", "+rec"}, []string{`status: NOERROR`, `flags: qr aa rd;`, `(?m)^ECHO\.Example\.Test\.\s+30\s+IN\s+AAAA\s+2001:db8::1$`}},
		{[]string{"TXT", "_grpc_config.echo.example.test"}, []string{`status: NOERROR`, `ANSWER: 1,`, `(?m)IN\s+TXT\s+` + txtPresentation + `$`}},
		{[]string{"TXT", "_grpc_config.echo.example.test", "+noedns", "+tcp"}, []string{`ANSWER: 1,`, txtPresentation}},
		// 1.3 KB without EDNS: truncated, and dig retries over TCP.
		{[]string{"TXT", "_grpc_config.big.example.test", "+noedns", "+ignore"}, []string{`flags: qr aa tc;`, `ANSWER: 0,`}},
		{[]string{"TXT", "_grpc_config.big.example.test", "+noedns"}, []string{`Truncated, retrying in TCP mode`, `ANSWER: 1,`, `\(TCP\)`}},
		{[]string{"SRV", "_grpc._tcp.echo.example.test"}, []string{`(?m)^_grpc\._tcp\.echo\.example\.test\.\s+30\s+IN\s+SRV\s+0 0 50051 echo\.example\.test\.$`, `(?m)^echo\.example\.test\.\s+30\s+IN\s+A\s+192\.0\.2\.1$`}},
		{[]string{"A", "nope.example.test"}, []string{`status: NXDOMAIN`, `flags: qr aa;`, `(?m)^example\.test\.\s+60\s+IN\s+SOA\s+ns1\.example\.test\. hostmaster\.example\.test\.`}},
		{[]string{"A", "example.org"}, []string{`status: REFUSED`}},
	}
	for _, c := range dig {
		out := run(t, "dig", append([]string{"@" + p.host, "-p", p.port, "+norec"}, c.args...)...)
		for _, w := range c.want {
			if !regexp.MustCompile(w).MatchString(out) {
				t.Errorf("dig %s: output does not match %s:\n%s", strings.Join(c.args, " "), w, out)
			}
		}
	}
	kdig := []check{
		{[]string{"A", "echo.example.test"}, []string{`status: NOERROR`, `Flags: qr aa;`, `(?m)^echo\.example\.test\.\s+30\s+IN\s+A\s+192\.0\.2\.1$`}},
		{[]string{"AAAA", "echo.example.test", "+edns=0", "+bufsize=1232"}, []string{`status: NOERROR`, `EDNS PSEUDOSECTION`, `2001:db8::1`}},
		{[]string{"TXT", "_grpc_config.echo.example.test", "+noedns"}, []string{`ANSWER: 1;`, `\(UDP\)`, txtPresentation}},
		{[]string{"TXT", "_grpc_config.echo.example.test", "+tcp"}, []string{`ANSWER: 1;`, `\(TCP\)`, txtPresentation}},
		{[]string{"TXT", "_grpc_config.big.example.test", "+noedns", "+ignore"}, []string{`Flags: qr aa tc;`}},
		{[]string{"TXT", "_grpc_config.big.example.test", "+tcp"}, []string{`ANSWER: 1;`}},
		{[]string{"A", "nope.example.test"}, []string{`status: NXDOMAIN`, `AUTHORITY: 1`, `SOA\s+ns1\.example\.test\.`}},
		// The largest record: whole over TCP to an EDNS client, and in a
		// signed AXFR (a message of nearly 64 KiB with its TSIG).
		{[]string{"TXT", "_grpc_config.huge.example.test", "+tcp", "+edns=0"}, []string{`ANSWER: 1;`, `\(TCP\)`}},
		{[]string{"AXFR", "example.test", "-y", "hmac-sha256:xfr-key:" + secret}, []string{`(?m)^_grpc_config\.huge\.example\.test\.\s+60\s+IN\s+TXT`, `(?m)^xfr-key\.\s+0\s+ANY\s+TSIG\s+hmac-sha256\. .* NOERROR 0$`, `Received \d+ B \(\d+ messages`}},
	}
	for _, c := range kdig {
		out := run(t, "kdig", append([]string{"@" + p.host, "-p", p.port, "+norec"}, c.args...)...)
		for _, w := range c.want {
			if !regexp.MustCompile(w).MatchString(out) {
				t.Errorf("kdig %s: output does not match %s:\n%s", strings.Join(c.args, " "), w, out)
			}
		}
	}
}

// TestNamedCheckzone: BIND's zone checker accepts what `zone` prints.
func TestNamedCheckzone(t *testing.T) {
	need(t, "named-checkzone")
	dir := t.TempDir()
	f := filepath.Join(dir, "publisher.yaml")
	os.WriteFile(f, []byte(pubConfig("127.0.0.1:53", "192.0.2.1")), 0o644)
	zf := filepath.Join(dir, "example.test.zone")
	os.WriteFile(zf, []byte(runStdout(t, bin, "zone", "--config", f)), 0o644)
	out := run(t, "named-checkzone", "-i", "full", "-k", "fail", "-n", "fail", "example.test", zf)
	if !strings.Contains(out, "OK") {
		t.Errorf("named-checkzone:\n%s", out)
	}
	// The built-in example too.
	ex := filepath.Join(dir, "example.yaml")
	os.WriteFile(ex, model.Example, 0o644)
	exz := filepath.Join(dir, "example.test.example.zone")
	os.WriteFile(exz, []byte(runStdout(t, bin, "zone", "--config", ex)), 0o644)
	if out := run(t, "named-checkzone", "-i", "full", "-k", "fail", "-n", "fail", "example.test", exz); !strings.Contains(out, "OK") {
		t.Errorf("named-checkzone on the built-in example:\n%s", out)
	}
}

func freePort(t *testing.T) string {
	t.Helper()
	for i := 0; i < 20; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		u, err := net.ListenPacket("udp", fmt.Sprintf("127.0.0.1:%d", port))
		l.Close()
		if err == nil {
			u.Close()
			return fmt.Sprint(port)
		}
	}
	t.Fatal("no free port")
	return ""
}

// TestBINDSecondary: BIND 9 transfers the zone from us with TSIG (AXFR),
// is told of a change by our NOTIFY, fetches it by IXFR, and then answers
// every record byte for byte as we do.
func TestBINDSecondary(t *testing.T) {
	need(t, "named")
	namedPort := freePort(t)
	namedAddr := "127.0.0.1:" + namedPort
	p := startPublisher(t, pubConfig(namedAddr, "192.0.2.1"))

	namedLog := startNamed(t, namedPort, p.port)

	ourSerial := func() uint32 { return query(t, p.addr, "example.test.", dns.TypeSOA).Answer[0].(*dns.SOA).Serial }
	theirSerial := func() uint32 {
		m := new(dns.Msg)
		m.SetQuestion("example.test.", dns.TypeSOA)
		r, _, err := (&dns.Client{Timeout: time.Second}).Exchange(m, namedAddr)
		if err != nil || r.Rcode != dns.RcodeSuccess || len(r.Answer) != 1 {
			return 0
		}
		return r.Answer[0].(*dns.SOA).Serial
	}
	v1 := ourSerial()
	waitFor(t, "BIND to transfer the zone", 30*time.Second, func() bool { return theirSerial() == v1 })
	if !strings.Contains(p.logs.String(), "type=axfr") || !strings.Contains(p.logs.String(), "tsig=true") {
		t.Errorf("no signed AXFR in our log")
	}
	sameAnswers(t, p.addr, namedAddr)

	// A change: SIGHUP, NOTIFY, IXFR.
	p.reload(t, pubConfig(namedAddr, "192.0.2.77"))
	waitFor(t, "a new serial", 10*time.Second, func() bool { return ourSerial() != v1 })
	v2 := ourSerial()
	waitFor(t, "BIND to follow the change", 30*time.Second, func() bool { return theirSerial() == v2 })
	if !strings.Contains(namedLog.String(), "received notify for zone 'example.test'") {
		t.Errorf("BIND did not log our NOTIFY")
	}
	if !regexp.MustCompile(`msg="zone transfer" zone=example.test. type=ixfr serial=` + fmt.Sprint(v2)).MatchString(p.logs.String()) {
		t.Errorf("the change did not go by incremental IXFR:\n%s", p.logs.String())
	}
	sameAnswers(t, p.addr, namedAddr)
	r := query(t, namedAddr, "echo.example.test.", dns.TypeA)
	if len(r.Answer) != 1 || r.Answer[0].(*dns.A).A.String() != "192.0.2.77" {
		t.Errorf("BIND serves %v after the change", r.Answer)
	}
}

// startNamed starts BIND 9 as a secondary of example.test on 127.0.0.1 at
// namedPort, transferring from us at primaryPort with the TSIG key, and
// returns its log. It is stopped when the test ends.
func startNamed(t *testing.T, namedPort, primaryPort string) *lockedBuffer {
	t.Helper()
	dir := t.TempDir()
	conf := fmt.Sprintf(`
options {
	directory "%[1]s";
	pid-file "%[1]s/named.pid";
	listen-on port %[2]s { 127.0.0.1; };
	listen-on-v6 { none; };
	recursion no;
	dnssec-validation no;
	notify no;
	allow-query { 127.0.0.1; };
};
controls { };
key "xfr-key" { algorithm hmac-sha256; secret "%[3]s"; };
zone "example.test" {
	type secondary;
	file "%[1]s/example.test.db";
	primaries port %[4]s { 127.0.0.1 key "xfr-key"; };
	allow-notify { 127.0.0.1; };
	request-ixfr yes;
};
`, dir, namedPort, secret, primaryPort)
	confFile := filepath.Join(dir, "named.conf")
	os.WriteFile(confFile, []byte(conf), 0o644)
	named := exec.Command("named", "-g", "-n", "1", "-c", confFile)
	var namedLog lockedBuffer
	named.Stdout, named.Stderr = &namedLog, &namedLog
	if err := named.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		named.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { named.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			named.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("named log:\n%s", namedLog.String())
		}
	})

	return &namedLog
}

// sameAnswers checks that the secondary answers every record of the zone
// exactly as we do: same owner, TTL, and RDATA bytes.
func sameAnswers(t *testing.T, ours, theirs string) {
	t.Helper()
	for _, q := range []struct {
		name  string
		qtype uint16
	}{
		{"_grpc_config.echo.example.test.", dns.TypeTXT},
		{"_grpc_config.big.example.test.", dns.TypeTXT},
		{"_grpc_config.huge.example.test.", dns.TypeTXT},
		{"_grpc._tcp.echo.example.test.", dns.TypeSRV},
		{"echo.example.test.", dns.TypeA},
		{"echo.example.test.", dns.TypeAAAA},
		{"example.test.", dns.TypeSOA},
		{"example.test.", dns.TypeNS},
	} {
		a := query(t, ours, q.name, q.qtype)
		b := query(t, theirs, q.name, q.qtype)
		if wireRRs(t, a.Answer) != wireRRs(t, b.Answer) || len(a.Answer) == 0 {
			t.Errorf("%s %s differs:\nours:   %v\nBIND's: %v", q.name, dns.TypeToString[q.qtype], a.Answer, b.Answer)
		}
	}
}

func wireRRs(t *testing.T, rrs []dns.RR) string {
	var out []string
	for _, rr := range rrs {
		buf := make([]byte, 65535)
		n, err := dns.PackRR(rr, buf, 0, nil, false)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%x", buf[:n]))
	}
	sort.Strings(out) // RRset order is not significant
	return strings.Join(out, " ")
}

// TestBINDSecondaryFollowsAPI: with `serve --store`, a BIND 9 secondary
// follows writes made through the admin API (the CLI's import and
// publish): AXFR of the imported zone, then for each publish our NOTIFY,
// an IXFR, and BIND (asked with dig) answers the new TXT record.
func TestBINDSecondaryFollowsAPI(t *testing.T) {
	need(t, "named", "dig")
	dir := t.TempDir()
	namedPort, ourPort, adminPort := freePort(t), freePort(t), freePort(t)
	namedAddr := "127.0.0.1:" + namedPort
	ourAddr := "127.0.0.1:" + ourPort
	server := "http://127.0.0.1:" + adminPort

	// The TSIG key is the server's (--config holds only settings and
	// keys with --store); the zone and its services come from the API.
	settings := filepath.Join(dir, "settings.yaml")
	os.WriteFile(settings, []byte(`tsigKeys:
  - {name: xfr-key, algorithm: hmac-sha256, secret: "`+secret+`"}
`), 0o644)
	var logs lockedBuffer
	pub := exec.Command(bin, "serve", "--store", filepath.Join(dir, "store"), "--config", settings,
		"--listen", ourAddr, "--admin", "127.0.0.1:"+adminPort)
	pub.Stderr = &logs
	if err := pub.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		pub.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { pub.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			pub.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("publisher log:\n%s", logs.String())
		}
	})
	waitFor(t, "the admin API", 10*time.Second, func() bool { return strings.Contains(logs.String(), `msg="admin API"`) })

	cfg := filepath.Join(dir, "publisher.yaml")
	os.WriteFile(cfg, []byte(pubConfigPadded(namedAddr, "192.0.2.1", 10)), 0o644)
	if out := run(t, bin, "import", "--config", cfg, "--server", server); !strings.Contains(out, "services/example.test echo to huge: 3 created") {
		t.Fatalf("import:\n%s", out)
	}

	namedLog := startNamed(t, namedPort, ourPort)

	serial := func(addr string) uint32 {
		m := new(dns.Msg)
		m.SetQuestion("example.test.", dns.TypeSOA)
		r, _, err := (&dns.Client{Timeout: time.Second}).Exchange(m, addr)
		if err != nil || r.Rcode != dns.RcodeSuccess || len(r.Answer) != 1 {
			return 0
		}
		return r.Answer[0].(*dns.SOA).Serial
	}
	v1 := serial(ourAddr)
	waitFor(t, "BIND to transfer the zone", 30*time.Second, func() bool { return serial(namedAddr) == v1 })
	sameAnswers(t, ourAddr, namedAddr)

	// Durations with a fraction are published with nine fraction digits
	// (compat.nineDigitDurations).
	for i, timeout := range []struct{ written, published string }{{"2.5s", "2.500000000s"}, {"7s", "7s"}} {
		svc := filepath.Join(dir, fmt.Sprintf("echo%d.yaml", i))
		os.WriteFile(svc, []byte(`metadata: {zone: example.test, name: echo}
spec:
  addresses: [192.0.2.1, "2001:db8::1"]
  port: 50051
  ttl: 30
  serviceConfig: {methodConfig: [{name: [{service: echo.Echo}], timeout: `+timeout.written+`}]}
`), 0o644)
		if out := run(t, bin, "publish", svc, "--server", server); !strings.Contains(out, "service/example.test/echo configured") {
			t.Fatalf("publish:\n%s", out)
		}
		var v2 uint32
		waitFor(t, "a new serial", 5*time.Second, func() bool { v2 = serial(ourAddr); return v2 != v1 })
		waitFor(t, "BIND to follow the write", 30*time.Second, func() bool { return serial(namedAddr) == v2 })
		if !regexp.MustCompile(`msg="zone transfer" zone=example.test. type=ixfr serial=` + fmt.Sprint(v2)).MatchString(logs.String()) {
			t.Errorf("write %d did not go by incremental IXFR:\n%s", i, logs.String())
		}
		out := runStdout(t, "dig", "@127.0.0.1", "-p", namedPort, "+short", "TXT", "_grpc_config.echo.example.test.")
		if !strings.Contains(out, `\"timeout\":\"`+timeout.published+`\"`) {
			t.Errorf("write %d: dig at BIND answers %q, want the timeout %s", i, out, timeout.published)
		}
		sameAnswers(t, ourAddr, namedAddr)
		v1 = v2
	}
	if n := strings.Count(namedLog.String(), "received notify for zone 'example.test'"); n < 2 {
		t.Errorf("BIND logged %d NOTIFYs of ours, want one per write", n)
	}
}
