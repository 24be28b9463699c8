package dnspub

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/grpc-config-dns/grpc-config-dns/model"
)

// signedRRSIGs returns the RRSIG records of the zone being served.
func signedRRSIGs(t *testing.T, s *Server, origin string) []*dns.RRSIG {
	t.Helper()
	e := s.snap.Load().zones[origin]
	var out []*dns.RRSIG
	for _, rr := range e.cur.Records() {
		if sig, ok := rr.(*dns.RRSIG); ok {
			out = append(out, sig)
		}
	}
	return out
}

// TestSignaturesRefreshed: when the clock passes the time signatures are
// due, the server publishes a new serial with them made again (every one
// due, and only those), and the IXFR to it carries them.
func TestSignaturesRefreshed(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "p.yaml")
	os.WriteFile(file, []byte(strings.Replace(string(model.Example), "    ttl: 30s\n", "    ttl: 30s\n    dnssec: {}\n    transfer: {allow: [127.0.0.1]}\n", 1)), 0o644)
	var clock atomic.Int64
	clock.Store(2_000_000_000)
	now := func() time.Time { return time.Unix(clock.Load(), 0) }
	s, err := New(Options{ConfigFile: file, Listen: "127.0.0.1:0", WatchInterval: -1, Logger: discardLogger(), Now: now})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown(context.Background())
	origin := "example.test."
	s1 := s.Serials()[origin]
	first := signedRRSIGs(t, s, origin)
	if len(first) < 10 {
		t.Fatalf("%d signatures", len(first))
	}
	for _, sig := range first {
		if sig.Inception != signedAt(clock.Load()) {
			t.Fatalf("signed at %d, want the hour before the clock's hour", sig.Inception)
		}
	}
	due := s.snap.Load().zones[origin].cur.RefreshDue()
	if d := due.Sub(now()); d < 5*24*time.Hour || d > 7*24*time.Hour {
		t.Errorf("first refresh due in %v, want 7 days less up to an eighth of 14", d)
	}
	// A day before: nothing is due, a nudge publishes nothing.
	clock.Store(due.Unix() - 86400)
	s.resign <- struct{}{}
	time.Sleep(100 * time.Millisecond)
	if s.Serials()[origin] != s1 {
		t.Fatal("a new serial before any signature was due")
	}
	// Past the last one due: every signature is made again.
	clock.Store(2_000_000_000 + 8*86400)
	s.resign <- struct{}{}
	deadline := time.Now().Add(5 * time.Second)
	for s.Serials()[origin] == s1 {
		if time.Now().After(deadline) {
			t.Fatal("no new serial after the signatures were due")
		}
		time.Sleep(10 * time.Millisecond)
	}
	for _, sig := range signedRRSIGs(t, s, origin) {
		if sig.Inception != signedAt(clock.Load()) {
			t.Errorf("%s %s: still signed at %d", sig.Hdr.Name, dns.TypeToString[sig.TypeCovered], sig.Inception)
		}
	}
	z := s.snap.Load().zones[origin].cur
	if !z.RefreshDue().After(now()) {
		t.Errorf("refresh due %v, not after the clock", z.RefreshDue())
	}
	// The IXFR from the first serial carries the new signatures.
	rrs, err := transferIn(t, s.Addr().String(), ixfrQuery(s1), "")
	if err != nil {
		t.Fatal(err)
	}
	added := 0
	for _, rr := range rrs {
		if sig, ok := rr.(*dns.RRSIG); ok && sig.Inception == signedAt(clock.Load()) {
			added++
		}
	}
	if added != len(first) {
		t.Errorf("IXFR carries %d new signatures, want %d", added, len(first))
	}
}

// TestStoreModeSigned: a zone object with dnssec: is served signed, with
// the keys of --dnssec-keys; a write signs the changed service; without a
// key directory, the signed zone is not served and the log says why.
func TestStoreModeSigned(t *testing.T) {
	st := openTestStore(t, t.TempDir())
	defer st.Close()
	putZone(t, st, "example.test", strings.Replace(storeZoneSpec, `{"ttl":"30s",`, `{"ttl":"30s","dnssec":{"keys":"ksk-zsk"},`, 1))
	putService(t, st, "example.test", "echo", storeService(1))
	keys := t.TempDir()
	ts := &testServer{t: t, logs: &syncBuffer{}}
	s, err := New(Options{Store: st, KeyDir: keys, Listen: "127.0.0.1:0", StorePing: 100 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(ts.logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ts.Server = s
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown(context.Background())
	ts.addr = s.Addr().String()
	ts.waitTXT("_grpc_config.echo.example.test.", `:\"2s\"`, 5*time.Second)
	check := func() {
		t.Helper()
		z := s.snap.Load().zones["example.test."].cur
		if !z.Signed() {
			t.Fatal("not signed")
		}
	}
	check()
	if files, _ := filepath.Glob(filepath.Join(keys, "Kexample.test.+013+*.private")); len(files) != 2 {
		t.Errorf("key files: %v", files)
	}
	putService(t, st, "example.test", "echo", storeService(7))
	ts.waitTXT("_grpc_config.echo.example.test.", `:\"8s\"`, 5*time.Second)
	check()
	m := new(dns.Msg)
	m.SetQuestion("_grpc_config.echo.example.test.", dns.TypeTXT)
	m.SetEdns0(4096, true)
	r, _, err := (&dns.Client{Net: "tcp"}).Exchange(m, ts.addr)
	if err != nil {
		t.Fatal(err)
	}
	sigs := 0
	for _, rr := range r.Answer {
		if _, ok := rr.(*dns.RRSIG); ok {
			sigs++
		}
	}
	if sigs != 1 {
		t.Errorf("DO answer: %v", r)
	}

	// Without a key directory.
	logs := &syncBuffer{}
	s2, err := New(Options{Store: st, Listen: "127.0.0.1:0", StorePing: 100 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err == nil {
		defer s2.Shutdown(context.Background())
		s2.Start()
		deadline := time.Now().Add(5 * time.Second)
		for !strings.Contains(logs.String(), "--dnssec-keys") {
			if time.Now().After(deadline) {
				t.Fatalf("no word of the key directory:\n%s", logs.String())
			}
			time.Sleep(10 * time.Millisecond)
		}
	} else if !strings.Contains(err.Error(), "--dnssec-keys") {
		t.Errorf("without keys: %v", err)
	}
}

// signedAt is the inception of the signatures made at Unix time now.
func signedAt(now int64) uint32 { return uint32(now - now%3600 - 3600) }

// TestStoreModeRefresh: in store mode, signatures due are made again
// under a new revision of the zone, so the serial is the store's: a
// publisher started afterwards serves the same serial, not a lower one.
func TestStoreModeRefresh(t *testing.T) {
	st := openTestStore(t, t.TempDir())
	defer st.Close()
	putZone(t, st, "example.test", strings.Replace(storeZoneSpec, `{"ttl":"30s",`, `{"ttl":"30s","dnssec":{},`, 1))
	putService(t, st, "example.test", "echo", storeService(1))
	keys := t.TempDir()
	var clock atomic.Int64
	clock.Store(2_000_000_000)
	start := func() *Server {
		s, err := New(Options{Store: st, KeyDir: keys, Listen: "127.0.0.1:0", StorePing: 100 * time.Millisecond, Logger: discardLogger(),
			Now: func() time.Time { return time.Unix(clock.Load(), 0) }})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Start(); err != nil {
			t.Fatal(err)
		}
		return s
	}
	s := start()
	origin := "example.test."
	waitSerial := func(s *Server, pred func(uint32) bool) uint32 {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for {
			if v := s.Serials()[origin]; pred(v) {
				return v
			}
			if time.Now().After(deadline) {
				t.Fatalf("serial %d", s.Serials()[origin])
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	s1 := waitSerial(s, func(v uint32) bool { return v != 0 })
	clock.Add(8 * 86400)
	s.resign <- struct{}{}
	s2 := waitSerial(s, func(v uint32) bool { return v != s1 })
	base, _ := st.SerialBase(context.Background())
	rev, _ := st.Revision(context.Background())
	if s2 != base+uint32(rev) {
		t.Errorf("refreshed under serial %d, the store's is %d", s2, base+uint32(rev))
	}
	for _, sig := range signedRRSIGs(t, s, origin) {
		if sig.Inception != signedAt(clock.Load()) {
			t.Fatalf("%s %s still signed at %d", sig.Hdr.Name, dns.TypeToString[sig.TypeCovered], sig.Inception)
		}
	}
	s.Shutdown(context.Background())
	s = start()
	defer s.Shutdown(context.Background())
	if s3 := waitSerial(s, func(v uint32) bool { return v != 0 }); s3 != s2 {
		t.Errorf("after a restart, serial %d; served %d before", s3, s2)
	}
}
