//go:build faults

package faults

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// waitLog waits until the server's log holds text.
func waitLog(t *testing.T, s *server, text string) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(s.logs.String(), text); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the log never said %q", text)
		}
	}
}

// bigConfig is zoneConfig's zone a.test. at version n, with enough other
// services to pass the size from which serve keeps its answers (1 MiB).
func bigConfig(n int) string {
	var b strings.Builder
	b.WriteString(zoneConfig(map[string]int{"a.test.": n}))
	for i := 0; b.Len() < 1<<20+4096; i++ {
		fmt.Fprintf(&b, `      - name: filler%d
        addresses: [10.1.%d.%d]
        serviceConfig: {methodConfig: [{name: [{service: filler.F%d}], timeout: 2s, retryPolicy: {maxAttempts: 3, initialBackoff: 0.1s, maxBackoff: 1s, backoffMultiplier: 2, retryableStatusCodes: [UNAVAILABLE]}}]}
`, i, i>>8&0xff, i&0xff, i)
	}
	return b.String()
}

// TestKill9WhileKeepingAnswers: the server is killed at random moments
// around the write of the answers it keeps for a warm start (2 s after a
// change), and restarted. Every restart, warm or cold, serves the config
// on disk, never the answers of an older one, with a serial at least as
// high as any served before.
func TestKill9WhileKeepingAnswers(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "publisher.yaml")
	addr := freePort(t)
	writeAtomic(t, cfg, bigConfig(0))
	rng := rand.New(rand.NewPCG(3, 4))
	// When to kill, after the reload: before the answers are written (2 s
	// after it), about when, and after.
	delays := []time.Duration{1000, 2500, 1900, 2000, 2030, 2060, 2100, 3000, 1500}
	var highest uint32
	warm, cold := 0, 0
	for v := 0; v <= len(delays); v++ {
		s := serve(t, addr, "--config", cfg)
		soa := answering(t, addr, "a.test.")
		if got := version(t, addr, "a.test."); got != v {
			t.Fatalf("after restart %d: serving version %d, the file has %d", v, got, v)
		}
		if v > 0 && !serialGE(soa.Serial, highest) {
			t.Fatalf("after restart %d: serial %d, but %d was served before", v, soa.Serial, highest)
		}
		highest = soa.Serial
		if strings.Contains(s.logs.String(), "answering from the answers kept") {
			warm++
		} else if v > 0 {
			cold++
		}
		if v == len(delays) {
			break
		}
		// Let the start's read end, so that the change is a reload.
		waitLog(t, s, `msg="config loaded"`)
		writeAtomic(t, cfg, bigConfig(v+1))
		s.signal(syscall.SIGHUP)
		waitLog(t, s, `why=reload`)
		highest = answering(t, addr, "a.test.").Serial
		// The answers are written 2 s after the change: kill before,
		// during or after that.
		wait := delays[v]*time.Millisecond + time.Duration(rng.IntN(20))*time.Millisecond
		time.Sleep(wait)
		s.kill()
		kept := strings.Contains(s.logs.String(), "answers kept for a warm start")
		t.Logf("restart %d: killed %v after the reload, answers of the reload kept: %v", v+1, wait, kept)
		if tmps, _ := filepath.Glob(cfg + ".answers.tmp*"); len(tmps) > 0 {
			t.Logf("restart %d: killed while writing the answers", v+1)
		}
	}
	t.Logf("%d warm restarts, %d cold", warm, cold)
	if warm == 0 || cold == 0 {
		t.Errorf("%d warm and %d cold restarts: the kills do not fall on both sides of the write", warm, cold)
	}
}

// TestAnswersOnFullDisk: answers that do not fit on the state disk are not
// kept (logged), nothing served changes, no partial file is left, and the
// next start reads the config.
func TestAnswersOnFullDisk(t *testing.T) {
	stateDir := tmpfs(t) // 256 KiB: the serial state fits, the answers do not
	dir := t.TempDir()
	cfg := filepath.Join(dir, "publisher.yaml")
	state := filepath.Join(stateDir, "serials.json")
	addr := freePort(t)
	writeAtomic(t, cfg, bigConfig(1))
	s := serve(t, addr, "--config", cfg, "--state", state)
	waitLog(t, s, "cannot keep the answers for a warm start")
	if got := version(t, addr, "a.test."); got != 1 {
		t.Fatalf("serving version %d after the answers could not be kept", got)
	}
	if left, _ := filepath.Glob(filepath.Join(stateDir, "serials.json.answers*")); len(left) > 0 {
		t.Fatalf("left on the full disk: %v", left)
	}
	s.kill()
	s = serve(t, addr, "--config", cfg, "--state", state)
	answering(t, addr, "a.test.")
	if got := version(t, addr, "a.test."); got != 1 {
		t.Fatalf("serving version %d after a restart", got)
	}
	if strings.Contains(s.logs.String(), "answering from the answers kept") {
		t.Fatal("a warm start from answers that were never written")
	}
}

// answeringSmall is answering, failing at once if the server exits or
// holds more than 512 MiB (reading something endless) meanwhile.
func answeringSmall(t *testing.T, s *server, addr, zone string) *dns.SOA {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if r, err := ask(addr, zone, dns.TypeSOA); err == nil && len(r.Answer) == 1 {
			return r.Answer[0].(*dns.SOA)
		}
		if done, code := s.exited(0); done {
			t.Fatalf("the server exited (code %d) instead of answering", code)
		}
		if mb := s.rssMB(); mb > 512 {
			t.Fatalf("the server holds %d MiB before answering", mb)
		}
	}
	t.Fatalf("the server does not answer for %s within 10 s", zone)
	return nil
}

// rssMB is the server's resident memory, in MiB (0 once it has exited).
func (s *server) rssMB() int {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.cmd.Process.Pid))
	for line := range strings.Lines(string(b)) {
		if kb, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(kb), " kB"))
			return n >> 10
		}
	}
	return 0
}

// stopsOnSIGTERM checks that SIGTERM stops the server, cleanly.
func stopsOnSIGTERM(t *testing.T, s *server) {
	t.Helper()
	s.signal(syscall.SIGTERM)
	if done, code := s.exited(10 * time.Second); !done || code != 0 {
		t.Fatalf("after SIGTERM: exited %v, code %d", done, code)
	}
}

// notWritten is something found at the path of a file serve reads at
// start that serve did not write there.
type notWritten struct {
	name string
	make func(t *testing.T, path string) // from the file serve wrote at path
	// why is in the log, for the answers kept and (unless whyState
	// says otherwise) for the state file.
	why, whyState string
}

var nothingThere = []notWritten{
	{"symlink to /dev/zero", func(t *testing.T, path string) {
		os.Remove(path)
		if err := os.Symlink("/dev/zero", path); err != nil {
			t.Fatal(err)
		}
	}, "a device", ""},
	{"named pipe", func(t *testing.T, path string) {
		os.Remove(path)
		if err := syscall.Mkfifo(path, 0o600); err != nil {
			t.Fatal(err)
		}
	}, "a named pipe", ""},
	{"directory", func(t *testing.T, path string) {
		os.Remove(path)
		if err := os.Mkdir(path, 0o700); err != nil {
			t.Fatal(err)
		}
	}, "a directory", ""},
	{"truncated", func(t *testing.T, path string) {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, b[:len(b)*2/3], 0o600); err != nil {
			t.Fatal(err)
		}
	}, "checksum", "corrupt"},
	// Sparse: 4 GiB that read as zeros, on no disk.
	{"huge file", func(t *testing.T, path string) {
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := f.Truncate(4 << 30); err != nil {
			t.Fatal(err)
		}
	}, "larger than", ""},
}

// TestAnswersFileNotAnswers: whatever is found where serve keeps its
// answers for a warm start — a symlink to /dev/zero, a named pipe, a
// directory, a truncated file, a huge one, one whose header declares more
// than it holds — serve listens at once, serves the config, logs why it
// did not start warm, and stops on SIGTERM.
func TestAnswersFileNotAnswers(t *testing.T) {
	cases := append(slices.Clip(nothingThere), notWritten{"header declaring a huge size", func(t *testing.T, path string) {
		// A header length of 4 GiB, the checksum made right again.
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		magic := bytes.IndexByte(b, '\n') + 1
		binary.BigEndian.PutUint32(b[magic:], 0xffffffff)
		binary.BigEndian.PutUint32(b[len(b)-4:], crc32.Checksum(b[:len(b)-4], crc32.MakeTable(crc32.Castagnoli)))
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}, "header declares", ""})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			cfg := filepath.Join(dir, "publisher.yaml")
			addr := freePort(t)
			writeAtomic(t, cfg, bigConfig(1))
			// Answers kept, with the state they agree with.
			s := serve(t, addr, "--config", cfg)
			waitLog(t, s, "answers kept for a warm start")
			stopsOnSIGTERM(t, s)

			c.make(t, cfg+".answers")
			start := time.Now()
			s = serve(t, addr, "--config", cfg)
			answeringSmall(t, s, addr, "a.test.")
			t.Logf("answering after %v", time.Since(start).Round(time.Millisecond))
			if got := version(t, addr, "a.test."); got != 1 {
				t.Fatalf("serving version %d, the config has 1", got)
			}
			logs := s.logs.String()
			if !strings.Contains(logs, "not starting from the answers kept") || !strings.Contains(logs, c.why) {
				t.Fatalf("the log does not say why it started cold (%q)", c.why)
			}
			stopsOnSIGTERM(t, s)
		})
	}
}

// TestStateFileNotState: whatever is found where serve keeps its serials
// that is not the state it wrote, serve refuses to start, at once, with
// an error naming the file (the serials served could go backwards
// without it), and does not listen.
func TestStateFileNotState(t *testing.T) {
	for _, c := range nothingThere {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			cfg := filepath.Join(dir, "publisher.yaml")
			addr := freePort(t)
			writeAtomic(t, cfg, zoneConfig(map[string]int{"a.test.": 1}))
			s := serve(t, addr, "--config", cfg)
			answering(t, addr, "a.test.")
			stopsOnSIGTERM(t, s)

			c.make(t, cfg+".serial")
			s = serve(t, addr, "--config", cfg)
			for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
				if done, code := s.exited(0); done {
					if code == 0 {
						t.Fatal("exit code 0")
					}
					break
				}
				if mb := s.rssMB(); mb > 512 {
					t.Fatalf("the server holds %d MiB", mb)
				}
				if time.Now().After(deadline) {
					t.Fatal("still running after 10 s")
				}
			}
			why := cmp.Or(c.whyState, c.why)
			if logs := s.logs.String(); !strings.Contains(logs, cfg+".serial") || !strings.Contains(logs, why) {
				t.Fatalf("the error does not name the state file and say %q", why)
			}
			if _, err := ask(addr, "a.test.", dns.TypeSOA); err == nil {
				t.Fatal("something answers on the server's address")
			}
		})
	}
}

// TestAnswersOfAnotherBuild: an upgrade renames a new build over the
// binary while the old one runs, before the old one keeps its answers.
// They are the old build's answers: the old build starts warm from them,
// the new one cold (another build may answer differently).
func TestAnswersOfAnotherBuild(t *testing.T) {
	dir := t.TempDir()
	oldBin, newBin := filepath.Join(dir, "old"), filepath.Join(dir, "new")
	running := filepath.Join(dir, "grpc-config-dns")
	b, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	// Bytes after the ELF image change the build's hash, not what it does.
	for _, f := range []struct {
		path string
		b    []byte
	}{{oldBin, b}, {running, b}, {newBin, append(slices.Clip(b), "another build"...)}} {
		if err := os.WriteFile(f.path, f.b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cfg := filepath.Join(dir, "publisher.yaml")
	addr := freePort(t)
	writeAtomic(t, cfg, bigConfig(1))
	s := serveWith(t, running, addr, "--config", cfg)
	// The old build runs (exec is done when Start returns): the upgrade.
	if err := os.Rename(newBin, running); err != nil {
		t.Fatal(err)
	}
	waitLog(t, s, "answers kept for a warm start")
	stopsOnSIGTERM(t, s)

	s = serveWith(t, oldBin, addr, "--config", cfg)
	answering(t, addr, "a.test.")
	if !strings.Contains(s.logs.String(), "answering from the answers kept") {
		t.Fatal("the build that kept the answers does not start warm from them")
	}
	waitLog(t, s, `msg="config loaded"`)
	stopsOnSIGTERM(t, s)

	s = serveWith(t, running, addr, "--config", cfg)
	answering(t, addr, "a.test.")
	if got := version(t, addr, "a.test."); got != 1 {
		t.Fatalf("serving version %d", got)
	}
	if logs := s.logs.String(); strings.Contains(logs, "answering from the answers kept") || !strings.Contains(logs, "written by another build") {
		t.Fatal("the new build starts from the old build's answers")
	}
	stopsOnSIGTERM(t, s)
}
