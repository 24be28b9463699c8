package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/grpc-config-dns/grpc-config-dns/internal/etcdtest"
)

// everyWrite is a backend that lets another writer in before each of its
// transactions but the first n.
type everyWrite struct {
	backend
	n     int
	other func()
}

func (b *everyWrite) txn(ctx context.Context, t *txn) (txnResult, error) {
	if b.n > 0 {
		b.n--
	} else if b.other != nil {
		b.other()
	}
	return b.backend.txn(ctx, t)
}

func batchSpec(i int) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"addresses":["192.0.2.%d"],"serviceConfig":{"methodConfig":[{"name":[{"service":"s"}],"timeout":"%ds"}]}}`, i%250+1, i+1))
}

func batchItems(n int) []*Object {
	out := make([]*Object, n)
	for i := range out {
		out[i] = &Object{Metadata: Metadata{Name: fmt.Sprintf("s%d", i)}, Spec: batchSpec(i)}
	}
	return out
}

// TestBatchChunks: on a store that bounds its transactions, a batch is
// written in chunks; a chunk that another writer's change makes fail is
// checked again against the store as it is and written; and a batch that
// cannot finish says what its earlier chunks stored, which stays.
func TestBatchChunks(t *testing.T) {
	ctx := context.Background()
	open := func(t *testing.T) (*Store, *everyWrite, *Store) {
		t.Helper()
		plain, err := Open(ctx, Options{Location: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { plain.Close() })
		if _, _, err := plain.PutZone(ctx, "example.test", &Object{Spec: json.RawMessage(testZoneSpec)}); err != nil {
			t.Fatal(err)
		}
		hook := &everyWrite{backend: plain.b}
		return &Store{b: hook, opts: plain.opts, boundedTxn: true}, hook, plain
	}

	t.Run("a chunk written again", func(t *testing.T) {
		s, hook, other := open(t)
		hook.n = 1 // after the first chunk, service s200 is written meanwhile, once
		hook.other = func() {
			hook.other = nil
			if _, _, err := other.PutService(ctx, "example.test", "s200", &Object{Spec: batchSpec(9)}); err != nil {
				t.Fatal(err)
			}
		}
		res, err := s.PutServices(ctx, "example.test", batchItems(300))
		if err != nil {
			t.Fatal(err)
		}
		if res.Created != 299 || res.Configured != 1 || res.Transactions != 3 {
			t.Errorf("%+v, want 299 created, s200 configured, in 3 transactions", res)
		}
		o, err := other.GetService(ctx, "example.test", "s200", "")
		if err != nil || string(o.Spec) != string(batchSpec(200)) {
			t.Errorf("s200 is %s (%v), want the batch's", o.Spec, err)
		}
		l, err := other.ListServices(ctx, "example.test", ListOptions{})
		if err != nil || len(l.Items) != 300 {
			t.Errorf("%d services stored (%v), want 300", len(l.Items), err)
		}
	})

	t.Run("given up", func(t *testing.T) {
		s, hook, other := open(t)
		hook.n = 1 // before every chunk after the first, the zone changes
		ttl := 30
		hook.other = func() {
			ttl++
			if _, _, err := other.PutZone(ctx, "example.test", &Object{Spec: json.RawMessage(strings.Replace(testZoneSpec, `"30s"`, fmt.Sprintf(`"%ds"`, ttl), 1))}); err != nil {
				t.Fatal(err)
			}
		}
		_, err := s.PutServices(ctx, "example.test", batchItems(300))
		var e *Error
		if !errors.As(err, &e) || e.Code != http.StatusConflict || e.Stored == nil {
			t.Fatalf("got %v, want a conflict saying what was stored", err)
		}
		if e.Stored.Created != 126 || e.Stored.Transactions != 1 || !strings.Contains(e.Message, "126 items of the batch were stored") {
			t.Errorf("stored %+v: %s", e.Stored, e.Message)
		}
		l, err := other.ListServices(ctx, "example.test", ListOptions{})
		if err != nil || len(l.Items) != 126 || l.Items[0].Metadata.ResourceVersion != e.Stored.ResourceVersion {
			t.Errorf("%d services stored (%v), want the first chunk's 126 at %s", len(l.Items), err, e.Stored.ResourceVersion)
		}
	})
}

// TestSnapshotPages: a snapshot of more objects than a page reads
// (1 000) has every object once, in key order, with its spec, none that
// was deleted, and the revision it was read at; on each backend.
func TestSnapshotPages(t *testing.T) {
	eachBackend(t, snapshotPages)
}

// eachBackend runs test on an embedded store, and on etcd with and
// without the store's cache when etcd is there (internal/etcdtest).
func eachBackend(t *testing.T, test func(*testing.T, *Store)) {
	for _, kind := range []string{"embedded", "etcd", "etcd without cache"} {
		t.Run(kind, func(t *testing.T) {
			var s *Store
			if kind == "embedded" {
				var err error
				if s, err = Open(context.Background(), Options{Location: t.TempDir()}); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { s.Close() })
			} else {
				s = openEtcdStore(t, etcdtest.Start(t), kind != "etcd")
			}
			test(t, s)
		})
	}
}

func snapshotPages(t *testing.T, s *Store) {
	ctx := context.Background()
	for _, zone := range []string{"a.test", "example.test"} {
		if _, _, err := s.PutZone(ctx, zone, &Object{Spec: json.RawMessage(testZoneSpec)}); err != nil {
			t.Fatal(err)
		}
	}
	const n = 2500
	if _, err := s.PutServices(ctx, "example.test", batchItems(n)); err != nil {
		t.Fatal(err)
	}
	deleted := map[string]bool{}
	for _, i := range []int{0, 999, 1000, 2499} {
		name := fmt.Sprintf("s%d", i)
		if _, err := s.DeleteService(ctx, "example.test", name, ""); err != nil {
			t.Fatal(err)
		}
		deleted[name] = true
	}
	rev, err := s.Revision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	items, at, err := s.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if at != rev {
		t.Errorf("read at revision %d, the store is at %d", at, rev)
	}
	zones, last := 0, ""
	seen := map[string]bool{}
	for _, it := range items {
		switch it.Kind {
		case KindZone:
			zones++
		case KindService:
			if it.Name <= last {
				t.Fatalf("service %s after %s: not in key order", it.Name, last)
			}
			last = it.Name
			var i int
			if _, err := fmt.Sscanf(it.Name, "s%d", &i); err != nil || deleted[it.Name] || seen[it.Name] {
				t.Fatalf("service %q: deleted, seen twice or never written", it.Name)
			}
			seen[it.Name] = true
			if string(it.Spec) != string(batchSpec(i)) {
				t.Fatalf("service %s: spec %s, wrote %s", it.Name, it.Spec, batchSpec(i))
			}
		}
	}
	if zones != 2 || len(seen) != n-len(deleted) {
		t.Fatalf("%d zones and %d services in the snapshot, want 2 and %d", zones, len(seen), n-len(deleted))
	}
}

// TestServicesAtHistory: the services of a zone as they were at a
// revision, read whole (past fewServices names, or none given) and one
// by one: the version of that revision with its spec, none deleted by
// then, none of another zone or whose name only begins with a name
// asked; a compacted revision is ErrCompacted. On the embedded store and
// on etcd (its cache and etcd itself).
func TestServicesAtHistory(t *testing.T) {
	eachBackend(t, servicesAt)
}

func servicesAt(t *testing.T, s *Store) {
	ctx := context.Background()
	for _, zone := range []string{"example.test", "other.test"} {
		if _, _, err := s.PutZone(ctx, zone, &Object{Spec: json.RawMessage(testZoneSpec)}); err != nil {
			t.Fatal(err)
		}
	}
	put := func(zone, name string, i int) {
		t.Helper()
		if _, _, err := s.PutService(ctx, zone, name, &Object{Spec: batchSpec(i)}); err != nil {
			t.Fatal(err)
		}
	}
	put("example.test", "a", 1)
	put("example.test", "ab", 2)
	put("example.test", "b", 3)
	put("other.test", "a", 4)
	at, err := s.Revision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	put("example.test", "a", 5) // after at: not what is read
	if _, err := s.DeleteService(ctx, "example.test", "b", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := s.DeleteService(ctx, "example.test", "a", ""); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"a": string(batchSpec(1)), "ab": string(batchSpec(2)), "b": string(batchSpec(3))}
	for _, names := range [][]string{nil, {"a", "ab", "b", "c"}, make([]string, fewServices+1)} {
		items, err := s.ServicesAt(ctx, "example.test", names, at)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for _, it := range items {
			if it.Kind != KindService || it.Zone != "example.test" || it.Rev > at {
				t.Errorf("read %+v at revision %d", it, at)
			}
			got[it.Name] = string(it.Spec)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%d names: read %v, want %v", len(names), got, want)
		}
	}
	// "a" alone, after it was deleted: nothing, not "ab".
	now, _ := s.Revision(ctx)
	if items, err := s.ServicesAt(ctx, "example.test", []string{"a"}, now); err != nil || len(items) != 0 {
		t.Errorf("a deleted service: %v, %v; want nothing", items, err)
	}
	if err := s.Compact(ctx, now); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ServicesAt(ctx, "example.test", nil, at); !errors.Is(err, ErrCompacted) {
		t.Errorf("a compacted revision: %v, want ErrCompacted", err)
	}
	if _, err := s.ServicesAt(ctx, "example.test", []string{"a"}, at); !errors.Is(err, ErrCompacted) {
		t.Errorf("a compacted revision, one name: %v, want ErrCompacted", err)
	}
}
