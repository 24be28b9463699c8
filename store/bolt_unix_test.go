//go:build unix

package store

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// What is at DIR/store.db and is not a file is refused by name before
// bbolt opens it read-write and writes its first pages into it (into a
// device, say).
func TestBoltRefusesWhatIsNotAFile(t *testing.T) {
	for _, c := range []struct {
		name string
		make func(path string) error
		why  string
	}{
		{"named pipe", func(path string) error { return syscall.Mkfifo(path, 0o600) }, "a named pipe"},
		{"symlink to /dev/zero", func(path string) error { return os.Symlink("/dev/zero", path) }, "a device"},
		{"directory", func(path string) error { return os.Mkdir(path, 0o700) }, "a directory"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "store.db")
			if err := c.make(path); err != nil {
				t.Fatal(err)
			}
			b, err := openBolt(dir, 10, time.Now())
			if err == nil {
				b.db.Close()
				t.Fatal("opened")
			}
			if msg := err.Error(); !strings.Contains(msg, path) || !strings.Contains(msg, c.why) {
				t.Fatalf("openBolt = %v; want %s and %q", err, path, c.why)
			}
		})
	}
}
