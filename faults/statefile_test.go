//go:build faults

package faults

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/miekg/dns"
)

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
	// why is in the error (or whyState, when it says otherwise).
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
