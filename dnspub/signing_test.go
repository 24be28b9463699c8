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

// TestZSKRollover follows a signed zone through two rollovers of its
// zone-signing key on a clock moved 20 minutes at a time, as a validating
// resolver caching every record for its TTL would see it: a key signs
// only once it has been in the DNSKEY RRset for longer than that RRset's
// TTL (pre-publication), and a key leaves the RRset only once no
// signature it made can still be cached (RFC 7583 §3.2). The key files
// keep the timing, so a restart in the middle of a rollover carries on.
func TestZSKRollover(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "p.yaml")
	os.WriteFile(file, []byte(strings.Replace(string(model.Example), "    ttl: 30s\n", "    ttl: 300\n    dnssec: {keys: ksk-zsk, zskLifetime: 10d}\n", 1)), 0o644)
	var clock atomic.Int64
	t0 := int64(2_000_000_000)
	clock.Store(t0)
	now := func() time.Time { return time.Unix(clock.Load(), 0) }
	start := func() *Server {
		s, err := New(Options{ConfigFile: file, Listen: "127.0.0.1:0", WatchInterval: -1, Logger: discardLogger(), Now: now})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	s := start()
	const ttl = 300
	origin := "example.test."
	firstSeen := map[uint16]int64{}
	lastSigned := map[uint16]int64{}
	var published map[uint16]bool
	zsks := map[uint16]bool{}
	step := func() {
		t.Helper()
		if err := s.refreshDue(); err != nil {
			t.Fatal(err)
		}
		at := clock.Load()
		z := s.snap.Load().zones[origin].cur
		keys := map[uint16]bool{}
		ksk := map[uint16]bool{}
		for _, rr := range z.RecordsAt(origin) {
			if k, ok := rr.(*dns.DNSKEY); ok {
				keys[k.KeyTag()] = true
				ksk[k.KeyTag()] = k.Flags&dns.SEP != 0
				if _, ok := firstSeen[k.KeyTag()]; !ok {
					firstSeen[k.KeyTag()] = at
				}
			}
		}
		for _, rr := range z.Records() {
			sig, ok := rr.(*dns.RRSIG)
			if !ok || sig.TypeCovered == dns.TypeDNSKEY {
				continue
			}
			if !keys[sig.KeyTag] {
				t.Fatalf("at +%ds: %s %s signed by key %d, not in the DNSKEY RRset", at-t0, sig.Hdr.Name, dns.TypeToString[sig.TypeCovered], sig.KeyTag)
			}
			if firstSeen[sig.KeyTag] != t0 && at-firstSeen[sig.KeyTag] < ttl {
				t.Fatalf("at +%ds: key %d signs %ds after it was published, less than the DNSKEY TTL", at-t0, sig.KeyTag, at-firstSeen[sig.KeyTag])
			}
			lastSigned[sig.KeyTag] = at
			zsks[sig.KeyTag] = !ksk[sig.KeyTag]
		}
		for tag := range published {
			if !keys[tag] && at-lastSigned[tag] < ttl {
				t.Fatalf("at +%ds: key %d left the DNSKEY RRset %ds after its last signature, less than the TTL", at-t0, tag, at-lastSigned[tag])
			}
		}
		published = keys
	}
	for clock.Load() < t0+21*86400 {
		step()
		clock.Add(20 * 60)
		if clock.Load() == t0+15*86400 {
			// A restart in the middle of it all.
			s.Shutdown(context.Background())
			s = start()
		}
	}
	rolled := 0
	for _, zsk := range zsks {
		if zsk {
			rolled++
		}
	}
	if rolled < 3 {
		t.Errorf("%d zone-signing keys signed in 21 days with a 10-day lifetime, want 3", rolled)
	}
	files, _ := filepath.Glob(file + ".keys/*.private")
	t.Logf("%d key files; zone-signing keys that signed: %d", len(files), rolled)
}

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
