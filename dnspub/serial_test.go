package dnspub

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/grpc-config-dns/grpc-config-dns/model"
)

// zonesConfig publishes the zones of versions: origin → content version.
func zonesConfig(versions map[string]int) string {
	var b strings.Builder
	b.WriteString("zones:\n")
	origins := slices.Sorted(func(yield func(string) bool) {
		for o := range versions {
			if !yield(o) {
				return
			}
		}
	})
	for _, o := range origins {
		v := versions[o]
		fmt.Fprintf(&b, "  - origin: %s\n    nameservers: [ns.example.net.]\n    services:\n      - {name: echo, addresses: [10.0.0.%d]}\n", o, v)
	}
	return b.String()
}

var errDiskFull = syscall.ENOSPC

// TestStateWriteFailureKeepsOldVersion: when the serial state cannot be
// written, the new version is not served (its serial could be lost by a
// crash); the old one keeps serving, the failure is counted and logged,
// and the next reload after the disk recovers publishes it.
func TestStateWriteFailureKeepsOldVersion(t *testing.T) {
	ts := startServer(t, baseConfig(""), nil)
	before := ts.serial()
	ts.serials.write = func(string, []byte) error { return errDiskFull }
	ts.write(strings.Replace(baseConfig(""), "192.0.2.1,", "192.0.2.7,", 1))
	err := ts.Reload()
	var se *StateError
	if !errors.As(err, &se) || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("Reload = %v, want a StateError for a full disk", err)
	}
	if ts.serial() != before {
		t.Errorf("serial %d served after the failed write, was %d", ts.serial(), before)
	}
	r := ts.ask("udp", "echo.example.test.", dns.TypeA, 0)
	if len(r.Answer) != 1 || r.Answer[0].(*dns.A).A.String() != "192.0.2.1" {
		t.Errorf("the new version is served: %v", r.Answer)
	}
	if got := testCounter(t, ts.metrics.stateErrors); got != 1 {
		t.Errorf("state_write_errors_total = %v", got)
	}
	if !strings.Contains(ts.logs.String(), "cannot persist SOA serials") {
		t.Errorf("not logged:\n%s", ts.logs.String())
	}
	ts.serials.write = writeFileAtomic
	if err := ts.Reload(); err != nil {
		t.Fatal(err)
	}
	if !serialGreater(ts.serial(), before) {
		t.Errorf("serial %d after recovery, was %d", ts.serial(), before)
	}
	r = ts.ask("udp", "echo.example.test.", dns.TypeA, 0)
	if len(r.Answer) != 1 || r.Answer[0].(*dns.A).A.String() != "192.0.2.7" {
		t.Errorf("the new version is not served after recovery: %v", r.Answer)
	}
}

// TestStartRefusedWhenStateCannotBeWritten: a server whose serials
// cannot be persisted does not start; one whose state is already on disk
// needs no write and starts on a read-only disk.
func TestStartRefusedWhenStateCannotBeWritten(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "p.yaml")
	os.WriteFile(file, []byte(zonesConfig(map[string]int{"a.test.": 1})), 0o644)
	start := func(fail bool) error {
		s, err := newServer(Options{ConfigFile: file, Listen: "127.0.0.1:0", WatchInterval: -1, Logger: discardLogger()})
		if err != nil {
			return err
		}
		if fail {
			s.serials.write = func(string, []byte) error { return errDiskFull }
		}
		return s.loadFirst()
	}
	var se *StateError
	if err := start(true); !errors.As(err, &se) {
		t.Fatalf("start with an unwritable state: %v", err)
	}
	if err := start(false); err != nil {
		t.Fatal(err)
	}
	if err := start(true); err != nil {
		t.Errorf("start with an unchanged state wrote it: %v", err)
	}
}

// TestRemovedZoneComesBackHigher: a zone whose serial ran ahead of the
// clock (several changes in one second), removed and added back (across a
// restart, too), comes back above the serial secondaries may still hold.
func TestRemovedZoneComesBackHigher(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "p.yaml")
	clock := time.Unix(2_000_000_000, 0)
	start := func() *Server {
		s, err := New(Options{ConfigFile: file, Listen: "127.0.0.1:0", WatchInterval: -1, Logger: discardLogger(), Now: func() time.Time { return clock }})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	os.WriteFile(file, []byte(zonesConfig(map[string]int{"a.test.": 0, "b.test.": 0})), 0o644)
	s := start()
	for v := 1; v <= 5; v++ {
		os.WriteFile(file, []byte(zonesConfig(map[string]int{"a.test.": 0, "b.test.": v})), 0o644)
		if err := s.Reload(); err != nil {
			t.Fatal(err)
		}
	}
	high := s.Serials()["b.test."]
	if high != 2_000_000_005 {
		t.Fatalf("serial %d after five changes in one second", high)
	}
	os.WriteFile(file, []byte(zonesConfig(map[string]int{"a.test.": 0})), 0o644)
	if err := s.Reload(); err != nil {
		t.Fatal(err)
	}
	clock = clock.Add(time.Second)
	s = start() // a restart while b.test. is away
	os.WriteFile(file, []byte(zonesConfig(map[string]int{"a.test.": 0, "b.test.": 9})), 0o644)
	if err := s.Reload(); err != nil {
		t.Fatal(err)
	}
	if got := s.Serials()["b.test."]; !serialGreater(got, high) {
		t.Errorf("b.test. came back with serial %d, below %d", got, high)
	}

	// Once removed for longer than its SOA expire (and the clock is past
	// its serial), a zone is forgotten.
	os.WriteFile(file, []byte(zonesConfig(map[string]int{"a.test.": 0})), 0o644)
	if err := s.Reload(); err != nil {
		t.Fatal(err)
	}
	clock = clock.Add(15 * 24 * time.Hour) // default expire: 14 days
	os.WriteFile(file, []byte(zonesConfig(map[string]int{"a.test.": 1})), 0o644)
	if err := s.Reload(); err != nil {
		t.Fatal(err)
	}
	state, _ := os.ReadFile(file + ".serial")
	if strings.Contains(string(state), "b.test.") {
		t.Errorf("b.test. still in the state file after its expire:\n%s", state)
	}
}

// TestSerialsNeverGoBackwards is a property test: over random sequences
// of reloads that change, remove and add back zones, restarts, failed
// state writes, and a clock that stalls, jumps and goes backwards, the
// serial served for a zone never decreases (RFC 1982) while a secondary
// may still hold the zone.
func TestSerialsNeverGoBackwards(t *testing.T) {
	origins := []string{"a.test.", "b.test.", "c.test."}
	const expire = 14 * 24 * 3600 // the default SOA expire
	for seed := range uint64(25) {
		rng := rand.New(rand.NewPCG(seed, 11))
		dir := t.TempDir()
		file := filepath.Join(dir, "p.yaml")
		clock := time.Unix(2_000_000_000, 0)
		failing := false
		var srv *Server
		var log []string
		// What a secondary may hold: the highest serial served per zone,
		// and when the zone was last removed (0 while served).
		type held struct {
			serial  uint32
			removed int64
		}
		secondary := map[string]held{}
		check := func() {
			if srv == nil {
				return
			}
			serving := srv.Serials()
			for _, o := range origins {
				h, known := secondary[o]
				s, ok := serving[o]
				switch {
				case ok && known && serialGreater(h.serial, s):
					t.Fatalf("seed %d: %s served with serial %d after %d\n%s", seed, o, s, h.serial, strings.Join(log, "\n"))
				case ok:
					secondary[o] = held{serial: s}
				case known && h.removed == 0:
					secondary[o] = held{serial: h.serial, removed: clock.Unix()}
				case known && clock.Unix()-h.removed > expire && serialGreater(uint32(clock.Unix()), h.serial):
					delete(secondary, o) // expired everywhere, as retire decides
				}
			}
		}
		start := func() {
			s, err := newServer(Options{ConfigFile: file, Listen: "127.0.0.1:0", WatchInterval: -1, Logger: discardLogger(), Now: func() time.Time { return clock }})
			if err != nil {
				t.Fatalf("seed %d: %v", seed, err)
			}
			s.serials.write = func(p string, b []byte) error {
				if failing {
					return errDiskFull
				}
				return writeFileAtomic(p, b)
			}
			var se *StateError
			switch err := s.loadFirst(); {
			case err == nil:
				srv = s
			case errors.As(err, &se) && failing:
				srv = nil // refused to start: serves nothing
			default:
				t.Fatalf("seed %d: start: %v", seed, err)
			}
		}
		writeConfig := func() {
			versions := map[string]int{}
			for _, o := range origins {
				if rng.IntN(4) > 0 {
					versions[o] = rng.IntN(3)
				}
			}
			if len(versions) == 0 {
				versions["a.test."] = 0
			}
			os.WriteFile(file, []byte(zonesConfig(versions)), 0o644)
			log = append(log, fmt.Sprintf("config %v", versions))
		}
		writeConfig()
		start()
		for range 60 {
			switch op := rng.IntN(10); {
			case op < 4:
				writeConfig()
				if srv != nil {
					var se *StateError
					if err := srv.Reload(); err != nil && !(errors.As(err, &se) && failing) {
						t.Fatalf("seed %d: reload: %v", seed, err)
					}
				}
			case op < 6:
				log = append(log, "restart")
				start()
			case op < 7:
				failing = !failing
				log = append(log, fmt.Sprintf("failing=%v", failing))
			case op < 8:
				d := time.Duration(rng.IntN(3)) * time.Second // often stalls: changes outrun it
				clock = clock.Add(d)
				log = append(log, fmt.Sprintf("clock +%v", d))
			case op < 9:
				d := time.Duration(rng.IntN(86400)) * time.Second
				clock = clock.Add(-d)
				log = append(log, fmt.Sprintf("clock -%v", d))
			default:
				d := time.Duration(rng.IntN(20*86400)) * time.Second
				clock = clock.Add(d)
				log = append(log, fmt.Sprintf("clock +%v", d))
			}
			check()
		}
	}
}

func testCounter(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

// TestHugeConfigRefusedUnread: a config file larger than any the
// publisher reads is refused from its size, before it is read.
func TestHugeConfigRefusedUnread(t *testing.T) {
	file := filepath.Join(t.TempDir(), "p.yaml")
	f, err := os.Create(file)
	if err != nil {
		t.Fatal(err)
	}
	f.Truncate(model.MaxConfigSize + 1) // sparse: nothing to read
	f.Close()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err = New(Options{ConfigFile: file, Listen: "127.0.0.1:0", WatchInterval: -1, Logger: discardLogger()})
	runtime.ReadMemStats(&after)
	if err == nil || !strings.Contains(err.Error(), "64 MiB") {
		t.Fatalf("New = %v, want the size refused", err)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 1<<20 {
		t.Errorf("%d bytes allocated: the file was read", grew)
	}
}

// TestStateSymlinkFollowed: a state file that is a symlink (to a volume,
// say) stays one; the file it names holds the serials written, and a
// restart from it serves no lower serial.
func TestStateSymlinkFollowed(t *testing.T) {
	dir, volume := t.TempDir(), t.TempDir()
	file := filepath.Join(dir, "p.yaml")
	state := filepath.Join(dir, "p.yaml.serial")
	target := filepath.Join(volume, "serials")
	os.WriteFile(target, []byte("{}"), 0o644)
	if err := os.Symlink(target, state); err != nil {
		t.Fatal(err)
	}
	clock := time.Unix(2_000_000_000, 0)
	start := func() *Server {
		s, err := New(Options{ConfigFile: file, Listen: "127.0.0.1:0", WatchInterval: -1, Logger: discardLogger(), Now: func() time.Time { return clock }})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	os.WriteFile(file, []byte(zonesConfig(map[string]int{"a.test.": 0})), 0o644)
	s := start()
	for v := 1; v <= 3; v++ {
		os.WriteFile(file, []byte(zonesConfig(map[string]int{"a.test.": v})), 0o644)
		if err := s.Reload(); err != nil {
			t.Fatal(err)
		}
	}
	high := s.Serials()["a.test."]
	if fi, err := os.Lstat(state); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the state file is no longer a symlink: %v %v", fi, err)
	}
	if b, _ := os.ReadFile(target); !strings.Contains(string(b), fmt.Sprint(high)) {
		t.Fatalf("the symlink's target does not hold serial %d:\n%s", high, b)
	}
	// The config goes back to the first version, whose digest the state
	// remembers with a lower serial: never lower than served.
	os.WriteFile(file, []byte(zonesConfig(map[string]int{"a.test.": 0})), 0o644)
	s = start()
	if got := s.Serials()["a.test."]; !serialGreater(got, high) {
		t.Errorf("after a restart from the symlinked state, serial %d, not above %d", got, high)
	}
}

// TestWriteThroughSymlinkOnlyToAFile: a state or answers file that is a
// symlink to something other than a regular file is not written through:
// the rename would have replaced what it names (a test once turned
// /dev/zero into a file of answers this way).
func TestWriteThroughSymlinkOnlyToAFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip("no named pipes here:", err)
	}
	for _, target := range []string{fifo, dir, filepath.Join(dir, "missing")} {
		link := filepath.Join(dir, "state")
		os.Remove(link)
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
		if err := writeFileAtomic(link, []byte("{}")); err == nil {
			t.Errorf("written through a symlink to %s", target)
		}
		if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
			t.Errorf("the symlink to %s was replaced: %v %v", target, fi, err)
		}
	}
	if fi, err := os.Lstat(fifo); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		t.Errorf("the named pipe was replaced: %v %v", fi, err)
	}
}
