package dnspub

import (
	"crypto/sha256"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/grpc-config-dns/grpc-config-dns/dnspub/zone"
	"github.com/grpc-config-dns/grpc-config-dns/model"
)

// realConfig is testdata/publisher/production.yaml, with NOTIFY kept on
// loopback.
func realConfig(t testing.TB) string {
	t.Helper()
	b, err := os.ReadFile("../testdata/publisher/production.yaml")
	if err != nil {
		t.Fatal(err)
	}
	s := strings.Replace(string(b), `notify: [10.0.1.53, "10.0.1.54:53"]`, `notify: []`, 1)
	if s == string(b) {
		t.Fatal("production.yaml changed: update realConfig")
	}
	return s
}

// watchOptions makes the watcher fast: polls every 10ms, Debounce and
// Settle as given.
func watchOptions(debounce, settle time.Duration) func(*Options) {
	return func(o *Options) {
		o.WatchInterval = 10 * time.Millisecond
		o.Debounce = debounce
		o.Settle = settle
	}
}

// servedNames lists every zone and service of the version being served.
func servedNames(s *Server) map[string]bool {
	out := map[string]bool{}
	for origin, ze := range s.snap.Load().zones {
		out[origin] = true
		for _, svc := range ze.cfg.Services {
			out[svc.Name] = true
		}
	}
	return out
}

// watchServed calls check on the version being served every few
// milliseconds until the returned stop is called.
func watchServed(t *testing.T, s *Server, check func(v *snapshot)) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			check(s.snap.Load())
			select {
			case <-done:
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

// writeStalled writes content to path line by line, pausing after every
// line. With reopen, each line is appended by a new open and close (a
// shell loop of `echo … >> file`); otherwise one open holds the file.
func writeStalled(t *testing.T, path, content string, pause time.Duration, reopen bool) {
	t.Helper()
	lines := strings.SplitAfter(content, "\n")
	if !reopen {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range lines {
			if _, err := f.WriteString(l); err != nil {
				t.Fatal(err)
			}
			time.Sleep(pause)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		return
	}
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	for _, l := range lines {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteString(l)
		f.Close()
		time.Sleep(pause)
	}
}

// TestStalledWriterIsNeverServed: a writer that pauses at every line
// boundary of a real config, each pause longer than both Debounce and
// Settle, holding the file open: no prefix is ever loaded, whatever it
// would have published, and the whole file is loaded once it is closed
// (issue 11, item 1).
func TestStalledWriterIsNeverServed(t *testing.T) {
	if !haveInotify(t) {
		t.Skip("needs inotify: without it the watcher cannot see a writer that still holds the file")
	}
	old := realConfig(t)
	ts := startServer(t, old, watchOptions(10*time.Millisecond, 30*time.Millisecond))
	serial := func() uint32 { return ts.Serials()["svc.example.com."] }
	first := serial()
	version := ts.snap.Load().version
	var changed []string
	var mu sync.Mutex
	stop := watchServed(t, ts.Server, func(v *snapshot) {
		if v.version != version {
			mu.Lock()
			changed = append(changed, v.cfg.Zones[0].Origin)
			mu.Unlock()
		}
	})
	next := strings.Replace(old, "10.1.0.20", "10.1.0.21", 1)
	writeStalled(t, ts.file, next, 50*time.Millisecond, false)
	stop()
	if len(changed) > 0 || strings.Contains(ts.logs.String(), "config rejected") {
		t.Fatalf("a partial file was loaded while the writer held it (%d versions):\n%s", len(changed), ts.logs.String())
	}
	waitFor(t, "the complete file", func() bool {
		r := ts.ask("udp", "ledger.svc.example.com.", dns.TypeA, 0)
		return len(r.Answer) == 1 && r.Answer[0].(*dns.A).A.String() == "10.1.0.21"
	})
	if !serialGreater(serial(), first) {
		t.Errorf("serial %d after the change, was %d", serial(), first)
	}
	if !strings.Contains(ts.logs.String(), "a writer still has it open") {
		t.Errorf("the wait was not logged")
	}
}

// contentOf identifies what a version serves: each zone's digest (every
// record and every SOA field but the serial).
func contentOf(v *snapshot) map[string][sha256.Size]byte {
	out := map[string][sha256.Size]byte{}
	for origin, ze := range v.zones {
		out[origin] = ze.cur.Digest()
	}
	return out
}

// contentOfText is contentOf for the config text, read afresh.
func contentOfText(t *testing.T, text string) map[string][sha256.Size]byte {
	t.Helper()
	cfg, ds := model.Parse([]byte(text))
	if cfg == nil {
		t.Fatalf("config invalid: %v", ds)
	}
	out := map[string][sha256.Size]byte{}
	for _, zc := range cfg.Zones {
		out[zc.Origin] = zone.New(zc, 1).Digest()
	}
	return out
}

// servesOnly watches the versions served until stop is called, and
// reports each version whose content is neither old nor next.
func servesOnly(t *testing.T, s *Server, old, next string) (stop func() []string) {
	t.Helper()
	want := []map[string][sha256.Size]byte{contentOfText(t, old), contentOfText(t, next)}
	if got := contentOf(s.snap.Load()); !maps.Equal(got, want[0]) {
		t.Fatal("the version served at the start is not the old config")
	}
	var mu sync.Mutex
	var wrong []string
	seen := map[uint64]bool{}
	end := watchServed(t, s, func(v *snapshot) {
		if seen[v.version] {
			return
		}
		seen[v.version] = true
		got := contentOf(v)
		if maps.Equal(got, want[0]) || maps.Equal(got, want[1]) {
			return
		}
		var differ []string
		for origin := range want[1] {
			if got[origin] != want[1][origin] {
				differ = append(differ, origin)
			}
		}
		slices.Sort(differ)
		mu.Lock()
		wrong = append(wrong, fmt.Sprintf("version %d (zones %v differ from the new config)", v.version, differ))
		mu.Unlock()
	})
	return func() []string {
		end()
		mu.Lock()
		defer mu.Unlock()
		return wrong
	}
}

// TestAppendingWriterNeverRemovesWhatIsServed: a writer that appends the
// file line by line in many opens (a shell loop of `echo … >> file`)
// closes it between its parts, so each part looks finished, and the
// prefixes that end inside the last service remove nothing: they drop its
// TXT record or its bareHost setting. Every version served must be the
// old config or the whole new one (issue 11, item 1).
func TestAppendingWriterNeverRemovesWhatIsServed(t *testing.T) {
	old := realConfig(t)
	ts := startServer(t, old, watchOptions(20*time.Millisecond, time.Second))
	next := strings.Replace(old, "10.1.0.20", "10.1.0.21", 1)
	stop := servesOnly(t, ts.Server, old, next)
	writeStalled(t, ts.file, next, 40*time.Millisecond, true)
	waitFor(t, "the complete file", func() bool {
		r := ts.ask("udp", "ledger.svc.example.com.", dns.TypeA, 0)
		return len(r.Answer) == 1 && r.Answer[0].(*dns.A).A.String() == "10.1.0.21"
	})
	if wrong := stop(); len(wrong) > 0 {
		t.Errorf("served %d partial versions during the write: %v", len(wrong), wrong)
	}
	if !maps.Equal(contentOf(ts.snap.Load()), contentOfText(t, next)) {
		t.Error("the version served at the end is not the new config")
	}
}

// ledgerAddr is the address ledger.svc.example.com. answers with.
func ledgerAddr(ts *testServer) string {
	r := ts.ask("udp", "ledger.svc.example.com.", dns.TypeA, 0)
	if len(r.Answer) != 1 {
		return ""
	}
	return r.Answer[0].(*dns.A).A.String()
}

// waitLoaded waits, up to limit, for ledger to answer addr and returns how
// long after start that was.
func waitLoaded(t *testing.T, ts *testServer, addr string, start time.Time, limit time.Duration) time.Duration {
	t.Helper()
	for ledgerAddr(ts) != addr {
		if time.Since(start) > limit {
			t.Fatalf("ledger does not answer %s after %v:\n%s", addr, limit, ts.logs.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	return time.Since(start)
}

// TestWritesInARowWaitForSettle: a save written in place by one open is
// loaded after Debounce; another one soon after (within Settle) is what a
// writer that appends in parts, pausing longer than Debounce, looks like
// once its first part was loaded, so it waits for Settle: loading a part
// must not make the next part look like a fresh save.
func TestWritesInARowWaitForSettle(t *testing.T) {
	if !haveInotify(t) {
		t.Skip("needs inotify: without it every change waits for Settle")
	}
	const settle = 2 * time.Second
	old := realConfig(t)
	ts := startServer(t, old, watchOptions(20*time.Millisecond, settle))
	start := time.Now()
	if err := os.WriteFile(ts.file, []byte(strings.Replace(old, "10.1.0.20", "10.1.0.21", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if d := waitLoaded(t, ts, "10.1.0.21", start, 5*time.Second); d >= settle {
		t.Errorf("a single save in place was loaded after %v, not before Settle", d)
	}
	time.Sleep(100 * time.Millisecond) // longer than Debounce
	start = time.Now()
	if err := os.WriteFile(ts.file, []byte(strings.Replace(old, "10.1.0.20", "10.1.0.22", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if d := waitLoaded(t, ts, "10.1.0.22", start, settle+5*time.Second); d < settle {
		t.Errorf("a second save in place %v after the first was loaded after %v, before Settle", 100*time.Millisecond, d)
	}
	if !strings.Contains(ts.logs.String(), "written in place by several opens in a row") {
		t.Error("the wait was not logged")
	}
}

// removeLedger is old without its last service.
func removeLedger(old string) string {
	i := strings.Index(old, "      - name: ledger")
	return old[:i]
}

// TestInPlaceRemovalWaitsForSettle: a change written in place (one open,
// closed) that removes a service is held until the file has been quiet
// for Settle, and says so; Reload (SIGHUP) loads it at once.
func TestInPlaceRemovalWaitsForSettle(t *testing.T) {
	old := realConfig(t)
	ts := startServer(t, old, watchOptions(20*time.Millisecond, 800*time.Millisecond))
	start := time.Now()
	if err := os.WriteFile(ts.file, []byte(removeLedger(old)), 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the hold to be logged", func() bool {
		return strings.Contains(ts.logs.String(), "holds back a change: it removes 1 services (ledger.svc.example.com.)")
	})
	if !servedNames(ts.Server)["ledger.svc.example.com."] {
		t.Fatalf("removed after %v, before Settle", time.Since(start))
	}
	waitFor(t, "the removal after Settle", func() bool { return !servedNames(ts.Server)["ledger.svc.example.com."] })
	if d := time.Since(start); d < 800*time.Millisecond {
		t.Errorf("loaded after %v, before Settle", d)
	}

	// Put it back in place (not a removal: loaded after Debounce), remove
	// it again, and reload by hand.
	os.WriteFile(ts.file, []byte(old), 0o644)
	waitFor(t, "ledger back", func() bool { return servedNames(ts.Server)["ledger.svc.example.com."] })
	os.WriteFile(ts.file, []byte(removeLedger(old)), 0o644)
	if err := ts.Reload(); err != nil {
		t.Fatal(err)
	}
	if servedNames(ts.Server)["ledger.svc.example.com."] {
		t.Error("Reload did not load the file as it is")
	}
}

// TestAtomicReplacementLoadsAtOnce: a file renamed over the config, or a
// Kubernetes-style symlink swap, is complete: even a removal is loaded
// after Debounce, not Settle.
func TestAtomicReplacementLoadsAtOnce(t *testing.T) {
	if !haveInotify(t) {
		t.Skip("needs inotify: without it every change waits for Settle")
	}
	old := realConfig(t)
	t.Run("rename", func(t *testing.T) {
		ts := startServer(t, old, watchOptions(20*time.Millisecond, time.Minute))
		ts.write(removeLedger(old))
		waitFor(t, "the removal", func() bool { return !servedNames(ts.Server)["ledger.svc.example.com."] })
	})
	t.Run("symlink swap", func(t *testing.T) {
		// The layout of a Kubernetes ConfigMap volume.
		dir := t.TempDir()
		for v, content := range []string{old, removeLedger(old)} {
			d := filepath.Join(dir, "..v"+string(rune('1'+v)))
			os.Mkdir(d, 0o755)
			os.WriteFile(filepath.Join(d, "publisher.yaml"), []byte(content), 0o644)
		}
		os.Symlink("..v1", filepath.Join(dir, "..data"))
		os.Symlink("..data/publisher.yaml", filepath.Join(dir, "publisher.yaml"))
		ts := startServer(t, "", func(o *Options) {
			watchOptions(20*time.Millisecond, time.Minute)(o)
			o.ConfigFile = filepath.Join(dir, "publisher.yaml")
			o.StateFile = filepath.Join(t.TempDir(), "state")
		})
		os.Symlink("..v2", filepath.Join(dir, "..data_tmp"))
		if err := os.Rename(filepath.Join(dir, "..data_tmp"), filepath.Join(dir, "..data")); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the removal", func() bool { return !servedNames(ts.Server)["ledger.svc.example.com."] })
	})
}

// blindTracker is an inotify tracker that could not watch the file
// itself (the limit on inotify watches reached): no write to it is seen.
type blindTracker struct{ pollTracker }

func (blindTracker) state() fileState { return fileState{} }

// TestUnseenWriterWaitsForSettle: where the watcher cannot see writers
// (no inotify, or no watch on the file), every change waits for Settle.
func TestUnseenWriterWaitsForSettle(t *testing.T) {
	for _, tc := range []struct {
		name    string
		tracker fileTracker
	}{
		{"no inotify", pollTracker{}},
		{"file not watched", blindTracker{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			old := realConfig(t)
			ts := startServerWith(t, old, watchOptions(20*time.Millisecond, 600*time.Millisecond), func(s *Server) {
				s.newTracker = func(string, *slog.Logger) fileTracker { return tc.tracker }
			})
			start := time.Now()
			ts.write(strings.Replace(old, "10.1.0.20", "10.1.0.21", 1))
			waitFor(t, "the change", func() bool { return ledgerAddr(ts) == "10.1.0.21" })
			if d := time.Since(start); d < 600*time.Millisecond {
				t.Errorf("loaded after %v, before Settle", d)
			}
		})
	}
}

// TestFileCreatedInPlaceWaitsForSettle: a file deleted and created again
// at the path may have been written before the watcher watched it, so its
// writes stay of unknown kind and wait for Settle, even those the watcher
// then sees.
func TestFileCreatedInPlaceWaitsForSettle(t *testing.T) {
	if !haveInotify(t) {
		t.Skip("needs inotify")
	}
	const settle = time.Second
	old := realConfig(t)
	ts := startServer(t, old, watchOptions(20*time.Millisecond, settle))
	os.Remove(ts.file)
	f, err := os.Create(ts.file)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	time.Sleep(100 * time.Millisecond) // the tracker watches the new file
	start := time.Now()
	if err := os.WriteFile(ts.file, []byte(strings.Replace(old, "10.1.0.20", "10.1.0.21", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if d := waitLoaded(t, ts, "10.1.0.21", start, 5*time.Second); d < settle {
		t.Errorf("a file created in place was loaded after %v, before Settle", d)
	}
}

// TestSwapOutsideWatchedDirs: the config's directory is a symlink, and it
// is swapped in its parent, which nothing watches: the content changes
// without an event, so how it was written is unknown. The new file must be
// watched from then on: a change written into it in place was never seen
// (the old file was still the one watched), and a removal written there
// must still wait for Settle.
func TestSwapOutsideWatchedDirs(t *testing.T) {
	if !haveInotify(t) {
		t.Skip("needs inotify")
	}
	const settle = time.Second
	old := realConfig(t)
	next := strings.Replace(old, "10.1.0.20", "10.1.0.21", 1)
	dir := t.TempDir()
	for v, content := range []string{old, next} {
		d := filepath.Join(dir, "v"+string(rune('1'+v)))
		os.Mkdir(d, 0o755)
		os.WriteFile(filepath.Join(d, "publisher.yaml"), []byte(content), 0o644)
	}
	os.Symlink("v1", filepath.Join(dir, "cur"))
	ts := startServer(t, "", func(o *Options) {
		watchOptions(20*time.Millisecond, settle)(o)
		o.ConfigFile = filepath.Join(dir, "cur", "publisher.yaml")
		o.StateFile = filepath.Join(t.TempDir(), "state")
	})
	os.Symlink("v2", filepath.Join(dir, "cur.tmp"))
	if err := os.Rename(filepath.Join(dir, "cur.tmp"), filepath.Join(dir, "cur")); err != nil {
		t.Fatal(err)
	}
	waitLoaded(t, ts, "10.1.0.21", time.Now(), settle+5*time.Second)
	time.Sleep(100 * time.Millisecond)
	start := time.Now()
	if err := os.WriteFile(filepath.Join(dir, "v2", "publisher.yaml"), []byte(removeLedger(next)), 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the removal", func() bool { return !servedNames(ts.Server)["ledger.svc.example.com."] })
	if d := time.Since(start); d < settle {
		t.Errorf("a removal written in place was loaded after %v, before Settle", d)
	}
}

// TestWatcherRetriesAfterStateFailure: a version refused because its
// serials could not be written is loaded by the watcher once the disk
// recovers, without a SIGHUP.
func TestWatcherRetriesAfterStateFailure(t *testing.T) {
	old := realConfig(t)
	ts := startServer(t, old, watchOptions(20*time.Millisecond, time.Minute))
	var mu sync.Mutex
	failing := true
	ts.reloadMu.Lock()
	ts.serials.write = func(p string, b []byte) error {
		mu.Lock()
		defer mu.Unlock()
		if failing {
			return errDiskFull
		}
		return writeFileAtomic(p, b)
	}
	ts.reloadMu.Unlock()
	ts.write(strings.Replace(old, "10.1.0.20", "10.1.0.21", 1))
	waitFor(t, "the failure", func() bool { return strings.Contains(ts.logs.String(), "cannot persist SOA serials") })
	mu.Lock()
	failing = false
	mu.Unlock()
	waitFor(t, "the retry", func() bool {
		r := ts.ask("udp", "ledger.svc.example.com.", dns.TypeA, 0)
		return r.Answer[0].(*dns.A).A.String() == "10.1.0.21"
	})
}

// TestRemovals names what a config removes from the version served.
func TestRemovals(t *testing.T) {
	old := realConfig(t)
	ts := startServer(t, old, nil)
	cfg, _ := model.Parse([]byte(removeLedger(old)))
	if got := removals(cfg, ts.snap.Load()); got != "it removes 1 services (ledger.svc.example.com.)" {
		t.Errorf("removals = %q", got)
	}
	cfg, _ = model.Parse([]byte(strings.Replace(old, "origin: svc.example.com.", "origin: svc2.example.com.", 1)))
	if got := removals(cfg, ts.snap.Load()); got != "it removes 1 zones (svc.example.com.)" {
		t.Errorf("removals = %q", got)
	}
	cfg, _ = model.Parse([]byte(old))
	if got := removals(cfg, ts.snap.Load()); got != "" {
		t.Errorf("removals = %q", got)
	}
}

// TestIdleFileNotReadAgain: a config file that does not change is not
// read again at every poll (a fleet's is 30 MB); a change still is.
func TestIdleFileNotReadAgain(t *testing.T) {
	for _, tc := range []struct {
		name    string
		tracker func(string, *slog.Logger) fileTracker
		most    int64 // reads allowed over 50 idle polls
	}{
		{"inotify", newFileTracker, 2},
		{"stat", func(string, *slog.Logger) fileTracker { return pollTracker{} }, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			old := realConfig(t)
			ts := startServerWith(t, old, watchOptions(10*time.Millisecond, 50*time.Millisecond), func(s *Server) { s.newTracker = tc.tracker })
			time.Sleep(500 * time.Millisecond) // 50 polls
			if n := ts.watchReads.Load(); n > tc.most {
				t.Errorf("the unchanged file was read %d times in 50 polls", n)
			}
			ts.write(strings.Replace(old, "10.1.0.20", "10.1.0.21", 1))
			waitFor(t, "the change", func() bool {
				r := ts.ask("udp", "ledger.svc.example.com.", dns.TypeA, 0)
				return r.Answer[0].(*dns.A).A.String() == "10.1.0.21"
			})
		})
	}
}

// TestWatcherRetriesAfterKeyFailure: a version refused because its zone's
// keys could not be written (the key directory unwritable, as a full or
// lost volume fails it) is loaded by the watcher once the disk recovers,
// without a SIGHUP, as one refused for its serials is.
func TestWatcherRetriesAfterKeyFailure(t *testing.T) {
	old := realConfig(t)
	ts := startServer(t, old, watchOptions(20*time.Millisecond, time.Minute))
	keyDir := ts.keyDir()
	if err := os.WriteFile(keyDir, []byte("not a directory"), 0o644); err != nil {
		t.Fatal(err)
	}
	signed := strings.Replace(old, "  - origin: svc.example.com.\n    ttl: 5m\n", "  - origin: svc.example.com.\n    ttl: 5m\n    dnssec: {}\n", 1)
	if signed == old {
		t.Fatal("production.yaml changed: update the test")
	}
	ts.write(signed)
	waitFor(t, "the failure", func() bool { return strings.Contains(ts.logs.String(), "config rejected") })
	if r := ts.ask("udp", "svc.example.com.", dns.TypeDNSKEY, 0); len(r.Answer) != 0 {
		t.Fatalf("DNSKEY answered while the keys could not be written: %v", r.Answer)
	}
	if err := os.Remove(keyDir); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the retry", func() bool {
		return len(ts.ask("udp", "svc.example.com.", dns.TypeDNSKEY, 0).Answer) > 0
	})
}
