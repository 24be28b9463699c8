//go:build unix

package dnspub

import (
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// notAFile is something found where serve reads a file at start that is
// not one it wrote.
type notAFile struct {
	name string
	make func(t *testing.T, path string) // makes it at path
	why  string                          // in the error or the log
}

// notFiles are the things at a path that no read must follow.
var notFiles = []notAFile{
	// An open for reading waits for a writer: forever, before listening.
	{"named pipe", func(t *testing.T, path string) {
		if err := syscall.Mkfifo(path, 0o600); err != nil {
			t.Fatal(err)
		}
	}, "a named pipe"},
	// Endless: reading it whole fills memory.
	{"symlink to /dev/zero", func(t *testing.T, path string) {
		if err := os.Symlink("/dev/zero", path); err != nil {
			t.Fatal(err)
		}
	}, "a device"},
	{"directory", func(t *testing.T, path string) {
		if err := os.Mkdir(path, 0o700); err != nil {
			t.Fatal(err)
		}
	}, "a directory"},
	// Sparse: 1 GiB that reads as zeros without filling the disk.
	{"huge file", func(t *testing.T, path string) {
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := f.Truncate(1<<30 + 1); err != nil {
			t.Fatal(err)
		}
	}, "larger than"},
}

// newWithin is New, failing the test if it has not returned within 10 s
// (blocked on a file: the goroutine is then left behind) or allocated more
// than 64 MiB (read something endless or huge).
func newWithin(t *testing.T, opts Options) (*Server, error) {
	t.Helper()
	type result struct {
		s   *Server
		err error
	}
	done := make(chan result, 1)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	go func() {
		s, err := New(opts)
		done <- result{s, err}
	}()
	select {
	case r := <-done:
		runtime.ReadMemStats(&after)
		if grew := after.TotalAlloc - before.TotalAlloc; grew > 64<<20 {
			t.Errorf("New allocated %d MiB", grew>>20)
		}
		return r.s, r.err
	case <-time.After(10 * time.Second):
		t.Fatal("New has not returned after 10 s: blocked reading a file")
		return nil, nil
	}
}

// A state file that is not one serve wrote stops serve at once with an
// error naming it: starting without the serials served could publish
// lower ones, which secondaries would ignore.
func TestStateFileNotAFile(t *testing.T) {
	cases := append(slices.Clip(notFiles), []notAFile{
		{"cut short", func(t *testing.T, path string) {
			os.WriteFile(path, []byte(`{"comment": "SOA serials", "zones": {"example.test.": {"ser`), 0o600)
		}, "corrupt"},
		// Its target on a volume not mounted, say: not a first start.
		{"dangling symlink", func(t *testing.T, path string) {
			if err := os.Symlink(filepath.Join(filepath.Dir(path), "gone", "p.serial"), path); err != nil {
				t.Fatal(err)
			}
		}, "does not exist"},
	}...)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			file := filepath.Join(dir, "publisher.yaml")
			if err := os.WriteFile(file, []byte(baseConfig("")), 0o600); err != nil {
				t.Fatal(err)
			}
			state := file + ".serial"
			c.make(t, state)
			s, err := newWithin(t, Options{ConfigFile: file, Listen: "127.0.0.1:0", WatchInterval: -1, Logger: discardLogger()})
			if err == nil {
				s.Shutdown(t.Context())
				t.Fatal("started")
			}
			if msg := err.Error(); !strings.Contains(msg, state) || !strings.Contains(msg, c.why) {
				t.Errorf("New = %v; want the state file and %q", err, c.why)
			}
		})
	}
}
