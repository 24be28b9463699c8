//go:build faults

package faults

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/miekg/dns"
)

var bin string // the grpc-config-dns binary under test

func TestMain(m *testing.M) {
	if spec := os.Getenv(holdEnv); spec != "" {
		os.Exit(holdMain(spec))
	}
	dir, err := os.MkdirTemp("", "faults")
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

// needRoot skips a test that mounts file systems, or fails it under
// run.sh as root (FAULTS_REQUIRE).
func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() == 0 {
		return
	}
	msg := "needs root to mount a small tmpfs: run faults/run.sh as root"
	if os.Getenv("FAULTS_REQUIRE") != "" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

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

// server is one run of `grpc-config-dns serve`.
type server struct {
	cmd  *exec.Cmd
	logs *lockedBuffer
	done chan struct{}
	err  error
}

// freePort returns a port free for UDP and TCP on 127.0.0.1.
func freePort(t *testing.T) string {
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

// serve starts the binary; it does not wait for it to answer.
func serve(t *testing.T, addr string, args ...string) *server {
	t.Helper()
	return serveWith(t, bin, addr, args...)
}

// serveWith is serve with another copy of the binary, at path.
func serveWith(t *testing.T, path, addr string, args ...string) *server {
	t.Helper()
	s := &server{logs: &lockedBuffer{}, done: make(chan struct{})}
	s.cmd = exec.Command(path, append([]string{"serve", "--listen", addr, "--shutdown-grace", "1s"}, args...)...)
	s.cmd.Stdout, s.cmd.Stderr = s.logs, s.logs
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { s.err = s.cmd.Wait(); close(s.done) }()
	t.Cleanup(func() {
		s.kill()
		if t.Failed() {
			t.Logf("serve log:\n%s", s.logs.String())
		}
	})
	return s
}

func (s *server) kill() {
	s.cmd.Process.Signal(syscall.SIGKILL)
	<-s.done
}

func (s *server) signal(sig os.Signal) { s.cmd.Process.Signal(sig) }

// exited reports whether the server has exited, and its exit code.
func (s *server) exited(within time.Duration) (bool, int) {
	select {
	case <-s.done:
		var ee *exec.ExitError
		if errors.As(s.err, &ee) {
			return true, ee.ExitCode()
		}
		return true, 0
	case <-time.After(within):
		return false, 0
	}
}

func ask(addr, name string, qtype uint16) (*dns.Msg, error) {
	m := new(dns.Msg)
	m.SetQuestion(name, qtype)
	r, _, err := (&dns.Client{Net: "tcp", Timeout: time.Second}).Exchange(m, addr)
	return r, err
}

// answering waits until the server answers the zone's SOA and returns it.
func answering(t *testing.T, addr, zone string) *dns.SOA {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if r, err := ask(addr, zone, dns.TypeSOA); err == nil && len(r.Answer) == 1 {
			return r.Answer[0].(*dns.SOA)
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("the server does not answer for %s", zone)
	return nil
}

// version reads which config version the server publishes: the TXT record
// of service v says "svc.V<n>".
func version(t *testing.T, addr, zone string) int {
	t.Helper()
	r, err := ask(addr, "_grpc_config.v."+zone, dns.TypeTXT)
	if err != nil || len(r.Answer) != 1 {
		t.Fatalf("TXT of v.%s: %v %v", zone, r, err)
	}
	txt := strings.Join(r.Answer[0].(*dns.TXT).Txt, "")
	i := strings.Index(txt, "svc.V")
	var n int
	fmt.Sscanf(txt[i+len("svc.V"):], "%d", &n)
	return n
}

// zoneConfig publishes version n of each zone (a negative n leaves the
// zone out).
func zoneConfig(versions map[string]int) string {
	var b strings.Builder
	b.WriteString("zones:\n")
	for _, z := range []string{"a.test.", "b.test."} {
		n, ok := versions[z]
		if !ok {
			continue
		}
		fmt.Fprintf(&b, `  - origin: %s
    nameservers: [ns.example.net.]
    services:
      - name: v
        addresses: [10.0.0.1]
        serviceConfig: {methodConfig: [{name: [{service: svc.V%d}], timeout: 1s}]}
`, z, n)
	}
	return b.String()
}

// writeAtomic replaces path by rename, as the docs say configs should be
// written.
func writeAtomic(t *testing.T, path, content string) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// serialGE reports a >= b in serial arithmetic (RFC 1982).
func serialGE(a, b uint32) bool { return a == b || (a-b) < 1<<31 }

// TestKill9DuringReloads: the server is killed at random moments of
// reloads (some while it writes its serial state) and restarted, many
// times, faster than the clock moves. After each restart it serves the
// config on disk, with a serial at least as high as any it served before,
// and higher than the serial of every older version.
func TestKill9DuringReloads(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "publisher.yaml")
	addr := freePort(t)
	writeAtomic(t, cfg, zoneConfig(map[string]int{"a.test.": 0}))
	rng := rand.New(rand.NewPCG(1, 2))
	var highest uint32 // the highest serial ever observed
	var older uint32   // the serial of the previous version
	for v := 0; v < 40; v++ {
		s := serve(t, addr, "--config", cfg)
		soa := answering(t, addr, "a.test.")
		if got := version(t, addr, "a.test."); got != v {
			t.Fatalf("after restart %d: serving version %d, the file has %d", v, got, v)
		}
		switch {
		case v > 0 && !serialGE(soa.Serial, highest):
			t.Fatalf("after restart %d: serial %d, but %d was served before", v, soa.Serial, highest)
		case v > 0 && !serialGE(soa.Serial, older+1):
			t.Fatalf("after restart %d: serial %d, not above %d of the previous version", v, soa.Serial, older)
		}
		highest, older = soa.Serial, soa.Serial
		// The next version, then kill -9 at a random moment of its reload.
		writeAtomic(t, cfg, zoneConfig(map[string]int{"a.test.": v + 1}))
		s.signal(syscall.SIGHUP)
		time.Sleep(time.Duration(rng.IntN(4000)) * time.Microsecond)
		if r, err := ask(addr, "a.test.", dns.TypeSOA); err == nil && len(r.Answer) == 1 {
			if serial := r.Answer[0].(*dns.SOA).Serial; serialGE(serial, highest) {
				highest = serial // served, so it must survive the kill
			}
		}
		s.kill()
	}
}

// TestZoneReaddedAfterKill9: a zone whose serial ran ahead of the clock is
// removed, the server killed and restarted, and the zone added back: its
// serial is above every one served before.
func TestZoneReaddedAfterKill9(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "publisher.yaml")
	addr := freePort(t)
	writeAtomic(t, cfg, zoneConfig(map[string]int{"a.test.": 0, "b.test.": 0}))
	s := serve(t, addr, "--config", cfg)
	var highest uint32
	for v := 1; v <= 6; v++ { // several changes a second: ahead of the clock
		before := answering(t, addr, "b.test.").Serial
		writeAtomic(t, cfg, zoneConfig(map[string]int{"a.test.": 0, "b.test.": v}))
		s.signal(syscall.SIGHUP)
		deadline := time.Now().Add(5 * time.Second)
		for highest = before; highest == before && time.Now().Before(deadline); {
			time.Sleep(5 * time.Millisecond)
			highest = answering(t, addr, "b.test.").Serial
		}
	}
	writeAtomic(t, cfg, zoneConfig(map[string]int{"a.test.": 0}))
	s.signal(syscall.SIGHUP)
	deadline := time.Now().Add(5 * time.Second)
	for {
		r, err := ask(addr, "b.test.", dns.TypeSOA)
		if err == nil && r.Rcode == dns.RcodeRefused {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("b.test. not removed")
		}
		time.Sleep(5 * time.Millisecond)
	}
	s.kill()
	writeAtomic(t, cfg, zoneConfig(map[string]int{"a.test.": 0, "b.test.": 99}))
	serve(t, addr, "--config", cfg)
	if got := answering(t, addr, "b.test.").Serial; !serialGE(got, highest+1) {
		t.Fatalf("b.test. came back with serial %d, at or below %d served before", got, highest)
	}
}

// tmpfs mounts a small tmpfs on a new directory and returns it.
func tmpfs(t *testing.T) string {
	t.Helper()
	needRoot(t)
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Fatalf("mount tmpfs: %v: %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", "-l", dir).Run() })
	return dir
}

// fill writes a file into dir until the file system is full.
func fill(t *testing.T, dir string) string {
	t.Helper()
	p := filepath.Join(dir, "filler")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := make([]byte, 4096)
	for {
		if _, err := f.Write(chunk); err != nil {
			if errors.Is(err, syscall.ENOSPC) {
				return p
			}
			t.Fatal(err)
		}
	}
}

// stateFaultTest runs the scenario of a state disk that fails (break) and
// recovers (mend): a change is not served while its serials cannot be
// kept, a restart refuses to serve it, and once the disk recovers it is
// served with a higher serial.
func stateFaultTest(t *testing.T, breakDisk, mendDisk func(dir string)) {
	stateDir := tmpfs(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "publisher.yaml")
	state := filepath.Join(stateDir, "serials.json")
	addr := freePort(t)
	writeAtomic(t, cfg, zoneConfig(map[string]int{"a.test.": 1}))
	s := serve(t, addr, "--config", cfg, "--state", state)
	before := answering(t, addr, "a.test.").Serial

	breakDisk(stateDir)
	writeAtomic(t, cfg, zoneConfig(map[string]int{"a.test.": 2}))
	s.signal(syscall.SIGHUP)
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(s.logs.String(), "cannot persist SOA serials") {
		if time.Now().After(deadline) {
			t.Fatal("no failure logged")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if got := answering(t, addr, "a.test.").Serial; got != before {
		t.Errorf("serial %d served after a failed state write, was %d", got, before)
	}
	if got := version(t, addr, "a.test."); got != 1 {
		t.Errorf("version %d served after a failed state write", got)
	}

	// Killed and restarted while the disk is still broken: no serving a
	// version whose serials cannot be kept.
	s.kill()
	s = serve(t, addr, "--config", cfg, "--state", state)
	if done, code := s.exited(10 * time.Second); !done || code != 2 {
		t.Fatalf("restart with a broken state disk: exited %v, code %d; want exit 2", done, code)
	}
	if !strings.Contains(s.logs.String(), "serial state") {
		t.Errorf("the refusal does not name the serial state:\n%s", s.logs.String())
	}

	mendDisk(stateDir)
	serve(t, addr, "--config", cfg, "--state", state)
	if got := answering(t, addr, "a.test.").Serial; !serialGE(got, before+1) {
		t.Errorf("serial %d after the disk recovered, was %d", got, before)
	}
	if got := version(t, addr, "a.test."); got != 2 {
		t.Errorf("version %d after the disk recovered, want 2", got)
	}
}

func TestFullStateDisk(t *testing.T) {
	var filler string
	stateFaultTest(t,
		func(dir string) { filler = fill(t, dir) },
		func(string) { os.Remove(filler) })
}

func TestReadOnlyStateDisk(t *testing.T) {
	remount := func(dir, mode string) {
		if out, err := exec.Command("mount", "-o", "remount,"+mode, dir).CombinedOutput(); err != nil {
			t.Fatalf("remount %s: %v: %s", mode, err, out)
		}
	}
	stateFaultTest(t,
		func(dir string) { remount(dir, "ro") },
		func(dir string) { remount(dir, "rw") })
}

// TestSelectOnTruncatedTCPAnswer: a server that answers TC=1 over TCP too
// has not said there is no record: `select` fails with an I/O error
// (exit 2), not "no record, use the default config" (exit 3).
func TestSelectOnTruncatedTCPAnswer(t *testing.T) {
	addr := freePort(t)
	h := dns.HandlerFunc(func(w dns.ResponseWriter, r *dns.Msg) {
		m := new(dns.Msg)
		m.SetReply(r)
		m.Authoritative = true
		m.Truncated = true
		w.WriteMsg(m)
	})
	for _, network := range []string{"udp", "tcp"} {
		srv := &dns.Server{Addr: addr, Net: network, Handler: h}
		go srv.ListenAndServe()
		t.Cleanup(func() { srv.Shutdown() })
	}
	time.Sleep(100 * time.Millisecond)
	var stderr bytes.Buffer
	cmd := exec.Command(bin, "select", "dns://"+addr+"/svc.test")
	cmd.Stderr = &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 {
		t.Fatalf("select: %v, want exit 2; stderr:\n%s", err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "truncated") {
		t.Errorf("the error does not say the answer was truncated:\n%s", stderr.String())
	}
}

// TestStalledWriter: a writer that rewrites the config in place and
// pauses, holding the file open, at line boundaries for longer than the
// watcher's poll and debounce: no prefix is served, and the complete file
// is once the writer closes it (Linux; elsewhere the wait is Settle).
func TestStalledWriter(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "publisher.yaml")
	addr := freePort(t)
	old := zoneConfig(map[string]int{"a.test.": 1, "b.test.": 1})
	writeAtomic(t, cfg, old)
	serve(t, addr, "--config", cfg)
	first := answering(t, addr, "b.test.").Serial
	next := zoneConfig(map[string]int{"a.test.": 2, "b.test.": 2})
	lines := strings.SplitAfter(next, "\n")
	f, err := os.OpenFile(cfg, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	stallAt := map[int]bool{2: true, 7: true, len(lines) / 2: true, len(lines) - 3: true}
	for i, l := range lines {
		f.WriteString(l)
		if stallAt[i] {
			time.Sleep(1600 * time.Millisecond) // > 1s poll + 0.5s debounce
			for _, z := range []string{"a.test.", "b.test."} {
				r, err := ask(addr, z, dns.TypeSOA)
				if err != nil || len(r.Answer) != 1 || r.Answer[0].(*dns.SOA).Serial != first && z == "b.test." {
					t.Fatalf("after line %d of %d: %s answered %v %v while the writer held the file", i+1, len(lines), z, r, err)
				}
				if v := version(t, addr, z); v != 1 {
					t.Fatalf("after line %d of %d: %s serves version %d while the writer held the file", i+1, len(lines), z, v)
				}
			}
		}
	}
	f.Close()
	deadline := time.Now().Add(40 * time.Second) // Settle, where inotify is missing
	for version(t, addr, "b.test.") != 2 || version(t, addr, "a.test.") != 2 {
		if time.Now().After(deadline) {
			t.Fatal("the complete file was not loaded")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// servedVersions reads the versions a.test. and b.test. serve, or says
// what is wrong with the answers.
func servedVersions(addr string) (a, b int, err error) {
	var vs [2]int
	for i, z := range []string{"a.test.", "b.test."} {
		r, err := ask(addr, "_grpc_config.v."+z, dns.TypeTXT)
		if err != nil {
			return 0, 0, err
		}
		if len(r.Answer) != 1 {
			return 0, 0, fmt.Errorf("%s: no TXT record at v.%s", dns.RcodeToString[r.Rcode], z)
		}
		txt := strings.Join(r.Answer[0].(*dns.TXT).Txt, "")
		if _, err := fmt.Sscanf(txt[strings.Index(txt, "svc.V")+len("svc.V"):], "%d", &vs[i]); err != nil {
			return 0, 0, fmt.Errorf("TXT of v.%s: %q", z, txt)
		}
	}
	return vs[0], vs[1], nil
}

// TestAppendingWriter: a shell rewrites the config line by line with
// `echo … >> file`, so every line is its own open and close and each part
// looks finished; it stalls inside the last service, longer than the
// watcher's poll and debounce, where the prefix removes nothing but the
// service's TXT record. Every answer served is the old config or the whole
// new one, and the new one is loaded once the file has been left alone
// (Settle, 30 s).
func TestAppendingWriter(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "publisher.yaml")
	addr := freePort(t)
	writeAtomic(t, cfg, zoneConfig(map[string]int{"a.test.": 1, "b.test.": 1}))
	serve(t, addr, "--config", cfg)
	answering(t, addr, "b.test.")
	check := func(when string) int {
		t.Helper()
		a, b, err := servedVersions(addr)
		if err != nil || a != b {
			t.Fatalf("%s: served a partial config: a.test. version %d, b.test. version %d, %v", when, a, b, err)
		}
		return a
	}
	sh := func(script string, args ...string) {
		t.Helper()
		out, err := exec.Command("sh", append([]string{"-c", script, "sh"}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("sh -c %q: %v\n%s", script, err, out)
		}
	}
	next := zoneConfig(map[string]int{"a.test.": 2, "b.test.": 2})
	lines := strings.Split(strings.TrimSuffix(next, "\n"), "\n")
	sh(`: > "$1"`, cfg)
	for i, l := range lines {
		sh(`echo "$1" >> "$2"`, l, cfg)
		if i >= len(lines)-5 && i < len(lines)-1 {
			// Inside b.test.: stall, longer than 1s poll + 0.5s debounce.
			time.Sleep(1600 * time.Millisecond)
			if v := check(fmt.Sprintf("after line %d of %d", i+1, len(lines))); v != 1 {
				t.Fatalf("after line %d of %d: version %d served before the file was left alone", i+1, len(lines), v)
			}
		} else {
			time.Sleep(50 * time.Millisecond)
		}
	}
	deadline := time.Now().Add(45 * time.Second) // Settle is 30 s
	for check("after the last line") != 2 {
		if time.Now().After(deadline) {
			t.Fatal("the complete file was not loaded")
		}
		time.Sleep(200 * time.Millisecond)
	}
}
