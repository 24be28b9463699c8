package dnspub

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/grpc-config-dns/grpc-config-dns/model"
	"github.com/grpc-config-dns/grpc-config-dns/store"
)

const storeZoneSpec = `{"ttl":"30s","nameservers":[{"name":"ns1","addresses":["192.0.2.53"]}],"transfer":{"allow":["127.0.0.1"]}}`

func storeService(i int) string {
	return fmt.Sprintf(`{"addresses":["192.0.2.%d"],"serviceConfig":{"methodConfig":[{"name":[{"service":"s"}],"timeout":"%ds"}]}}`, i%250+1, i+1)
}

func openTestStore(t testing.TB, dir string) *store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), store.Options{Location: dir, History: 100})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func putZone(t testing.TB, st *store.Store, zone, spec string) int64 {
	t.Helper()
	o, _, err := st.PutZone(context.Background(), zone, &store.Object{Spec: json.RawMessage(spec)})
	if err != nil {
		t.Fatal(err)
	}
	rv, _ := strconv.ParseInt(o.Metadata.ResourceVersion, 10, 64)
	return rv
}

func putService(t testing.TB, st *store.Store, zone, name, spec string) int64 {
	t.Helper()
	o, _, err := st.PutService(context.Background(), zone, name, &store.Object{Spec: json.RawMessage(spec)})
	if err != nil {
		t.Fatal(err)
	}
	rv, _ := strconv.ParseInt(o.Metadata.ResourceVersion, 10, 64)
	return rv
}

func startStoreServer(t testing.TB, st *store.Store) *testServer {
	t.Helper()
	ts := &testServer{t: t, logs: &syncBuffer{}}
	s, err := New(Options{Store: st, Listen: "127.0.0.1:0", StorePing: 100 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(ts.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatal(err)
	}
	ts.Server = s
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	ts.addr = s.Addr().String()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		s.Shutdown(ctx)
		if t.Failed() {
			t.Logf("server log:\n%s", ts.logs.String())
		}
	})
	return ts
}

// waitTXT waits until the TXT answer of name holds want, and returns the
// zone's serial then.
func (ts *testServer) waitTXT(name, want string, d time.Duration) uint32 {
	ts.t.Helper()
	deadline := time.Now().Add(d)
	for {
		r := ts.ask("udp", name, dns.TypeTXT, 4096)
		got := ""
		for _, rr := range r.Answer {
			if txt, ok := rr.(*dns.TXT); ok {
				got = strings.Join(txt.Txt, "")
			}
		}
		if (want == "" && r.Rcode == dns.RcodeNameError) || (want != "" && strings.Contains(got, want)) {
			return ts.serial()
		}
		if time.Now().After(deadline) {
			ts.t.Fatalf("%s: TXT %q (rcode %s), want %q, after %v", name, got, dns.RcodeToString[r.Rcode], want, d)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestStoreModeFollowsWrites(t *testing.T) {
	st := openTestStore(t, t.TempDir())
	defer st.Close()
	putZone(t, st, "example.test", storeZoneSpec)
	r1 := putService(t, st, "example.test", "echo", storeService(1))
	ts := startStoreServer(t, st)
	base, _ := st.SerialBase(context.Background())
	if err := ts.Ready(); err != nil {
		t.Fatalf("not ready after start: %v", err)
	}
	s1 := ts.waitTXT("_grpc_config.echo.example.test.", `:\"2s\"`, time.Second)
	if s1 != base+uint32(r1) {
		t.Errorf("serial %d, want base %d + revision %d", s1, base, r1)
	}

	r2 := putService(t, st, "example.test", "echo", storeService(7))
	start := time.Now()
	s2 := ts.waitTXT("_grpc_config.echo.example.test.", `:\"8s\"`, time.Second)
	t.Logf("write to DNS answer: %v", time.Since(start))
	if s2 != base+uint32(r2) {
		t.Errorf("serial %d after the write at %d, want %d", s2, r2, base+uint32(r2))
	}
	// IXFR from the first version: the TXT record replaced.
	rrs, err := transferIn(t, ts.addr, ixfrQuery(s1), "")
	if err != nil {
		t.Fatal(err)
	}
	if len(rrs) < 4 || rrs[0].(*dns.SOA).Serial != s2 || rrs[1].(*dns.SOA).Serial != s1 {
		t.Errorf("IXFR from %d:\n%v", s1, rrs)
	}

	// A deletion is a write too: the serial moves, the name goes.
	putService(t, st, "example.test", "other", storeService(3))
	o, err := st.DeleteService(context.Background(), "example.test", "echo", "")
	if err != nil {
		t.Fatal(err)
	}
	rd, _ := strconv.ParseInt(o.Metadata.ResourceVersion, 10, 64)
	s3 := ts.waitTXT("_grpc_config.echo.example.test.", "", time.Second)
	if s3 != base+uint32(rd) {
		t.Errorf("serial %d after the deletion at %d, want %d", s3, rd, base+uint32(rd))
	}
}

func TestStoreModeRestartKeepsSerials(t *testing.T) {
	dir := t.TempDir()
	st := openTestStore(t, dir)
	putZone(t, st, "example.test", storeZoneSpec)
	putService(t, st, "example.test", "echo", storeService(1))
	ts := startStoreServer(t, st)
	before := ts.serial()
	ts.Shutdown(context.Background())
	st.Close()

	st = openTestStore(t, dir)
	defer st.Close()
	ts = startStoreServer(t, st)
	if after := ts.serial(); after != before {
		t.Errorf("serial %d after a restart, %d before", after, before)
	}
}

func TestStoreModeInvalidObjectIsSkipped(t *testing.T) {
	// A zone naming a TSIG key that the store knows but this server does
	// not is not served (and counted); the other zones are.
	key := &model.Key{Name: "xfr-key.", Algorithm: "hmac-sha256.", Secret: "OAaUj0VV0dB/m2fzq5ZTHRBXoWO8UbaqU8S5PVXHe8o="}
	st, err := store.Open(context.Background(), store.Options{Location: t.TempDir(), Keys: []*model.Key{key}})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	putZone(t, st, "example.test", storeZoneSpec)
	putService(t, st, "example.test", "echo", storeService(1))
	putZone(t, st, "signed.test", `{"nameservers":["ns1.example.net."],"transfer":{"key":"xfr-key"}}`)
	putService(t, st, "signed.test", "echo", storeService(1))
	ts := startStoreServer(t, st)
	ts.waitTXT("_grpc_config.echo.example.test.", "timeout", time.Second)
	if r := ts.ask("udp", "_grpc_config.echo.signed.test.", dns.TypeTXT, 0); r.Rcode != dns.RcodeRefused {
		t.Errorf("a zone invalid here answered %s, want REFUSED", dns.RcodeToString[r.Rcode])
	}
	if !strings.Contains(ts.logs.String(), "signed.test") {
		t.Errorf("the invalid zone is not logged")
	}
}

func TestStoreSerialMonotonicPast2to32(t *testing.T) {
	// The store advances in steps below 2^30; a zone changes rarely. Every
	// serial a server publishes must be greater (RFC 1982) than the one
	// before, however many revisions pass.
	f := &feed{zones: map[string]*feedZone{"z": {name: "z"}}, base: 4_000_000_000}
	var last uint32
	first := true
	for rev := int64(1); rev < 1<<36; rev += 1<<29 + 12345 {
		f.rev = rev
		if rev%(5<<29) < 1<<29 {
			f.zones["z"].marker = rev // the zone changes now and then
		}
		s := f.serial("z.")
		if !first && s != last && !serialGreater(s, last) {
			t.Fatalf("at revision %d the serial went from %d to %d", rev, last, s)
		}
		if !first && s == last && rev/storeEpoch != (rev-(1<<29+12345))/storeEpoch {
			t.Fatalf("at revision %d the epoch moved but the serial did not", rev)
		}
		last, first = s, false
	}
}

// TestStoreModeIncrementalMatchesWhole: a server that follows writes one
// by one (building each version from the services that changed) serves
// exactly the zone a server reading the store whole serves, after every
// round of random creations, replacements and deletions.
func TestStoreModeIncrementalMatchesWhole(t *testing.T) {
	st := openTestStore(t, t.TempDir())
	defer st.Close()
	putZone(t, st, "example.test", storeZoneSpec)
	spec := func(i, v int) string {
		port := ""
		if v%3 == 0 {
			port = fmt.Sprintf(`"port":%d,`, 1000+v)
		}
		return fmt.Sprintf(`{%s"addresses":["192.0.2.%d"],"serviceConfig":{"methodConfig":[{"name":[{"service":"s"}],"timeout":"%ds"}]}}`, port, v%250+1, i+v+1)
	}
	for i := range 40 {
		putService(t, st, "example.test", fmt.Sprintf("s%d", i), spec(i, 0))
	}
	follower := startStoreServer(t, st)
	rng := rand.New(rand.NewPCG(5, 6))
	live := map[int]bool{}
	for i := range 40 {
		live[i] = true
	}
	axfr := func(addr string) []string {
		rrs, err := transferIn(t, addr, axfrQuery(), "")
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, rr := range rrs {
			out = append(out, rr.String())
		}
		slices.Sort(out)
		return out
	}
	for round := range 6 {
		for op := range 40 {
			i := rng.IntN(60)
			name := fmt.Sprintf("s%d", i)
			if live[i] && rng.IntN(3) == 0 {
				if _, err := st.DeleteService(context.Background(), "example.test", name, ""); err != nil {
					t.Fatal(err)
				}
				delete(live, i)
			} else {
				putService(t, st, "example.test", name, spec(i, round*40+op))
				live[i] = true
			}
		}
		rev, _ := st.Revision(context.Background())
		for deadline := time.Now().Add(5 * time.Second); follower.StoreRevision() != rev; time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("round %d: the follower is at revision %d, the store at %d", round, follower.StoreRevision(), rev)
			}
		}
		whole := startStoreServer(t, st)
		for deadline := time.Now().Add(5 * time.Second); whole.StoreRevision() != rev; time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("round %d: a new server is at revision %d, the store at %d", round, whole.StoreRevision(), rev)
			}
		}
		if got, want := axfr(follower.addr), axfr(whole.addr); !slices.Equal(got, want) {
			t.Fatalf("round %d: the follower serves\n%s\nread whole, the store is\n%s", round, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
}
