package main

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/grpc-config-dns/grpc-config-dns/model"
)

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

func writeFile(t *testing.T, name, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLintPublisherConfig(t *testing.T) {
	bad := writeFile(t, "bad.yaml", `zones:
  - origin: example.test.
    nameservers: [ns.example.net.]
    services:
      - name: echo
        adresses: [192.0.2.1]
        choices:
          - percentage: 101
            serviceConfig: {}
`)
	code, out, _ := runCLI(t, "lint", bad)
	if code != exitInvalid {
		t.Errorf("exit %d, want 1", code)
	}
	for _, want := range []string{
		bad + `:6:9: error: unknown key "adresses" in a service: did you mean "addresses"? (at /zones/0/services/0/adresses) [unknown-key]`,
		bad + `:8:25: error: percentage must be an integer from 0 to 100`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("lint output lacks %q:\n%s", want, out)
		}
	}
	good := writeFile(t, "good.yaml", string(model.Example))
	if code, out, errs := runCLI(t, "lint", good); code != 0 || out != "" || !strings.Contains(errs, "ok (publisher config)") {
		t.Errorf("example: exit %d\n%s%s", code, out, errs)
	}
}

func TestZoneCommand(t *testing.T) {
	f := writeFile(t, "p.yaml", string(model.Example))
	code, out, errs := runCLI(t, "zone", "--config", f, "--serial", "7")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	zp := dns.NewZoneParser(strings.NewReader(out), "", "")
	var soa *dns.SOA
	txt := 0
	for rr, ok := zp.Next(); ok; rr, ok = zp.Next() {
		switch r := rr.(type) {
		case *dns.SOA:
			soa = r
		case *dns.TXT:
			txt++
		}
	}
	if err := zp.Err(); err != nil {
		t.Fatalf("output is not a master file: %v\n%s", err, out)
	}
	if soa == nil || soa.Serial != 7 || txt != 2 {
		t.Errorf("SOA %v, %d TXT records:\n%s", soa, txt, out)
	}
	// Without --serial: the serial serve would publish (from the clock,
	// as there is no state file yet).
	_, out, _ = runCLI(t, "zone", "--config", f)
	if m := regexp.MustCompile(`(\d+)\s+; serial`).FindStringSubmatch(out); m == nil || len(m[1]) < 10 {
		t.Errorf("serial from the clock: %s", out)
	}
	bad := writeFile(t, "bad.yaml", "zones: [{origin: example.test.}]\n")
	if code, _, errs := runCLI(t, "zone", "--config", bad); code != exitInvalid || !strings.Contains(errs, "bad.yaml:1:9: error: zone example.test. has no nameservers") {
		t.Errorf("invalid config: exit %d\n%s", code, errs)
	}
	if code, _, _ := runCLI(t, "zone"); code != exitUsage {
		t.Errorf("no --config: exit %d", code)
	}
}

// TestServeBuiltInExample runs `serve` with no config, as a new user
// would, queries the example TXT record, reloads with SIGHUP and stops
// with SIGTERM.
func TestServeBuiltInExample(t *testing.T) {
	var stderr lockedBuffer
	done := make(chan int)
	go func() {
		done <- run([]string{"serve", "--listen", "127.0.0.1:0", "--state", "-"}, strings.NewReader(""), &bytes.Buffer{}, &stderr)
	}()
	addrRE := regexp.MustCompile(`msg=serving udp=(\S+)`)
	var addr string
	for deadline := time.Now().Add(5 * time.Second); addr == ""; time.Sleep(10 * time.Millisecond) {
		if m := addrRE.FindStringSubmatch(stderr.String()); m != nil {
			addr = m[1]
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve did not start:\n%s", stderr.String())
		}
	}
	m := new(dns.Msg)
	m.SetQuestion("_grpc_config.echo.example.test.", dns.TypeTXT)
	r, _, err := (&dns.Client{Timeout: 2 * time.Second}).Exchange(m, addr)
	if err != nil || len(r.Answer) != 1 || !strings.HasPrefix(r.Answer[0].(*dns.TXT).Txt[0], `grpc_config=[{\"clientLanguage\":[\"GO\"]`) {
		t.Fatalf("example TXT: %v %v", r, err)
	}
	syscall.Kill(os.Getpid(), syscall.SIGHUP)
	for deadline := time.Now().Add(5 * time.Second); !strings.Contains(stderr.String(), "no zone changed"); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("SIGHUP did not reload:\n%s", stderr.String())
		}
	}
	syscall.Kill(os.Getpid(), syscall.SIGTERM)
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("exit %d", code)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not stop on SIGTERM")
	}
	if !strings.Contains(stderr.String(), "msg=stopped") {
		t.Errorf("log:\n%s", stderr.String())
	}
}

func TestServeInvalidConfig(t *testing.T) {
	f := writeFile(t, "p.yaml", `zones: [{origin: example.test., nameservers: [{name: ns1, addresses: ["10.0.0.1:53"]}]}]`+"\n")
	code, _, errs := runCLI(t, "serve", "--config", f, "--listen", "127.0.0.1:0")
	if code != exitInvalid || !strings.Contains(errs, `p.yaml:1:71: error: "10.0.0.1:53" is not an IPv4 or IPv6 address`) {
		t.Errorf("exit %d:\n%s", code, errs)
	}
}

// TestLintGolden: lint's report on testdata/publisher/invalid.yaml.
func TestLintGolden(t *testing.T) {
	const in = "../../testdata/publisher/invalid.yaml"
	_, out, _ := runCLI(t, "lint", in)
	want, err := os.ReadFile("../../testdata/publisher/invalid.golden")
	if err != nil {
		t.Fatal(err)
	}
	got := strings.ReplaceAll(out, in, "testdata/publisher/invalid.yaml")
	if got != string(want) {
		t.Errorf("lint output differs from invalid.golden (regenerate it with: go run ./cmd/grpc-config-dns lint testdata/publisher/invalid.yaml > testdata/publisher/invalid.golden)\ngot:\n%s", got)
	}
}

// occupy binds addr over UDP and TCP, as another server would, until the
// test ends.
func occupy(t *testing.T, addr string) string {
	t.Helper()
	for range 20 {
		u, err := net.ListenPacket("udp", addr)
		if err != nil {
			t.Fatal(err)
		}
		l, err := net.Listen("tcp", u.LocalAddr().String())
		if err != nil {
			u.Close()
			continue // the TCP twin of a kernel-chosen port is taken
		}
		t.Cleanup(func() { u.Close(); l.Close() })
		return u.LocalAddr().String()
	}
	t.Fatal("no free port")
	return ""
}

// An address in use is an error that names the flag to change.
func TestServeAddressInUseNamesTheFlag(t *testing.T) {
	busy := occupy(t, "127.0.0.1:0")
	code, _, errs := runCLI(t, "serve", "--listen", busy, "--state", "-")
	if code != exitUsage || !strings.Contains(errs, "--listen "+busy+": the address is already in use") || !strings.Contains(errs, "choose a free one with --listen") {
		t.Errorf("exit %d:\n%s", code, errs)
	}
	code, _, errs = runCLI(t, "serve", "--listen", "127.0.0.1:0", "--state", "-", "--metrics", busy)
	if code != exitUsage || !strings.Contains(errs, "--metrics "+busy+": the address is already in use") || !strings.Contains(errs, "choose a free one with --metrics") {
		t.Errorf("exit %d:\n%s", code, errs)
	}
	// serve --store: the admin API's address, named by its flag.
	code, _, errs = runCLI(t, "serve", "--store", t.TempDir(), "--listen", "127.0.0.1:0", "--admin", busy)
	if code != exitUsage || !strings.Contains(errs, "--admin "+busy+": the address is already in use") || !strings.Contains(errs, "choose a free one with --admin") {
		t.Errorf("exit %d:\n%s", code, errs)
	}
}

// TestServeDefaultAddressBesideMDNS: the README's first command, `serve`
// with no flags, works on a machine whose mDNS daemon holds port 5353.
func TestServeDefaultAddressBesideMDNS(t *testing.T) {
	const def = "127.0.0.1:1053"
	if f := serveCmd(&env{}).Flags().Lookup("listen"); f.DefValue != def {
		t.Fatalf("serve --listen defaults to %s, want %s (the public contract: docs/architecture.md)", f.DefValue, def)
	}
	// Another test run may hold the port: that is not what this test is about.
	if u, err := net.ListenPacket("udp", def); err != nil {
		t.Skipf("%s is in use here: %v", def, err)
	} else {
		u.Close()
	}
	if u, err := net.ListenPacket("udp", "127.0.0.1:5353"); err == nil {
		defer u.Close() // an mDNS daemon
	}
	var stderr lockedBuffer
	done := make(chan int)
	go func() {
		done <- run([]string{"serve", "--state", "-"}, strings.NewReader(""), &bytes.Buffer{}, &stderr)
	}()
	for deadline := time.Now().Add(5 * time.Second); !strings.Contains(stderr.String(), "msg=serving udp="+def); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			select {
			case code := <-done:
				t.Fatalf("serve exited %d:\n%s", code, stderr.String())
			default:
			}
			t.Fatalf("serve did not start:\n%s", stderr.String())
		}
	}
	syscall.Kill(os.Getpid(), syscall.SIGTERM)
	if code := <-done; code != 0 {
		t.Errorf("exit %d:\n%s", code, stderr.String())
	}
}

// TestServeHintNamesBoundPort: with --listen :0 the dig hint of the
// built-in example names the port the kernel chose, not "-p 0".
func TestServeHintNamesBoundPort(t *testing.T) {
	var stderr lockedBuffer
	done := make(chan int)
	go func() {
		done <- run([]string{"serve", "--listen", ":0", "--state", "-"}, strings.NewReader(""), &bytes.Buffer{}, &stderr)
	}()
	hintRE := regexp.MustCompile(`try: dig @(\S+) -p (\d+) TXT`)
	portRE := regexp.MustCompile(`msg=serving udp=\S*:(\d+) `)
	var hint, port []string
	for deadline := time.Now().Add(5 * time.Second); hint == nil || port == nil; time.Sleep(10 * time.Millisecond) {
		hint, port = hintRE.FindStringSubmatch(stderr.String()), portRE.FindStringSubmatch(stderr.String())
		if time.Now().After(deadline) {
			t.Fatalf("serve did not start, or gave no dig hint:\n%s", stderr.String())
		}
	}
	syscall.Kill(os.Getpid(), syscall.SIGTERM)
	if code := <-done; code != 0 {
		t.Errorf("exit %d:\n%s", code, stderr.String())
	}
	if hint[1] != "127.0.0.1" || hint[2] == "0" || hint[2] != port[1] {
		t.Errorf("the hint asks %s port %s; serve listens on port %s:\n%s", hint[1], hint[2], port[1], stderr.String())
	}
}

// TestServeReadyzLameDuck: /healthz and /readyz beside /metrics; on
// SIGTERM /readyz turns unready at once while DNS is still answered for
// the lame-duck period (issue 18). Also: build_info and the query log.
func TestServeReadyzLameDuck(t *testing.T) {
	var stderr lockedBuffer
	done := make(chan int)
	go func() {
		done <- run([]string{"serve", "--listen", "127.0.0.1:0", "--state", "-", "--metrics", "127.0.0.1:0", "--lame-duck", "2s", "--query-log"}, strings.NewReader(""), &bytes.Buffer{}, &stderr)
	}()
	addrRE := regexp.MustCompile(`msg=serving udp=(\S+)`)
	readyRE := regexp.MustCompile(`readyz=(\S+)`)
	var addr, readyz string
	for deadline := time.Now().Add(5 * time.Second); addr == "" || readyz == ""; time.Sleep(10 * time.Millisecond) {
		if m := addrRE.FindStringSubmatch(stderr.String()); m != nil {
			addr = m[1]
		}
		if m := readyRE.FindStringSubmatch(stderr.String()); m != nil {
			readyz = m[1]
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve did not start:\n%s", stderr.String())
		}
	}
	get := func(url string) (int, string) {
		t.Helper()
		resp, err := (&http.Client{Timeout: 2 * time.Second}).Get(url)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	base := strings.TrimSuffix(readyz, "/readyz")
	if code, _ := get(base + "/healthz"); code != 200 {
		t.Errorf("/healthz %d", code)
	}
	if code, _ := get(readyz); code != 200 {
		t.Errorf("/readyz %d before SIGTERM", code)
	}
	if _, body := get(base + "/metrics"); !strings.Contains(body, "grpc_config_dns_build_info{") {
		t.Errorf("no build_info in /metrics")
	}
	ask := func() error {
		m := new(dns.Msg)
		m.SetQuestion("_grpc_config.echo.example.test.", dns.TypeTXT)
		_, _, err := (&dns.Client{Timeout: time.Second}).Exchange(m, addr)
		return err
	}
	if err := ask(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stderr.String(), "name=_grpc_config.echo.example.test. type=TXT rcode=NOERROR") {
		t.Errorf("no query log line:\n%s", stderr.String())
	}
	syscall.Kill(os.Getpid(), syscall.SIGTERM)
	for deadline := time.Now().Add(time.Second); !strings.Contains(stderr.String(), "lame duck"); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no lame duck:\n%s", stderr.String())
		}
	}
	if code, _ := get(readyz); code != http.StatusServiceUnavailable {
		t.Errorf("/readyz %d during the lame-duck period, want 503", code)
	}
	if err := ask(); err != nil {
		t.Errorf("DNS during the lame-duck period: %v", err)
	}
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("exit %d", code)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not stop after the lame-duck period")
	}
}
