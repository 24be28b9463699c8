//go:build tooltest

package tooltest

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// signedConfig is the publisher config of the DNSSEC tool tests: a
// signed zone, the services named extra added (each with an address and
// a config), transferred to 127.0.0.1 with the TSIG key.
func signedConfig(notify string, extra []string) string {
	n := ""
	if notify != "" {
		n = `, notify: ["` + notify + `"]`
	}
	var b strings.Builder
	b.WriteString(`
tsigKeys:
  - {name: xfr-key, algorithm: hmac-sha256, secret: "` + secret + `"}
zones:
  - origin: example.test.
    ttl: 60
    dnssec: {algorithm: ecdsap256sha256, keys: csk}
    nameservers: [{name: ns1, addresses: [127.0.0.1]}]
    transfer: {allow: [127.0.0.1], key: xfr-key` + n + `}
    services:
      - name: echo
        addresses: [192.0.2.1, "2001:db8::1"]
        port: 50051
        serviceConfig: {methodConfig: [{name: [{service: echo.Echo}], timeout: 1.5s}]}
      - name: www
        addresses: [192.0.2.80]
`)
	for i, name := range extra {
		fmt.Fprintf(&b, "      - name: %s\n        addresses: [10.0.0.%d]\n        serviceConfig: {methodConfig: [{name: [{service: s%d.S}], timeout: %ds}]}\n", name, i%250+1, i, i+1)
	}
	return b.String()
}

// anchorFile writes a delv trust anchor file for the publisher's key
// (made in FILE.keys at its start) and returns its path.
func anchorFile(t *testing.T, p *publisher) string {
	t.Helper()
	keys, _ := filepath.Glob(p.file + ".keys/Kexample.test.+013+*.key")
	var anchors []string
	for _, k := range keys {
		text, err := os.ReadFile(k)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(text), "\n") {
			if rr, err := dns.NewRR(line); err == nil && rr != nil {
				if key, ok := rr.(*dns.DNSKEY); ok && key.Flags&dns.SEP != 0 {
					anchors = append(anchors, fmt.Sprintf(`example.test. static-key %d %d %d "%s";`, key.Flags, key.Protocol, key.Algorithm, key.PublicKey))
				}
			}
		}
	}
	if len(anchors) == 0 {
		t.Fatalf("no key-signing key in %s.keys", p.file)
	}
	path := filepath.Join(t.TempDir(), "anchor.conf")
	os.WriteFile(path, []byte("trust-anchors {\n"+strings.Join(anchors, "\n")+"\n};\n"), 0o644)
	return path
}

// delvValidates asks host:port with delv, validating from the anchor,
// and requires "fully validated".
func delvValidates(t *testing.T, anchor, host, port, qtype, name string) {
	t.Helper()
	var out strings.Builder
	for range 3 {
		cmdOut := run(t, "delv", "@"+host, "-p", port, "-a", anchor, "+root=example.test", "+tcp", qtype, name)
		if strings.Contains(cmdOut, "fully validated") {
			return
		}
		out.WriteString(cmdOut)
		time.Sleep(200 * time.Millisecond)
	}
	t.Errorf("delv %s %s at %s:%s did not validate:\n%s", qtype, name, host, port, out.String())
}

// verifyAXFR transfers the zone from addr into file and runs BIND's
// dnssec-verify and ldns-verify-zone on it.
func verifyAXFR(t *testing.T, addr, file string) {
	t.Helper()
	os.WriteFile(file, []byte(transferZone(t, addr)), 0o644)
	run(t, "dnssec-verify", "-q", "-z", "-o", "example.test", file)
	run(t, "ldns-verify-zone", file)
}

// transferZone returns the zone by AXFR from addr, with the TSIG key,
// as a master file for the verifiers (the closing SOA left out).
func transferZone(t *testing.T, addr string) string {
	t.Helper()
	m := new(dns.Msg)
	m.SetAxfr("example.test.")
	m.SetTsig("xfr-key.", dns.HmacSHA256, 300, time.Now().Unix())
	tr := &dns.Transfer{TsigSecret: map[string]string{"xfr-key.": secret}}
	env, err := tr.In(m, addr)
	if err != nil {
		t.Fatal(err)
	}
	var rrs []dns.RR
	for e := range env {
		if e.Error != nil {
			t.Fatal(e.Error)
		}
		rrs = append(rrs, e.RR...)
	}
	var b strings.Builder
	for _, rr := range rrs[:len(rrs)-1] {
		b.WriteString(rr.String() + "\n")
	}
	return b.String()
}

// TestSignedZoneVerifies: the AXFR of every version of a signed zone
// along a sequence of random changes passes BIND's dnssec-verify and
// ldns-verify-zone, and delv, from the zone's key as trust anchor,
// fully validates a config, addresses, NODATA and NXDOMAIN answers of
// each version, the changed names among them.
func TestSignedZoneVerifies(t *testing.T) {
	need(t, "delv", "dnssec-verify", "ldns-verify-zone")
	rng := rand.New(rand.NewPCG(7, 29))
	var extra []string
	p := startPublisher(t, signedConfig("", extra))
	anchor := anchorFile(t, p)
	serial := func() uint32 { return query(t, p.addr, "example.test.", dns.TypeSOA).Answer[0].(*dns.SOA).Serial }
	names := []string{"a", "b.a", "z", "m.www", "q.r.s", "api", "x-1"}
	dir := t.TempDir()
	for round := range 50 {
		verifyAXFR(t, p.addr, filepath.Join(dir, fmt.Sprintf("v%d.zone", round)))
		if round%10 != 0 {
			// delv's answers are checked every tenth version (each asks
			// the keys again): the verifiers check every one.
			goto change
		}
		delvValidates(t, anchor, p.host, p.port, "TXT", "_grpc_config.echo.example.test")
		delvValidates(t, anchor, p.host, p.port, "A", "www.example.test")
		delvValidates(t, anchor, p.host, p.port, "TXT", "_grpc_config.www.example.test") // NXDOMAIN
		delvValidates(t, anchor, p.host, p.port, "TXT", "www.example.test")              // NODATA
		for _, n := range extra {
			delvValidates(t, anchor, p.host, p.port, "TXT", "_grpc_config."+n+".example.test")
		}
	change:
		// A change: a service added or removed.
		n := names[rng.IntN(len(names))]
		if i := indexOf(extra, n); i >= 0 {
			extra = append(extra[:i:i], extra[i+1:]...)
		} else {
			extra = append(extra, n)
		}
		before := serial()
		p.reload(t, signedConfig("", extra))
		waitFor(t, "the change to be served", 10*time.Second, func() bool { return serial() != before })
	}
}

func indexOf(s []string, v string) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}

// TestBINDServesSignedZone: BIND, as our secondary, transfers the signed
// zone (AXFR, then IXFR after a change), and delv and Unbound validate
// its answers from our key, as resolvers do through any secondary.
func TestBINDServesSignedZone(t *testing.T) {
	need(t, "named", "delv")
	namedPort := freePort(t)
	namedAddr := "127.0.0.1:" + namedPort
	p := startPublisher(t, signedConfig(namedAddr, nil))
	anchor := anchorFile(t, p)
	startNamed(t, namedPort, p.port)
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
	delvValidates(t, anchor, "127.0.0.1", namedPort, "TXT", "_grpc_config.echo.example.test")
	delvValidates(t, anchor, "127.0.0.1", namedPort, "A", "nope.example.test")

	p.reload(t, signedConfig(namedAddr, []string{"api"}))
	waitFor(t, "a new serial", 10*time.Second, func() bool { return ourSerial() != v1 })
	v2 := ourSerial()
	waitFor(t, "BIND to follow the change", 30*time.Second, func() bool { return theirSerial() == v2 })
	if !strings.Contains(p.logs.String(), "type=ixfr serial="+fmt.Sprint(v2)) {
		t.Errorf("the change did not go by IXFR:\n%s", p.logs.String())
	}
	delvValidates(t, anchor, "127.0.0.1", namedPort, "TXT", "_grpc_config.api.example.test")
	delvValidates(t, anchor, "127.0.0.1", namedPort, "A", "api.example.test")
	delvValidates(t, anchor, "127.0.0.1", namedPort, "TXT", "_grpc_config.nope.example.test")
	unboundValidatesThrough(t, p, namedPort)
}

// resolverAt returns a function that asks the validating resolver at
// addr with the DO bit, over TCP: nil when it does not answer.
func resolverAt(addr string) func(name string, qtype uint16) *dns.Msg {
	return func(name string, qtype uint16) *dns.Msg {
		m := new(dns.Msg)
		m.SetQuestion(name, qtype)
		m.SetEdns0(1232, true)
		r, _, err := (&dns.Client{Net: "tcp", Timeout: 5 * time.Second}).Exchange(m, addr)
		if err != nil {
			return nil
		}
		return r
	}
}

// unboundValidatesThrough requires Unbound, validating from the zone's
// DS with the secondary at port as the zone's stub, to answer with AD.
func unboundValidatesThrough(t *testing.T, p *publisher, port string) {
	t.Helper()
	requireValidated(t, unboundAt(t, p, port), "Unbound through the secondary at port "+port, "api")
}

// unboundAt starts Unbound with the zone's DS (of publisher p) as trust
// anchor and the server at port as the zone's stub, waits for it to
// answer, and returns how to ask it.
func unboundAt(t *testing.T, p *publisher, port string) func(name string, qtype uint16) *dns.Msg {
	t.Helper()
	need(t, "unbound")
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "anchor.ds"), []byte(run(t, bin, "dnssec", "ds", "example.test", "--config", p.file)), 0o644)
	ask := resolverAt("127.0.0.1:" + startUnbound(t, dir, port))
	waitFor(t, "unbound to answer", 10*time.Second, func() bool { return ask("example.test.", dns.TypeSOA) != nil })
	return ask
}

// requireValidated requires answers with AD set from ask: service svc's
// config, an address, NXDOMAIN and NODATA (www has no config).
func requireValidated(t *testing.T, ask func(string, uint16) *dns.Msg, where, svc string) {
	t.Helper()
	for _, q := range []struct {
		name  string
		qtype uint16
		rcode int
	}{
		{"_grpc_config." + svc + ".example.test.", dns.TypeTXT, dns.RcodeSuccess},
		{"api.example.test.", dns.TypeA, dns.RcodeSuccess},
		{"_grpc_config.nope.example.test.", dns.TypeTXT, dns.RcodeNameError},
		{"www.example.test.", dns.TypeTXT, dns.RcodeSuccess}, // NODATA
	} {
		if r := ask(q.name, q.qtype); r == nil || r.Rcode != q.rcode || !r.AuthenticatedData {
			t.Errorf("%s, %s %s: want rcode %d with AD, got %v", where, q.name, dns.TypeToString[q.qtype], q.rcode, r)
		}
	}
}

// flipProxy forwards DNS queries to upstream, over UDP and TCP, changing
// one letter of every TXT string of the answers while flip is set.
type flipProxy struct {
	addr string
	flip atomic.Bool
}

func startFlipProxy(t *testing.T, upstream string) *flipProxy {
	t.Helper()
	p := &flipProxy{}
	pc, l := listenBoth(t)
	p.addr = pc.LocalAddr().String()
	h := dns.HandlerFunc(func(w dns.ResponseWriter, req *dns.Msg) {
		r, _, err := (&dns.Client{Net: "tcp", Timeout: 2 * time.Second}).Exchange(req, upstream)
		if err != nil {
			return
		}
		if p.flip.Load() {
			for _, rr := range r.Answer {
				if txt, ok := rr.(*dns.TXT); ok {
					txt.Txt[0] = strings.Replace(txt.Txt[0], "e", "f", 1)
				}
			}
		}
		w.WriteMsg(r)
	})
	udp, tcp := &dns.Server{PacketConn: pc, Handler: h}, &dns.Server{Listener: l, Handler: h}
	go udp.ActivateAndServe()
	go tcp.ActivateAndServe()
	t.Cleanup(func() { udp.Shutdown(); tcp.Shutdown() })
	return p
}

// listenBoth binds UDP and TCP on one free port of 127.0.0.1: a port
// free for UDP may be taken for TCP (another test's connection), so it
// tries others.
func listenBoth(t *testing.T) (net.PacketConn, net.Listener) {
	t.Helper()
	for range 50 {
		pc, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		l, err := net.Listen("tcp", pc.LocalAddr().String())
		if err == nil {
			return pc, l
		}
		pc.Close()
	}
	t.Fatal("no port free for both UDP and TCP")
	return nil, nil
}

// TestUnboundValidates: Unbound, a validating resolver given the zone's
// DS as trust anchor and the publisher as the stub of the zone, answers
// configs, addresses and NXDOMAIN with AD set, and SERVFAIL when a proxy
// between them changes one byte of a config.
func TestUnboundValidates(t *testing.T) {
	need(t, "unbound")
	p := startPublisher(t, signedConfig("", []string{"api", "web"}))
	proxy := startFlipProxy(t, p.addr)
	_, proxyPort, _ := net.SplitHostPort(proxy.addr)
	ask := unboundAt(t, p, proxyPort)
	requireValidated(t, ask, "Unbound through the proxy", "echo")
	proxy.flip.Store(true)
	if r := ask("_grpc_config.api.example.test.", dns.TypeTXT); r == nil || r.Rcode != dns.RcodeServerFailure {
		t.Errorf("a changed config: want SERVFAIL, got %v", r)
	}
	proxy.flip.Store(false)
	if r := ask("_grpc_config.web.example.test.", dns.TypeTXT); r == nil || r.Rcode != dns.RcodeSuccess || !r.AuthenticatedData {
		t.Errorf("after the proxy stopped: %v", r)
	}
}

// TestKnotServesSignedZone: Knot DNS, as our secondary, transfers the
// signed zone (AXFR, then IXFR after our NOTIFY), and delv and Unbound
// validate its answers from our key: the signatures go through unchanged.
func TestKnotServesSignedZone(t *testing.T) {
	need(t, "knotd", "delv")
	dir := t.TempDir()
	port := freePort(t)
	knotAddr := "127.0.0.1:" + port
	p := startPublisher(t, signedConfig(knotAddr, nil))
	anchor := anchorFile(t, p)
	confFile := filepath.Join(dir, "knot.conf")
	os.WriteFile(confFile, []byte(knotConf(dir, "127.0.0.1@"+port, p.host+"@"+p.port, secret)), 0o644)
	s := startSecondary(t, "Knot", knotAddr, "knotd", "-c", confFile)
	ourSerial := func() uint32 { return query(t, p.addr, "example.test.", dns.TypeSOA).Answer[0].(*dns.SOA).Serial }
	v1 := ourSerial()
	waitFor(t, "Knot to transfer the zone", 30*time.Second, func() bool { return s.serial() == v1 })
	delvValidates(t, anchor, "127.0.0.1", port, "TXT", "_grpc_config.echo.example.test")
	delvValidates(t, anchor, "127.0.0.1", port, "A", "nope.example.test")
	p.reload(t, signedConfig(knotAddr, []string{"api"}))
	waitFor(t, "a new serial", 10*time.Second, func() bool { return ourSerial() != v1 })
	v2 := ourSerial()
	waitFor(t, "Knot to follow the change", 30*time.Second, func() bool { return s.serial() == v2 })
	if !strings.Contains(p.logs.String(), "type=ixfr serial="+fmt.Sprint(v2)) {
		t.Errorf("the change did not go by IXFR:\n%s", p.logs.String())
	}
	delvValidates(t, anchor, "127.0.0.1", port, "TXT", "_grpc_config.api.example.test")
	delvValidates(t, anchor, "127.0.0.1", port, "TXT", "_grpc_config.nope.example.test")
	unboundValidatesThrough(t, p, port)
}

// startUnbound starts Unbound, validating from the trust anchor in
// dir/anchor.ds, with the publisher at stubPort as the zone's stub (and
// the configuration extra adds), and returns its port.
func startUnbound(t *testing.T, dir, stubPort string, extra ...string) string {
	t.Helper()
	port := freePort(t)
	conf := fmt.Sprintf(`server:
	interface: 127.0.0.1
	port: %s
	do-ip6: no
	do-not-query-localhost: no
	username: ""
	chroot: ""
	directory: "%s"
	pidfile: "%s/unbound.pid"
	use-syslog: no
	logfile: ""
	verbosity: 1
	val-log-level: 2
	module-config: "validator iterator"
	trust-anchor-file: "%s/anchor.ds"
	access-control: 127.0.0.0/8 allow
	harden-dnssec-stripped: yes
	# .test is one of Unbound's default local zones (RFC 6761).
	local-zone: "test." nodefault
remote-control:
	control-enable: no
stub-zone:
	name: "example.test"
	stub-addr: 127.0.0.1@%s
%s`, port, dir, dir, dir, stubPort, strings.Join(extra, ""))
	confFile := filepath.Join(dir, "unbound.conf")
	os.WriteFile(confFile, []byte(conf), 0o644)
	run(t, "unbound-checkconf", confFile)
	cmd := exec.Command("unbound", "-d", "-c", confFile)
	var logs lockedBuffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
		if t.Failed() {
			t.Logf("unbound log:\n%s", logs.String())
		}
	})
	return port
}

// TestUnboundThroughZSKRollovers: Unbound validates the zone without a
// single SERVFAIL while its zone-signing key is rolled twice, the
// timings shortened by configuration (a TTL of 1 s, a key lifetime of
// 6 s: each new key published 2 s before it signs, each old one kept 2 s
// after).
func TestUnboundThroughZSKRollovers(t *testing.T) {
	need(t, "unbound")
	cfg := strings.Replace(signedConfig("", []string{"api"}), "    ttl: 60\n    dnssec: {algorithm: ecdsap256sha256, keys: csk}\n",
		"    ttl: 1\n    soa: {minimum: 1}\n    dnssec: {keys: ksk-zsk, zskLifetime: 6s, signatureValidity: 1h, signatureRefresh: 30m}\n", 1)
	if cfg == signedConfig("", []string{"api"}) {
		t.Fatal("the config was not changed")
	}
	p := startPublisher(t, cfg)
	ds := run(t, bin, "dnssec", "ds", "example.test", "--config", p.file)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "anchor.ds"), []byte(ds), 0o644)
	port := startUnbound(t, dir, p.port)
	addr := "127.0.0.1:" + port
	ask := resolverAt(addr)
	waitFor(t, "unbound to answer", 10*time.Second, func() bool { return ask("example.test.", dns.TypeSOA) != nil })
	signers := map[uint16]bool{}
	deadline := time.Now().Add(16 * time.Second)
	asked := 0
	for time.Now().Before(deadline) {
		for _, q := range []struct {
			name  string
			qtype uint16
		}{{"_grpc_config.echo.example.test.", dns.TypeTXT}, {"api.example.test.", dns.TypeA}, {"_grpc_config.nope.example.test.", dns.TypeTXT}} {
			r := ask(q.name, q.qtype)
			asked++
			if r == nil || r.Rcode == dns.RcodeServerFailure || !r.AuthenticatedData {
				t.Fatalf("after %d answers, %s %s: %v\npublisher log:\n%s", asked, q.name, dns.TypeToString[q.qtype], r, p.logs.String())
			}
		}
		// Which key signs, straight from the publisher.
		for _, rr := range askDO(t, p.addr, "_grpc_config.echo.example.test.", dns.TypeTXT).Answer {
			if sig, ok := rr.(*dns.RRSIG); ok {
				signers[sig.KeyTag] = true
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	if len(signers) < 3 {
		t.Errorf("%d zone-signing keys signed in 16 s with a lifetime of 6 s, want 3 or more", len(signers))
	}
	t.Logf("%d answers validated, %d zone-signing keys", asked, len(signers))
}

// askDO asks addr with the DO bit, over TCP.
func askDO(t *testing.T, addr, name string, qtype uint16) *dns.Msg {
	t.Helper()
	m := new(dns.Msg)
	m.SetQuestion(name, qtype)
	m.SetEdns0(4096, true)
	r, _, err := (&dns.Client{Net: "tcp", Timeout: 3 * time.Second}).Exchange(m, addr)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestSignedStoreVerifies: a signed zone of serve --store, changed
// through the admin API (services created, replaced and deleted at
// random, with the CLI), passes dnssec-verify and ldns-verify-zone at
// every serial, and delv validates the changed names from its DS.
func TestSignedStoreVerifies(t *testing.T) {
	need(t, "delv", "dnssec-verify", "ldns-verify-zone")
	dir := t.TempDir()
	ourPort, adminPort := freePort(t), freePort(t)
	ourAddr := "127.0.0.1:" + ourPort
	server := "http://127.0.0.1:" + adminPort
	settings := filepath.Join(dir, "settings.yaml")
	os.WriteFile(settings, []byte("tsigKeys:\n  - {name: xfr-key, algorithm: hmac-sha256, secret: \""+secret+"\"}\n"), 0o644)
	keys := filepath.Join(dir, "keys")
	var logs lockedBuffer
	pub := exec.Command(bin, "serve", "--store", filepath.Join(dir, "store"), "--config", settings, "--dnssec-keys", keys,
		"--listen", ourAddr, "--admin", "127.0.0.1:"+adminPort)
	pub.Stderr = &logs
	if err := pub.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		pub.Process.Signal(syscall.SIGTERM)
		pub.Wait()
		if t.Failed() {
			t.Logf("publisher log:\n%s", logs.String())
		}
	})
	waitFor(t, "the admin API", 10*time.Second, func() bool { return strings.Contains(logs.String(), `msg="admin API"`) })
	cfg := filepath.Join(dir, "publisher.yaml")
	os.WriteFile(cfg, []byte(signedConfig("", nil)), 0o644)
	run(t, bin, "import", "--config", cfg, "--server", server)
	serial := func() uint32 {
		r := query(t, ourAddr, "example.test.", dns.TypeSOA)
		if len(r.Answer) == 0 {
			return 0
		}
		return r.Answer[0].(*dns.SOA).Serial
	}
	waitFor(t, "the zone to be served", 10*time.Second, func() bool { return serial() != 0 })
	ds := run(t, bin, "dnssec", "ds", "example.test", "--dnssec-keys", keys)
	anchor := filepath.Join(dir, "anchor.ds")
	var key strings.Builder
	for _, f := range mustGlob(t, filepath.Join(keys, "Kexample.test.+013+*.key")) {
		text, _ := os.ReadFile(f)
		for _, line := range strings.Split(string(text), "\n") {
			if rr, err := dns.NewRR(line); err == nil && rr != nil {
				if k, ok := rr.(*dns.DNSKEY); ok && k.Flags&dns.SEP != 0 {
					fmt.Fprintf(&key, "example.test. static-key %d %d %d \"%s\";\n", k.Flags, k.Protocol, k.Algorithm, k.PublicKey)
				}
			}
		}
	}
	os.WriteFile(anchor, []byte("trust-anchors {\n"+key.String()+"};\n"), 0o644)
	if !strings.Contains(ds, "\tDS\t") {
		t.Fatalf("dnssec ds: %s", ds)
	}
	rng := rand.New(rand.NewPCG(3, 5))
	names := []string{"a", "b.a", "z", "m.www", "q.r.s", "api", "x-1", "echo"}
	have := map[string]bool{"echo": true, "www": true}
	for round := range 50 {
		verifyAXFR(t, ourAddr, filepath.Join(dir, fmt.Sprintf("v%d.zone", round)))
		n := names[rng.IntN(len(names))]
		before := serial()
		if have[n] && rng.IntN(2) == 0 {
			run(t, bin, "delete", "example.test", n, "--server", server)
			delete(have, n)
		} else {
			svc := filepath.Join(dir, "svc.yaml")
			os.WriteFile(svc, []byte(fmt.Sprintf("metadata: {zone: example.test, name: %s}\nspec:\n  addresses: [10.0.0.%d]\n  serviceConfig: {methodConfig: [{name: [{service: s.S}], timeout: %ds}]}\n", n, round+1, round+1)), 0o644)
			run(t, bin, "publish", svc, "--server", server)
			have[n] = true
		}
		waitFor(t, "the write to be served", 10*time.Second, func() bool { return serial() != before })
		if round%10 == 9 {
			if have[n] {
				delvValidates(t, anchor, "127.0.0.1", ourPort, "TXT", "_grpc_config."+n+".example.test")
			} else {
				delvValidates(t, anchor, "127.0.0.1", ourPort, "A", n+".example.test")
			}
		}
	}
}

func mustGlob(t *testing.T, pattern string) []string {
	t.Helper()
	m, err := filepath.Glob(pattern)
	if err != nil || len(m) == 0 {
		t.Fatalf("no file matches %s", pattern)
	}
	return m
}
