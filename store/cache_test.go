package store

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/grpc-config-dns/grpc-config-dns/internal/etcdtest"
)

func openEtcdStore(t testing.TB, e *etcdtest.Etcd, noCache bool) *Store {
	t.Helper()
	s, err := Open(context.Background(), Options{Location: e.Location(fmt.Sprintf("c%d", time.Now().UnixNano())), NoCache: noCache})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestListCacheIsEtcd: while services are written and deleted in two
// zones, and the etcd revision moves by writes outside the store's
// prefix, every range the cache answers is what etcd answers at the same
// revision.
func TestListCacheIsEtcd(t *testing.T) {
	e := etcdtest.Start(t)
	s := openEtcdStore(t, e, false)
	other := openEtcdStore(t, e, true) // moves the revision, unseen by s's watch
	c, ok := s.b.(*cachedBackend)
	if !ok {
		t.Fatalf("an etcd store's backend is %T, not the cache", s.b)
	}
	ctx := context.Background()
	// As a publisher does: its whole read gives the cache its keys.
	if _, _, err := s.Snapshot(ctx); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	stop := time.Now().Add(2 * time.Second)
	// Progress reports, asked for often from the start: etcd 3.4 may send
	// one ahead of events it has still to send (a watch just made is the
	// likeliest), which the cache must not believe.
	wg.Add(1)
	go func() {
		defer wg.Done()
		for time.Now().Before(stop) {
			c.indexedBackend.requestProgress(ctx)
			time.Sleep(time.Millisecond)
		}
	}()
	zone := &Object{Spec: json.RawMessage(`{"nameservers":[{"name":"ns1","addresses":["192.0.2.53"]}]}`)}
	for _, z := range []string{"a.test", "b.test"} {
		if _, _, err := s.PutZone(ctx, z, zone); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := other.PutZone(ctx, "x.test", zone); err != nil {
		t.Fatal(err)
	}
	for w := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(w), 7))
			st := s
			if w == 2 {
				st = other
			}
			for time.Now().Before(stop) {
				z := []string{"a.test", "b.test"}[r.IntN(2)]
				if w == 2 {
					z = "x.test"
				}
				name := fmt.Sprintf("svc-%d", r.IntN(60))
				if r.IntN(3) == 0 {
					st.DeleteService(ctx, z, name, "")
					continue
				}
				st.PutService(ctx, z, name, &Object{Spec: json.RawMessage(fmt.Sprintf(`{"addresses":["192.0.2.%d"]}`, r.IntN(250)+1))})
			}
		}()
	}
	checks := 0
	for time.Now().Before(stop.Add(500 * time.Millisecond)) {
		for _, q := range []struct {
			prefix, from string
			limit        int
		}{{"", "", 0}, {"s/a.test/", "", 0}, {"s/a.test/", "", 7}, {"s/b.test/", "s/b.test/svc-3", 5}, {"z/", "", 1}, {"s/", "s/a.test/svc-5", 40}} {
			// The keys the cache holds for the range, at its revision.
			c.mu.RLock()
			ready, read := c.ready, c.at
			var keys []string
			more := false
			if ready {
				c.keys.from(max(q.prefix, q.from), func(k string) bool {
					if !strings.HasPrefix(k, q.prefix) {
						return false
					}
					if q.limit > 0 && len(keys) == q.limit {
						more = true
						return false
					}
					keys = append(keys, k)
					return true
				})
			}
			c.mu.RUnlock()
			if !ready {
				continue
			}
			want, wmore, _, err := c.indexedBackend.rangeKeys(ctx, q.prefix, q.from, q.limit, read)
			if err != nil {
				t.Fatal(err)
			}
			var wkeys []string
			for _, k := range want {
				wkeys = append(wkeys, k.key)
			}
			if more != wmore || !slices.Equal(keys, wkeys) {
				t.Fatalf("range %+v at %d: the cache has %d keys (more %v), etcd %d (more %v)", q, read, len(keys), more, len(wkeys), wmore)
			}
			// And what the cache answers with them: etcd's answer.
			if got, more, read, ok, err := c.cached(ctx, q.prefix, q.from, q.limit, -1); err != nil {
				t.Fatal(err)
			} else if ok {
				want, wmore, _, err := c.indexedBackend.rangeKeys(ctx, q.prefix, q.from, q.limit, read)
				if err != nil {
					t.Fatal(err)
				}
				if more != wmore || len(got) != len(want) || len(got) > 0 && !reflect.DeepEqual(got, want) {
					t.Fatalf("range %+v at %d: the cache answers %d keys (more %v), etcd %d (more %v)", q, read, len(got), more, len(want), wmore)
				}
			}
			checks++
		}
	}
	wg.Wait()
	if checks == 0 {
		t.Fatal("the cache answered nothing")
	}
	// A consistent read after writes elsewhere moved the revision: served
	// by the cache after a progress report, at etcd's revision or later.
	if _, _, err := other.PutZone(ctx, "y.test", zone); err != nil {
		t.Fatal(err)
	}
	cur, _ := c.indexedBackend.rev(ctx)
	_, _, read, err := c.rangeKeys(ctx, "z/", "", 0, 0)
	if err != nil || read < cur {
		t.Fatalf("a consistent read at %d (err %v), etcd is at %d", read, err, cur)
	}
	t.Logf("%d ranges compared", checks)
}

// TestListCacheQuietPrefixEtcd: a store whose prefix is quiet while another
// prefix of the same etcd moves on, past a compaction, still answers its
// ranges (etcd does while the cache reads its keys again), and its cache
// answers again at etcd's revision.
func TestListCacheQuietPrefixEtcd(t *testing.T) {
	e := etcdtest.Start(t)
	s := openEtcdStore(t, e, false)
	other := openEtcdStore(t, e, true)
	c := s.b.(*cachedBackend)
	ctx := context.Background()
	zone := &Object{Spec: json.RawMessage(`{"nameservers":[{"name":"ns1","addresses":["192.0.2.53"]}]}`)}
	for _, st := range []*Store{s, other} {
		if _, _, err := st.PutZone(ctx, "a.test", zone); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := s.PutService(ctx, "a.test", "svc", &Object{Spec: json.RawMessage(`{"addresses":["192.0.2.1"]}`)}); err != nil {
		t.Fatal(err)
	}
	waitAt := func(min int64) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for {
			c.mu.RLock()
			ok := c.ready && c.at >= min
			c.mu.RUnlock()
			if ok {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("the cache did not reach revision %d", min)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	before, _ := s.Revision(ctx)
	waitAt(before)
	for i := range 5 {
		if _, _, err := other.PutService(ctx, "a.test", fmt.Sprintf("x%d", i), &Object{Spec: json.RawMessage(`{"addresses":["192.0.2.2"]}`)}); err != nil {
			t.Fatal(err)
		}
	}
	cur, _ := other.Revision(ctx)
	if err := other.Compact(ctx, cur); err != nil {
		t.Fatal(err)
	}
	for range 2 { // the first finds the cache behind, the second may too
		kvs, _, _, err := c.rangeKeys(ctx, "s/", "", 10, -1)
		if err != nil || len(kvs) != 1 || kvs[0].key != "s/a.test/svc" {
			t.Fatalf("a range of a quiet prefix past a compaction: %v, %v", kvs, err)
		}
	}
	waitAt(cur)
	if kvs, _, read, ok, err := c.cached(ctx, "s/", "", 10, -1); err != nil || !ok || len(kvs) != 1 || read < cur {
		t.Fatalf("the cache after reading its keys again: %v at %d, ok %v, %v", kvs, read, ok, err)
	}
}

// BenchmarkListPageEtcd: the first 500-item page of 5000 services, as a
// list with NotOlderThan reads it, from the cache and from etcd.
func BenchmarkListPageEtcd(b *testing.B) {
	e := etcdtest.Start(b)
	for _, noCache := range []bool{false, true} {
		b.Run(fmt.Sprintf("cache=%v", !noCache), func(b *testing.B) {
			s := openEtcdStore(b, e, noCache)
			ctx := context.Background()
			if _, _, err := s.PutZone(ctx, "fleet.test", &Object{Spec: json.RawMessage(`{"nameservers":[{"name":"ns1","addresses":["192.0.2.53"]}]}`)}); err != nil {
				b.Fatal(err)
			}
			var wg sync.WaitGroup
			for w := range 16 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := w; i < 5000; i += 16 {
						s.PutService(ctx, "fleet.test", fmt.Sprintf("svc-%d", i), &Object{Spec: json.RawMessage(`{"addresses":["192.0.2.1"],"serviceConfig":{"methodConfig":[{"name":[{"service":"s"}],"timeout":"1s"}]}}`)})
					}
				}()
			}
			wg.Wait()
			time.Sleep(200 * time.Millisecond)
			b.ResetTimer()
			for b.Loop() {
				l, err := s.ListServices(ctx, "fleet.test", ListOptions{Limit: 500, ResourceVersion: "1", ResourceVersionMatch: MatchNotOlderThan})
				if err != nil || len(l.Items) != 500 {
					b.Fatalf("list: %v", err)
				}
			}
		})
	}
}

// TestListCacheSeededEtcd: a store read whole (a publisher's start)
// gives the cache the keys it read: the cache holds them at the read's
// revision long before it would have read them itself (seedWait), shares
// their strings with what the read returned, and follows the writes
// after it.
func TestListCacheSeededEtcd(t *testing.T) {
	e := etcdtest.Start(t)
	ctx := context.Background()
	loc := e.Location("seeded")
	w, err := Open(ctx, Options{Location: loc, NoCache: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	zone := &Object{Spec: json.RawMessage(`{"nameservers":[{"name":"ns1","addresses":["192.0.2.53"]}]}`)}
	if _, _, err := w.PutZone(ctx, "a.test", zone); err != nil {
		t.Fatal(err)
	}
	for i := range 40 {
		if _, _, err := w.PutService(ctx, "a.test", fmt.Sprintf("svc-%02d", i), &Object{Spec: json.RawMessage(`{"addresses":["192.0.2.1"]}`)}); err != nil {
			t.Fatal(err)
		}
	}
	opened := time.Now()
	s, err := Open(ctx, Options{Location: loc})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c := s.b.(*cachedBackend)
	items, read, err := s.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for {
		c.mu.RLock()
		ready, at := c.ready, c.at
		c.mu.RUnlock()
		if ready {
			if at < read {
				t.Fatalf("the cache is at %d, before the read's %d", at, read)
			}
			break
		}
		if time.Since(opened) > seedWait/2 {
			t.Fatalf("the cache not ready %v after the store was opened and read whole", time.Since(opened))
		}
		time.Sleep(5 * time.Millisecond)
	}
	c.mu.RLock()
	var keys []string
	c.keys.from("", func(k string) bool { keys = append(keys, k); return true })
	c.mu.RUnlock()
	services := 0
	for _, k := range keys {
		if strings.HasPrefix(k, servicePrefix("a.test")) {
			services++
		}
	}
	read40 := 0
	for _, it := range items {
		if it.Kind == KindService {
			read40++
		}
	}
	if services != 40 || read40 != 40 {
		t.Fatalf("the cache holds %d services' keys (of %d), the read %d services", services, len(keys), read40)
	}
	// The values of a range are read with the cache's key strings.
	kvs, err := c.indexedBackend.rangeExact(ctx, keys, read)
	if err != nil || len(kvs) != len(keys) {
		t.Fatalf("rangeExact: %d kvs, %v", len(kvs), err)
	}
	for i := range kvs {
		if kvs[i].key != keys[i] || unsafe.StringData(kvs[i].key) != unsafe.StringData(keys[i]) {
			t.Fatalf("kv %d: %q, a copy of the key %q", i, kvs[i].key, keys[i])
		}
	}
	// It follows what is written after the read.
	if _, _, err := w.PutService(ctx, "a.test", "svc-new", &Object{Spec: json.RawMessage(`{"addresses":["192.0.2.2"]}`)}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); ; {
		c.mu.RLock()
		n := c.keys.len()
		c.mu.RUnlock()
		if n == len(keys)+1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the cache holds %d keys, not %d, after a write", n, len(keys)+1)
		}
		time.Sleep(5 * time.Millisecond)
	}
	l, err := s.ListServices(ctx, "a.test", ListOptions{})
	if err != nil || len(l.Items) != 41 || l.Items[40].Metadata.Name != "svc-new" {
		t.Fatalf("list after the write: %d items, %v", len(l.Items), err)
	}
}

// failingIndex is an etcd whose watch fails at once and whose keys cannot
// be read; any other method is not expected (nil).
type failingIndex struct {
	indexedBackend
	keyReads atomic.Int64
}

func (f *failingIndex) keyNames(context.Context, string, int64) ([]string, int64, error) {
	f.keyReads.Add(1)
	return nil, 0, errors.New("etcd is down")
}

func (f *failingIndex) watch(context.Context, string, int64) <-chan batch {
	ch := make(chan batch, 1)
	ch <- batch{err: errors.New("the watch failed")}
	close(ch)
	return ch
}

func (f *failingIndex) close() error { return nil }

// TestListCacheBacksOff: a cache whose watch fails says so and waits a
// second before it reads the keys again, rather than asking etcd again
// and again at once.
func TestListCacheBacksOff(t *testing.T) {
	var logged bytes.Buffer
	f := &failingIndex{}
	c := newCachedBackend(f, slog.New(slog.NewTextHandler(&logged, nil)))
	c.seed <- keysRead{keys: []string{"z/a.test"}, at: 5}
	time.Sleep(500 * time.Millisecond)
	c.close()
	if n := f.keyReads.Load(); n > 1 {
		t.Errorf("the keys were read %d times in half a second after the watch failed", n)
	}
	if !strings.Contains(logged.String(), "stopped following etcd") {
		t.Errorf("nothing said of the failed watch: %q", logged.String())
	}
}
