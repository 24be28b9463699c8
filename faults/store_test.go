//go:build faults

package faults

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/grpc-config-dns/grpc-config-dns/internal/etcdtest"
)

// storeServer is `serve --store DIR` with its admin API.
type storeServer struct {
	*server
	dns, admin string
}

func serveStore(t *testing.T, dir, dnsAddr, admin string) *storeServer {
	t.Helper()
	s := &storeServer{server: serve(t, dnsAddr, "--store", dir, "--admin", admin), dns: dnsAddr, admin: admin}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if resp, err := http.Get("http://" + admin + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return s
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve --store not ready in 10s:\n%s", s.logs.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

var httpClient = &http.Client{Timeout: 5 * time.Second}

// put PUTs a spec; it returns the resourceVersion acknowledged, or an
// error (a refused or interrupted write).
func (s *storeServer) put(path, spec string) (int64, int, error) {
	return s.putMeta(path, `{}`, spec)
}

func (s *storeServer) putMeta(path, meta, spec string) (int64, int, error) {
	req, _ := http.NewRequest("PUT", "http://"+s.admin+path, strings.NewReader(`{"metadata":`+meta+`,"spec":`+spec+`}`))
	resp, err := httpClient.Do(req)
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 && resp.StatusCode != 201 {
		return 0, resp.StatusCode, fmt.Errorf("PUT %s: %d %s", path, resp.StatusCode, b)
	}
	var o struct {
		Metadata struct {
			ResourceVersion string `json:"resourceVersion"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(b, &o); err != nil {
		return 0, resp.StatusCode, err
	}
	rv, err := strconv.ParseInt(o.Metadata.ResourceVersion, 10, 64)
	return rv, resp.StatusCode, err
}

func (s *storeServer) get(path string) (int, []byte) {
	resp, err := httpClient.Get("http://" + s.admin + path)
	if err != nil {
		return 0, nil
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

const storeZone = `{"nameservers":["ns.example.net."]}`

func storeSvc(n int) string {
	return fmt.Sprintf(`{"addresses":["10.0.0.1"],"serviceConfig":{"methodConfig":[{"name":[{"service":"svc.V%d"}],"timeout":"1s"}]}}`, n)
}

// TestStoreKill9DuringWrites: serve --store is killed with SIGKILL while
// four clients write through the admin API, and restarted, many times.
// After each restart every acknowledged write is there, at its version or
// later, and the zone's serial is not lower than any served before.
func TestStoreKill9DuringWrites(t *testing.T) {
	dir := t.TempDir()
	addr, admin := freePort(t), freePort(t)
	s := serveStore(t, dir, addr, admin)
	if _, _, err := s.put("/v1/zones/a.test", storeZone); err != nil {
		t.Fatal(err)
	}
	type acked struct {
		path string
		rv   int64
		n    int
	}
	var all []acked
	var mu sync.Mutex
	attempted := map[string]map[int]bool{} // every write tried, by path
	var highest uint32
	rng := rand.New(rand.NewPCG(3, 4))
	next := 0
	for round := 0; round < 12; round++ {
		var wg sync.WaitGroup
		stop := make(chan struct{})
		for w := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					mu.Lock()
					next++
					n := next
					mu.Unlock()
					// Writers share a few services: new versions of old
					// objects as well as new objects.
					path := fmt.Sprintf("/v1/zones/a.test/services/w%d-%d", w, i%5)
					mu.Lock()
					if attempted[path] == nil {
						attempted[path] = map[int]bool{}
					}
					attempted[path][n] = true
					mu.Unlock()
					rv, _, err := s.put(path, storeSvc(n))
					if err != nil {
						return // killed
					}
					mu.Lock()
					all = append(all, acked{path, rv, n})
					mu.Unlock()
				}
			}()
		}
		deadline := time.Now().Add(time.Duration(50+rng.IntN(250)) * time.Millisecond)
		for time.Now().Before(deadline) {
			if r, err := ask(addr, "a.test.", dns.TypeSOA); err == nil && len(r.Answer) == 1 {
				if serial := r.Answer[0].(*dns.SOA).Serial; serialGE(serial, highest) {
					highest = serial
				}
			}
			time.Sleep(5 * time.Millisecond)
		}
		s.kill()
		close(stop)
		wg.Wait()

		s = serveStore(t, dir, addr, admin)
		if got := answering(t, addr, "a.test.").Serial; !serialGE(got, highest) {
			t.Fatalf("round %d: serial %d after the restart, %d was served before", round, got, highest)
		}
		// Every acknowledged write is there: the object is at that
		// version, or at a later one holding a later write to it (one
		// whose answer the kill cut off: committed, not acknowledged).
		latest := map[string]acked{}
		var top int64
		for _, a := range all {
			if a.rv > latest[a.path].rv {
				latest[a.path] = a
			}
			top = max(top, a.rv)
		}
		for path, a := range latest {
			code, b := s.get(path)
			var o struct {
				Metadata struct {
					ResourceVersion string `json:"resourceVersion"`
				} `json:"metadata"`
			}
			json.Unmarshal(b, &o)
			rv, _ := strconv.ParseInt(o.Metadata.ResourceVersion, 10, 64)
			n := -1
			if i := bytes.Index(b, []byte("svc.V")); i >= 0 {
				fmt.Sscanf(string(b[i+len("svc.V"):]), "%d", &n)
			}
			mu.Lock()
			tried := attempted[path][n]
			mu.Unlock()
			switch {
			case code != 200:
				t.Fatalf("round %d: %s was acknowledged at version %d (V%d); after kill -9: %d %s", round, path, a.rv, a.n, code, b)
			case rv == a.rv && n != a.n, rv < a.rv, rv > a.rv && (n <= a.n || !tried):
				t.Fatalf("round %d: %s was acknowledged at version %d (V%d); after kill -9 it is at version %d with V%d (a write of it: %v)", round, path, a.rv, a.n, rv, n, tried)
			}
		}
		// Versions never go back: the store's version after the restart is
		// at least every version acknowledged before.
		code, b := s.get("/v1/zones/a.test/services?limit=1")
		var l struct {
			Metadata struct {
				ResourceVersion string `json:"resourceVersion"`
			} `json:"metadata"`
		}
		json.Unmarshal(b, &l)
		if rv, _ := strconv.ParseInt(l.Metadata.ResourceVersion, 10, 64); code != 200 || rv < top {
			t.Fatalf("round %d: the list after the restart is at version %q (%d %s); version %d was acknowledged before", round, l.Metadata.ResourceVersion, code, b, top)
		}
	}
	t.Logf("%d acknowledged writes over 12 kills; highest serial %d", len(all), highest)
}

// TestStoreFullDisk: writes to a store on a full disk are refused (507)
// and change nothing, the server keeps serving, and once space is freed
// writes go through again.
func TestStoreFullDisk(t *testing.T) {
	dir := tmpfs(t)
	addr, admin := freePort(t), freePort(t)
	s := serveStore(t, dir, addr, admin)
	if _, _, err := s.put("/v1/zones/a.test", storeZone); err != nil {
		t.Fatal(err)
	}
	rv1, _, err := s.put("/v1/zones/a.test/services/v", storeSvc(1))
	if err != nil {
		t.Fatal(err)
	}
	before := answering(t, addr, "a.test.").Serial
	filler := fill(t, dir)
	// Writes fail as soon as the store needs a page the disk lacks;
	// bbolt may still reuse freed pages for a few.
	var refused int
	var code int
	for i := 2; i < 200; i++ {
		if _, code, err = s.putMeta("/v1/zones/a.test/services/v", bigLabels(i), storeSvc(i)); err != nil {
			refused = i
			break
		}
	}
	if refused == 0 {
		t.Fatal("no write refused on a full disk")
	}
	if code != http.StatusInsufficientStorage {
		t.Errorf("a write on a full disk answered %d, want 507", code)
	}
	if got := version(t, addr, "a.test."); got != refused-1 {
		t.Errorf("serving V%d after the refusal of V%d", got, refused)
	}
	_, b := s.get("/v1/zones/a.test/services/v")
	if !bytes.Contains(b, []byte(fmt.Sprintf("svc.V%d\"", refused-1))) {
		t.Errorf("the store holds %s after a refused write", b)
	}
	os.Remove(filler)
	rv, _, err := s.put("/v1/zones/a.test/services/v", storeSvc(1000))
	if err != nil {
		t.Fatalf("after freeing space: %v", err)
	}
	if rv <= rv1 {
		t.Errorf("version %d after %d", rv, rv1)
	}
	deadline := time.Now().Add(2 * time.Second)
	for version(t, addr, "a.test.") != 1000 {
		if time.Now().After(deadline) {
			t.Fatal("the write after freeing space is not served")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if got := answering(t, addr, "a.test.").Serial; !serialGE(got, before+1) {
		t.Errorf("serial %d, was %d", got, before)
	}
	// And it survives a restart.
	s.kill()
	serveStore(t, dir, addr, admin)
	if got := version(t, addr, "a.test."); got != 1000 {
		t.Errorf("after a restart V%d, want V1000", got)
	}
}

// bigLabels is metadata of about 8 KB, so that each version takes space.
func bigLabels(n int) string {
	var b strings.Builder
	b.WriteString(`{"labels":{`)
	for i := range 60 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"l%d":"%d-%s"`, i, n, strings.Repeat("x", 55))
	}
	b.WriteString("}}")
	return b.String()
}

// soa asks a server for a zone's SOA serial; ok is false without an
// answer.
func soa(addr, zone string) (uint32, bool) {
	r, err := ask(addr, zone, dns.TypeSOA)
	if err != nil || len(r.Answer) != 1 {
		return 0, false
	}
	s, ok := r.Answer[0].(*dns.SOA)
	if !ok {
		return 0, false
	}
	return s.Serial, true
}

// TestStoreReplicaKill9OnEtcd: two `serve --store etcd://…` replicas on
// one etcd take writes; replica B is killed with SIGKILL during them,
// A takes more writes while B is down, and B, restarted, serves the same
// serial and records as A within a second of being started, never a
// serial lower than it served before the kill.
func TestStoreReplicaKill9OnEtcd(t *testing.T) {
	e := etcdtest.Start(t)
	loc := e.Location("kill")
	aDNS, aAdmin, bDNS, bAdmin := freePort(t), freePort(t), freePort(t), freePort(t)
	a := serveStore(t, loc, aDNS, aAdmin)
	b := serveStore(t, loc, bDNS, bAdmin)
	if _, _, err := a.put("/v1/zones/a.test", storeZone); err != nil {
		t.Fatal(err)
	}
	if _, _, err := a.put("/v1/zones/a.test/services/v", storeSvc(0)); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	next := 0
	write := func(s *storeServer, stop <-chan struct{}, wg *sync.WaitGroup) {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			mu.Lock()
			next++
			n := next
			mu.Unlock()
			if _, _, err := s.put("/v1/zones/a.test/services/v", storeSvc(n)); err != nil {
				return // killed
			}
		}
	}
	var slowest time.Duration
	for round := range 5 {
		// Writes through both replicas; B is killed in the middle of them.
		var wg sync.WaitGroup
		stop := make(chan struct{})
		for i := range 4 {
			wg.Add(1)
			go write([]*storeServer{a, b}[i%2], stop, &wg)
		}
		time.Sleep(time.Duration(100+50*round) * time.Millisecond)
		before, _ := soa(bDNS, "a.test.")
		b.kill()
		// A keeps taking writes while B is down.
		time.Sleep(200 * time.Millisecond)
		close(stop)
		wg.Wait()
		// A serves a write a moment after acknowledging it (its watch on
		// etcd brings it): let it settle.
		time.Sleep(200 * time.Millisecond)
		want, ok := soa(aDNS, "a.test.")
		if !ok {
			t.Fatalf("round %d: replica A does not answer", round)
		}
		wantV := version(t, aDNS, "a.test.")

		started := time.Now()
		b = serveStore(t, loc, bDNS, bAdmin)
		for {
			got, ok := soa(bDNS, "a.test.")
			if ok && !serialGE(got, before) {
				t.Fatalf("round %d: restarted replica B serves serial %d; it served %d before the kill", round, got, before)
			}
			if ok && got == want && version(t, bDNS, "a.test.") == wantV {
				break
			}
			if time.Since(started) > time.Second {
				t.Fatalf("round %d: restarted replica B serves serial %d (%v), replica A %d, 1s after B was started", round, got, ok, want)
			}
			time.Sleep(5 * time.Millisecond)
		}
		slowest = max(slowest, time.Since(started))
		if got, _ := soa(aDNS, "a.test."); got != want {
			t.Fatalf("round %d: replica A moved from serial %d to %d with no write", round, want, got)
		}
	}
	t.Logf("%d writes; a restarted replica served its peer's serial at most %v after it was started", next, slowest)
}

// dnsView is what a server answers to a few queries about names at and
// below example.test: rcode, flags and records of each answer, without
// the message ID.
func dnsView(t *testing.T, addr string) string {
	t.Helper()
	var b strings.Builder
	for _, q := range []struct {
		name  string
		qtype uint16
	}{
		{"test.", dns.TypeSOA},
		{"example.test.", dns.TypeSOA},
		{"sub.example.test.", dns.TypeSOA},
		{"sub.example.test.", dns.TypeNS},
		{"foo.sub.example.test.", dns.TypeA},
		{"_grpc_config.foo.sub.example.test.", dns.TypeTXT},
	} {
		r, err := ask(addr, q.name, q.qtype)
		if err != nil {
			t.Fatalf("%s %s: %v", q.name, dns.TypeToString[q.qtype], err)
		}
		fmt.Fprintf(&b, "%s %s: %s aa=%v\n", q.name, dns.TypeToString[q.qtype], dns.RcodeToString[r.Rcode], r.Authoritative)
		for _, rr := range append(r.Answer, r.Ns...) {
			fmt.Fprintf(&b, "  %s\n", rr)
		}
	}
	return b.String()
}

// refusedNested checks that a zone PUT was refused as a config with both
// zones is: 422, the zone-nested diagnostic naming both.
func refusedNested(t *testing.T, code int, err error, inner, outer string) {
	t.Helper()
	want := fmt.Sprintf("zone %s lies inside zone %s", inner, outer)
	if code != http.StatusUnprocessableEntity || err == nil || !strings.Contains(err.Error(), `"code":"zone-nested"`) || !strings.Contains(err.Error(), want) {
		t.Fatalf("got %d %v; want 422 with the zone-nested diagnostic %q", code, err, want)
	}
}

// TestStoreNestedZones: zones inside one another, each PUT through the
// admin API of `serve --store DIR`, are refused as a config holding them
// is (422, zone-nested), and DNS answers for the names below the outer
// zone stay what they were, byte for byte; the refusals survive a
// restart (nothing was stored).
func TestStoreNestedZones(t *testing.T) {
	dir := t.TempDir()
	addr, admin := freePort(t), freePort(t)
	s := serveStore(t, dir, addr, admin)
	if _, _, err := s.put("/v1/zones/test", storeZone); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.put("/v1/zones/test/services/foo.sub.example", storeSvc(1)); err != nil {
		t.Fatal(err)
	}
	answering(t, addr, "test.")
	// The zone answers before its service does: wait until the service is
	// served and two views in a row agree (one view asks several
	// questions, and the service's version may land between them).
	var before string
	for deadline := time.Now().Add(5 * time.Second); ; {
		before = dnsView(t, addr)
		if strings.Contains(before, "svc.V1") && dnsView(t, addr) == before {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the service below example.test is not served, or its answers keep changing:\n%s", before)
		}
		time.Sleep(20 * time.Millisecond)
	}
	_, code, err := s.put("/v1/zones/example.test", storeZone)
	refusedNested(t, code, err, "example.test.", "test.")
	_, code, err = s.put("/v1/zones/sub.example.test", storeZone)
	refusedNested(t, code, err, "sub.example.test.", "test.")
	// A later write, to another zone, is served: the refused ones, had
	// they been stored, would be served by now too.
	if _, _, err := s.put("/v1/zones/other.example", storeZone); err != nil {
		t.Fatal(err)
	}
	answering(t, addr, "other.example.")
	if after := dnsView(t, addr); after != before {
		t.Errorf("DNS answers changed after refused zone writes:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	if code, b := s.get("/v1/zones"); code != 200 || strings.Contains(string(b), "example.test") {
		t.Errorf("the zones stored: %d %s", code, b)
	}
	s.kill()
	serveStore(t, dir, addr, admin)
	answering(t, addr, "other.example.")
	if after := dnsView(t, addr); after != before {
		t.Errorf("DNS answers after a restart:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}

// TestStoreNestedZonesReplicasOnEtcd: two `serve --store etcd://…`
// replicas on one etcd take a zone and a zone inside it at the same
// moment, one each, many times: never both, whichever commits first.
func TestStoreNestedZonesReplicasOnEtcd(t *testing.T) {
	e := etcdtest.Start(t)
	loc := e.Location("nested")
	aDNS, aAdmin, bDNS, bAdmin := freePort(t), freePort(t), freePort(t), freePort(t)
	a := serveStore(t, loc, aDNS, aAdmin)
	b := serveStore(t, loc, bDNS, bAdmin)
	won := map[string]int{}
	for i := range 20 {
		outer := fmt.Sprintf("z%d.test", i)
		inner := "in." + outer
		var ca, cb int
		var ea, eb error
		var wg sync.WaitGroup
		start := make(chan struct{})
		wg.Add(2)
		go func() { defer wg.Done(); <-start; _, ca, ea = a.put("/v1/zones/"+outer, storeZone) }()
		go func() { defer wg.Done(); <-start; _, cb, eb = b.put("/v1/zones/"+inner, storeZone) }()
		close(start)
		wg.Wait()
		switch {
		case ea == nil && eb == nil:
			t.Fatalf("round %d: replica A created %s and replica B %s", i, outer, inner)
		case ea == nil:
			refusedNested(t, cb, eb, inner+".", outer+".")
			won["outer"]++
		case eb == nil:
			refusedNested(t, ca, ea, inner+".", outer+".")
			won["inner"]++
		default:
			t.Fatalf("round %d: neither was created: %v; %v", i, ea, eb)
		}
	}
	// Both replicas serve the 20 zones that won, and no zone in a zone.
	for _, s := range []*storeServer{a, b} {
		for i := range 20 {
			outer := fmt.Sprintf("z%d.test.", i)
			deadline := time.Now().Add(2 * time.Second)
			for {
				_, okOuter := soa(s.dns, outer)
				_, okInner := soa(s.dns, "in."+outer)
				if okOuter && okInner {
					t.Fatalf("replica %s serves both %s and in.%s", s.dns, outer, outer)
				}
				if okOuter || okInner {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("replica %s serves neither %s nor in.%s", s.dns, outer, outer)
				}
				time.Sleep(5 * time.Millisecond)
			}
		}
	}
	t.Logf("the outer zone was created first %d times, the inner one %d", won["outer"], won["inner"])
}
