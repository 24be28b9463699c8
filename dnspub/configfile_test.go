package dnspub

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"testing/iotest"

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
	s := &Server{opts: Options{ConfigFile: path}, sums: newFileHasher()}
	var sum fileSum
	if n := allocated(func() { sum, err = s.hashConfigFile() }); n > 256<<10 {
		t.Errorf("hashing a %d-byte config allocated %d bytes; want a buffer's worth", len(text), n)
	}
	if err != nil || sum != s.sums.sum(text) {
		t.Fatalf("hashConfigFile = %x, %v; want %x", sum, err, s.sums.sum(text))
	}
}

// The sum of a file read in parts is the sum of its text; texts that
// differ by a byte, or by their length, have other sums, and so do the
// same texts under another server's seeds.
func TestFileSum(t *testing.T) {
	h, other := newFileHasher(), newFileHasher()
	seen := map[fileSum]string{}
	for _, n := range []int{0, 1, 7, 8, 127, 128, 129, 4096, 100_003} {
		text := bytes.Repeat([]byte("zones: []\n#"), n/11+1)[:n]
		sum := h.sum(text)
		if got, m, err := h.read(iotest.OneByteReader(bytes.NewReader(text))); err != nil || m != int64(n) || got != sum {
			t.Errorf("%d bytes read one at a time: %x (%d bytes, %v); want %x", n, got, m, err, sum)
		}
		if got, _, _ := h.read(bytes.NewReader(text)); got != sum {
			t.Errorf("%d bytes read at once: %x; want %x", n, got, sum)
		}
		if prev, ok := seen[sum]; ok {
			t.Errorf("%d bytes have the sum of %s", n, prev)
		}
		seen[sum] = fmt.Sprint(n, " bytes")
		if n > 0 {
			flipped := bytes.Clone(text)
			flipped[n/2] ^= 1
			if h.sum(flipped) == sum {
				t.Errorf("%d bytes and the same with a bit flipped have one sum", n)
			}
		}
		if other.sum(text) == sum {
			t.Errorf("%d bytes have the same sum under two servers' seeds", n)
		}
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
		"hash": func(p string) error {
			_, err := (&Server{opts: Options{ConfigFile: p}, sums: newFileHasher()}).hashConfigFile()
			return err
		},
	} {
		if err := read(path); err == nil || !strings.Contains(err.Error(), "64 MiB") {
			t.Errorf("%s of a config over 64 MiB: %v; want the limit named", name, err)
		}
	}
}
