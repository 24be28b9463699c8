package dnspub

import (
	"bytes"
	"crypto/sha256"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/grpc-config-dns/grpc-config-dns/model"
)

// allocated returns the bytes f allocates on the heap.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// A publisher answers queries without allocating, so garbage made by
// reading its config stays resident until the next load: reading a file
// costs the file once, and the watcher's look at it costs nothing like it.
func TestConfigFileReadsCostTheFileOnce(t *testing.T) {
	const size = 8 << 20
	path := filepath.Join(t.TempDir(), "publisher.yaml")
	text := bytes.Repeat([]byte("# a comment line of a large config file\n"), size/41)
	if err := os.WriteFile(path, text, 0o644); err != nil {
		t.Fatal(err)
	}
	var got []byte
	var err error
	if n := allocated(func() { got, err = readConfigFile(path) }); n > uint64(len(text))+64<<10 {
		t.Errorf("reading a %d-byte config allocated %d bytes; want about the file's size", len(text), n)
	}
	if err != nil || !bytes.Equal(got, text) {
		t.Fatalf("readConfigFile = %d bytes, %v; want the file", len(got), err)
	}
	var sum [sha256.Size]byte
	if n := allocated(func() { sum, err = hashConfigFile(path) }); n > 256<<10 {
		t.Errorf("hashing a %d-byte config allocated %d bytes; want a buffer's worth", len(text), n)
	}
	if err != nil || sum != sha256.Sum256(text) {
		t.Fatalf("hashConfigFile = %x, %v; want %x", sum, err, sha256.Sum256(text))
	}
}

func TestConfigFileTooLarge(t *testing.T) {
	path := filepath.Join(t.TempDir(), "publisher.yaml")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(model.MaxConfigSize + 1); err != nil {
		t.Fatal(err)
	}
	f.Close()
	for name, read := range map[string]func(string) error{
		"read": func(p string) error { _, err := readConfigFile(p); return err },
		"hash": func(p string) error { _, err := hashConfigFile(p); return err },
	} {
		if err := read(path); err == nil || !strings.Contains(err.Error(), "64 MiB") {
			t.Errorf("%s of a config over 64 MiB: %v; want the limit named", name, err)
		}
	}
}
