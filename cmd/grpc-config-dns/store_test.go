package main

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/grpc-config-dns/grpc-config-dns/internal/etcdtest"
)

// freeAddr returns an address free for UDP and TCP on 127.0.0.1.
func freeAddr(t *testing.T) string {
	t.Helper()
	for range 20 {
		pc, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := pc.LocalAddr().String()
		l, err := net.Listen("tcp", addr)
		pc.Close()
		if err == nil {
			l.Close()
			return addr
		}
	}
	t.Fatal("no free port")
	return ""
}

// storeServe is `serve --store` running in this process.
type storeServe struct {
	t            *testing.T
	dnsAddr, api string
	logs         *lockedBuffer
	done         chan int
}

func startStoreServe(t *testing.T, location string, extra ...string) *storeServe {
	t.Helper()
	// A port freeAddr found free can be taken before serve binds it (an
	// outgoing connection's source port, to etcd say): then try others.
	for attempt := 0; ; attempt++ {
		s := &storeServe{t: t, dnsAddr: freeAddr(t), api: freeAddr(t), logs: &lockedBuffer{}, done: make(chan int, 1)}
		args := append([]string{"serve", "--store", location, "--listen", s.dnsAddr, "--admin", s.api, "--shutdown-grace", "1s"}, extra...)
		go func() { s.done <- run(args, strings.NewReader(""), io.Discard, s.logs) }()
		if s.started(attempt < 4) {
			return s
		}
	}
}

// started waits for serve to say its admin API listens; it reports false
// when serve exited because an address was in use and retry is set.
func (s *storeServe) started(retry bool) bool {
	t := s.t
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if strings.Contains(s.logs.String(), "msg=\"admin API\"") {
			return true
		}
		select {
		case code := <-s.done:
			if retry && strings.Contains(s.logs.String(), "already in use") {
				t.Logf("serve exited %d, an address was taken meanwhile; trying other ports", code)
				return false
			}
			t.Fatalf("serve exited %d:\n%s", code, s.logs.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve did not start:\n%s", s.logs.String())
		}
	}
}

// stopAll stops every in-process serve (they share the process's
// signals).
func stopAll(t *testing.T, servers ...*storeServe) {
	t.Helper()
	syscall.Kill(os.Getpid(), syscall.SIGTERM)
	for _, s := range servers {
		select {
		case code := <-s.done:
			if code != 0 {
				t.Errorf("serve exited %d", code)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("serve did not stop on SIGTERM:\n%s", s.logs.String())
		}
		if t.Failed() {
			t.Logf("serve log:\n%s", s.logs.String())
		}
	}
}

func (s *storeServe) url() string { return "http://" + s.api }

func (s *storeServe) cli(args ...string) (int, string, string) {
	s.t.Helper()
	return runCLI(s.t, append(args, "--server", s.url())...)
}

// txt asks the TXT record of name and the zone's SOA serial.
func (s *storeServe) txt(name string) (string, uint32, error) {
	c := &dns.Client{Timeout: time.Second}
	m := new(dns.Msg)
	m.SetQuestion(name, dns.TypeTXT)
	r, _, err := c.Exchange(m, s.dnsAddr)
	if err != nil {
		return "", 0, err
	}
	txt := ""
	for _, rr := range r.Answer {
		if t, ok := rr.(*dns.TXT); ok {
			txt = strings.Join(t.Txt, "")
		}
	}
	m.SetQuestion("example.test.", dns.TypeSOA)
	r, _, err = c.Exchange(m, s.dnsAddr)
	if err != nil {
		return "", 0, err
	}
	if len(r.Answer) != 1 {
		return txt, 0, fmt.Errorf("no SOA: %v", r)
	}
	return txt, r.Answer[0].(*dns.SOA).Serial, nil
}

// waitTXT waits until name's TXT holds want, and returns the serial.
func (s *storeServe) waitTXT(name, want string, within time.Duration) uint32 {
	s.t.Helper()
	start := time.Now()
	for {
		txt, serial, err := s.txt(name)
		if err == nil && strings.Contains(txt, want) {
			return serial
		}
		if time.Since(start) > within {
			s.t.Fatalf("%s at %s: %q (%v), want %q within %v", name, s.dnsAddr, txt, err, want, within)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (s *storeServe) readyz() int {
	resp, err := http.Get(s.url() + "/readyz")
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

func TestServeStoreRefusesOpenAdminWithoutToken(t *testing.T) {
	code, _, errs := runCLI(t, "serve", "--store", t.TempDir(), "--admin", "0.0.0.0:0", "--listen", "127.0.0.1:0")
	if code != exitUsage || !strings.Contains(errs, "--admin-token-file") {
		t.Errorf("exit %d:\n%s", code, errs)
	}
	if code, _, errs := runCLI(t, "serve", "--admin", "127.0.0.1:0"); code != exitUsage || !strings.Contains(errs, "--store") {
		t.Errorf("--admin without --store: exit %d\n%s", code, errs)
	}
	if code, _, errs := runCLI(t, "serve", "--store", "http://x/y"); code != exitUsage || !strings.Contains(errs, "etcd://") {
		t.Errorf("a store URL of another scheme: exit %d\n%s", code, errs)
	}
}

func serviceFile(t *testing.T, timeout string) string {
	return writeFile(t, "echo.yaml", fmt.Sprintf(`metadata: {zone: example.test, name: echo}
spec:
  addresses: [192.0.2.1]
  serviceConfig: {methodConfig: [{name: [{service: echo.Echo}], timeout: %s}]}
`, timeout))
}

// TestStoreCLI is the README's three commands and the rest of the client:
// serve with a store, publish a config, dig sees it; then conditional
// writes, refusals, lists in pages, get and delete.
func TestStoreCLI(t *testing.T) {
	token := writeFile(t, "tokens", "# admin tokens\n0123456789abcdef0123456789abcdef\n")
	s := startStoreServe(t, t.TempDir(), "--admin-token-file", token)
	defer stopAll(t, s)

	if code, _, errs := s.cli("publish", "../../testdata/publisher/example.yaml"); code != exitUsage || !strings.Contains(errs, "bearer token") {
		t.Fatalf("publish without a token: exit %d\n%s", code, errs)
	}
	t.Setenv(envToken, "0123456789abcdef0123456789abcdef")
	code, out, errs := s.cli("publish", "../../testdata/publisher/example.yaml")
	if code != 0 || !strings.Contains(out, "services/example.test echo to www: 3 created") {
		t.Fatalf("publish: exit %d\n%s%s", code, out, errs)
	}
	s.waitTXT("_grpc_config.echo.example.test.", "round_robin", time.Second)

	// A conditional write with a stale version is refused; the right one
	// goes through and reaches DNS.
	f := serviceFile(t, "2s")
	if code, _, errs := s.cli("publish", f, "--if-version", "1"); code != exitInvalid || !strings.Contains(errs, "modified") {
		t.Errorf("stale --if-version: exit %d\n%s", code, errs)
	}
	_, out, _ = s.cli("get", "example.test", "echo", "-o", "json")
	rv := regexp.MustCompile(`"resourceVersion": "(\d+)"`).FindStringSubmatch(out)
	if rv == nil {
		t.Fatalf("get -o json:\n%s", out)
	}
	if code, out, errs := s.cli("publish", f, "--if-version", rv[1]); code != 0 || !strings.Contains(out, "configured") {
		t.Errorf("publish --if-version %s: exit %d\n%s%s", rv[1], code, out, errs)
	}
	s.waitTXT("_grpc_config.echo.example.test.", `\"2s\"`, time.Second)

	// An invalid config is refused with lint's diagnostics, and not served.
	bad := serviceFile(t, "2x")
	if code, _, errs := s.cli("publish", bad); code != exitInvalid || !strings.Contains(errs, "/spec/serviceConfig/methodConfig/0/timeout") {
		t.Errorf("invalid: exit %d\n%s", code, errs)
	}
	if txt, _, _ := s.txt("_grpc_config.echo.example.test."); !strings.Contains(txt, `\"2s\"`) {
		t.Errorf("after a refused write: %s", txt)
	}

	// Lists: a table, pages, yaml.
	_, out, _ = s.cli("list", "example.test")
	if !strings.Contains(out, "ZONE") || strings.Count(out, "example.test") != 3 {
		t.Errorf("list:\n%s", out)
	}
	_, out, errs = s.cli("list", "example.test", "--limit", "2", "-o", "yaml")
	m := regexp.MustCompile(`--continue (\S+)`).FindStringSubmatch(errs)
	if m == nil || !strings.Contains(out, "items:") {
		t.Fatalf("list --limit 2:\n%s%s", out, errs)
	}
	if code, out, _ := s.cli("list", "example.test", "--continue", m[1]); code != 0 || strings.Count(out, "example.test") != 1 {
		t.Errorf("second page: exit %d\n%s", code, out)
	}
	// Selectors, as kubectl's.
	if code, out, errs := s.cli("list", "example.test", "--field-selector", "metadata.name=www"); code != 0 || strings.Count(out, "example.test") != 1 || !strings.Contains(out, "www") {
		t.Errorf("list --field-selector: exit %d\n%s%s", code, out, errs)
	}
	if code, out, errs := s.cli("list", "example.test", "-l", "nobody=here"); code != 0 || strings.Count(out, "example.test") != 0 {
		t.Errorf("list -l nobody=here: exit %d\n%s%s", code, out, errs)
	}
	if code, _, errs := s.cli("list", "example.test", "-l", "team in ("); code != exitInvalid || !strings.Contains(errs, "labelSelector") {
		t.Errorf("list -l with a bad selector: exit %d\n%s", code, errs)
	}
	if code, _, errs := s.cli("list", "example.test", "--match", "Exact"); code != exitInvalid || !strings.Contains(errs, "resourceVersionMatch") {
		t.Errorf("--match without --resource-version: exit %d\n%s", code, errs)
	}
	// Delete.
	if code, out, errs := s.cli("delete", "example.test", "www"); code != 0 || !strings.Contains(out, "deleted") {
		t.Errorf("delete: exit %d\n%s%s", code, out, errs)
	}
	if code, _, _ := s.cli("get", "example.test", "www"); code != exitInvalid {
		t.Errorf("get after delete: exit %d", code)
	}
	if code, _, errs := s.cli("delete", "example.test"); code != exitInvalid || !strings.Contains(errs, "services") {
		t.Errorf("delete a zone with services: exit %d\n%s", code, errs)
	}
	// import is publish of a config; unchanged objects stay.
	cfg := writeFile(t, "p.yaml", "zones:\n  - origin: other.test.\n    nameservers: [ns1.example.net.]\n    services:\n      - name: a\n        serviceConfig: {}\n")
	if code, out, errs := s.cli("import", "--config", cfg); code != 0 || !strings.Contains(out, "services/other.test a to a: 1 created") {
		t.Errorf("import: exit %d\n%s%s", code, out, errs)
	}
	if code, _, errs := s.cli("import", "--config", cfg); code != 0 || !strings.Contains(errs, "0 created, 0 configured, 2 unchanged") {
		t.Errorf("import again: exit %d\n%s", code, errs)
	}
	// A zone inside a stored one is refused as lint refuses the two in
	// one file (zone-nested), and said so, at its origin in the file; its
	// services are not sent.
	nested := writeFile(t, "n.yaml", "zones:\n  - origin: sub.other.test.\n    nameservers: [ns1.example.net.]\n    services:\n      - name: a\n        serviceConfig: {}\n")
	if code, out, errs := s.cli("import", "--config", nested); code != exitInvalid || out != "" ||
		!strings.Contains(errs, nested+":2:13: error: zone sub.other.test. lies inside zone other.test. (stored, version ") ||
		!strings.Contains(errs, "serve its names as services of other.test. (at /metadata/name) [zone-nested]") || !strings.Contains(errs, "0 created, 0 configured, 0 unchanged, 1 refused") {
		t.Errorf("import of a zone inside a stored one: exit %d\n%s%s", code, out, errs)
	}
	if code, _, _ := s.cli("get", "sub.other.test"); code != exitInvalid {
		t.Errorf("the refused zone is stored: get exits %d", code)
	}
	var buf bytes.Buffer
	buf.WriteString(s.logs.String())
	if strings.Contains(buf.String(), "level=ERROR") {
		t.Errorf("errors logged:\n%s", buf.String())
	}
}

// TestReplicasOnEtcd: two serve replicas on one etcd answer a write made
// through either within a second, with the same serial; with etcd
// stopped for 10 s both keep answering and say they are not ready, and
// both catch up when it returns.
func TestReplicasOnEtcd(t *testing.T) {
	e := etcdtest.Start(t)
	loc := e.Location("replicas")
	a := startStoreServe(t, loc)
	b := startStoreServe(t, loc)
	defer stopAll(t, a, b)

	if code, out, errs := a.cli("publish", "../../testdata/publisher/example.yaml"); code != 0 {
		t.Fatalf("publish via A: exit %d\n%s%s", code, out, errs)
	}
	sa := a.waitTXT("_grpc_config.echo.example.test.", "round_robin", time.Second)
	sb := b.waitTXT("_grpc_config.echo.example.test.", "round_robin", time.Second)
	// The file is several writes: a replica may show the echo record at
	// an earlier one than the other. Once both have all of them, their
	// serials are the same.
	for deadline := time.Now().Add(time.Second); sa != sb && time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		_, sa, _ = a.txt("_grpc_config.echo.example.test.")
		_, sb, _ = b.txt("_grpc_config.echo.example.test.")
	}
	if code, _, errs := a.cli("publish", serviceFile(t, "3s")); code != 0 {
		t.Fatalf("publish via A: exit %d\n%s", code, errs)
	}
	start := time.Now()
	sb2 := b.waitTXT("_grpc_config.echo.example.test.", `\"3s\"`, time.Second)
	t.Logf("write via A answered by B after %v", time.Since(start))
	sa2 := a.waitTXT("_grpc_config.echo.example.test.", `\"3s\"`, time.Second)
	if sa2 != sb2 || sa != sb {
		t.Errorf("serials differ: A %d then %d, B %d then %d", sa, sa2, sb, sb2)
	}
	if sb2 == sb {
		t.Errorf("serial did not change: %d", sb2)
	}

	e.Stop()
	outage := time.Now()
	for _, s := range []*storeServe{a, b} {
		for s.readyz() != http.StatusServiceUnavailable {
			if time.Since(outage) > 5*time.Second {
				t.Fatalf("%s still ready 5s after etcd stopped", s.api)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	for time.Since(outage) < 10*time.Second {
		for _, s := range []*storeServe{a, b} {
			if txt, serial, err := s.txt("_grpc_config.echo.example.test."); err != nil || !strings.Contains(txt, `\"3s\"`) || serial != sb2 {
				t.Fatalf("replica %s during the outage: %q serial %d %v", s.dnsAddr, txt, serial, err)
			}
		}
		time.Sleep(500 * time.Millisecond)
	}
	if code, _, _ := b.cli("publish", serviceFile(t, "4s")); code != exitUsage {
		t.Errorf("a write while etcd is down: exit %d, want %d", code, exitUsage)
	}
	e.Start()
	back := time.Now()
	defer func() { t.Logf("both ready %v after etcd returned", time.Since(back)) }()
	for _, s := range []*storeServe{a, b} {
		for s.readyz() != http.StatusOK {
			if time.Since(outage) > 30*time.Second {
				t.Fatalf("%s not ready again 20s after etcd returned", s.api)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	if code, _, errs := b.cli("publish", serviceFile(t, "5s")); code != 0 {
		t.Fatalf("publish via B after the outage: exit %d\n%s", code, errs)
	}
	s5a := a.waitTXT("_grpc_config.echo.example.test.", `\"5s\"`, time.Second)
	s5b := b.waitTXT("_grpc_config.echo.example.test.", `\"5s\"`, time.Second)
	if s5a != s5b || !(s5a > sb2) {
		t.Errorf("after the outage: A %d, B %d, before %d", s5a, s5b, sb2)
	}
}

// selfSigned writes a certificate for 127.0.0.1 and its key, PEM.
func selfSigned(t *testing.T) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "grpc-config-dns test"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IsCA:         true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile = writeFile(t, "cert.pem", string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})))
	keyFile = writeFile(t, "key.pem", string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb})))
	return certFile, keyFile
}

// TestServeStoreTLS: with --admin-tls-cert and --admin-tls-key the admin
// API speaks HTTPS only; the CLI verifies it with --cacert, and refuses
// a server it cannot verify without writing anything.
func TestServeStoreTLS(t *testing.T) {
	const token = "0123456789abcdef0123456789abcdef"
	cert, key := selfSigned(t)
	tokens := writeFile(t, "tokens", token+"\n")
	s := startStoreServe(t, t.TempDir(), "--admin-tls-cert", cert, "--admin-tls-key", key, "--admin-token-file", tokens)
	defer stopAll(t, s)
	url := "https://" + s.api
	cfg := "../../testdata/publisher/example.yaml"

	if code, _, errs := runCLI(t, "publish", cfg, "--server", url, "--token", token); code != exitUsage || !strings.Contains(errs, "certificate") {
		t.Errorf("publish to an unverifiable server: exit %d\n%s", code, errs)
	}
	if code, _, errs := runCLI(t, "publish", cfg, "--server", "http://"+s.api, "--token", token); code != exitUsage || !strings.Contains(errs, "https://") {
		t.Errorf("publish over plain HTTP to the TLS port: exit %d\n%s", code, errs)
	}
	if code, out, errs := runCLI(t, "publish", cfg, "--server", url, "--token", token, "--cacert", cert); code != 0 || !strings.Contains(out, "created") {
		t.Fatalf("publish with --cacert: exit %d\n%s%s", code, out, errs)
	}
	s.waitTXT("_grpc_config.echo.example.test.", "round_robin", time.Second)
	if code, _, errs := runCLI(t, "get", "example.test", "echo", "--server", url, "--cacert", cert, "--token", "wrong-token-0123456789"); code != exitUsage || !strings.Contains(errs, "bearer token") {
		t.Errorf("get with a wrong token over TLS: exit %d\n%s", code, errs)
	}
	if code, _, errs := runCLI(t, "serve", "--store", t.TempDir(), "--admin", "127.0.0.1:0", "--admin-tls-cert", cert); code != exitUsage || !strings.Contains(errs, "--admin-tls-key") {
		t.Errorf("a certificate without its key: exit %d\n%s", code, errs)
	}
}

func TestIsLoopback(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:8053": true, "[::1]:8053": true, "localhost:8053": true, "127.9.9.9:1": true,
		"0.0.0.0:8053": false, ":8053": false, "[::]:8053": false, "192.0.2.1:8053": false, "example.com:80": false, "garbage": false,
	} {
		if got := isLoopback(addr); got != want {
			t.Errorf("isLoopback(%q) = %v, want %v", addr, got, want)
		}
	}
}

// TestServeStoreWebView: with --metrics, serve --store has the web view
// of issue 16 too, showing what the store's snapshot publishes.
func TestServeStoreWebView(t *testing.T) {
	s := startStoreServe(t, t.TempDir())
	defer stopAll(t, s)
	if code, out, errs := s.cli("publish", "../../testdata/publisher/example.yaml"); code != 0 {
		t.Fatalf("publish: exit %d\n%s%s", code, out, errs)
	}
	s.waitTXT("_grpc_config.echo.example.test.", "round_robin", time.Second)
	// The file is several writes: the page shows the serial DNS answers
	// once the last of them is served.
	var page string
	for deadline := time.Now().Add(2 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		_, serial, _ := s.txt("_grpc_config.echo.example.test.")
		resp, err := http.Get(s.url() + "/ui/")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		page = string(b)
		if resp.StatusCode == 200 && strings.Contains(page, "example.test") && strings.Contains(page, fmt.Sprint(serial)) && strings.Contains(page, "the store") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET /ui/: %d, want the zone and serial %d from the store\n%s", resp.StatusCode, serial, page)
		}
	}
}
