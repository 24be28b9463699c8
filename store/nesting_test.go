package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/grpc-config-dns/grpc-config-dns/internal/etcdtest"
)

// beforeWrite is a backend that lets another writer in just before its
// next transaction: after the write has read and checked the store,
// before it commits.
type beforeWrite struct {
	backend
	other func()
}

func (b *beforeWrite) txn(ctx context.Context, t *txn) (txnResult, error) {
	if f := b.other; f != nil {
		b.other = nil
		f()
	}
	return b.backend.txn(ctx, t)
}

// isNested checks that err is the 422 of zone inner inside zone outer.
func isNested(t *testing.T, err error, inner, outer string) {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) || e.Code != http.StatusUnprocessableEntity || len(e.Diagnostics) != 1 {
		t.Fatalf("got %v, want a 422 with the zone-nested diagnostic", err)
	}
	d := e.Diagnostics[0]
	if d.Code != "zone-nested" || d.Path != "/metadata/name" || !strings.HasPrefix(d.Message, fmt.Sprintf("zone %s lies inside zone %s (stored, version ", inner, outer)) {
		t.Errorf("diagnostic %+v, want zone-nested: zone %s lies inside zone %s", d, inner, outer)
	}
}

// TestNestedZoneCreatedMeanwhile: a zone created by another writer (or
// replica) between a zone write's check and its commit makes the commit
// fail, and the write, tried again, is refused: the transaction compares
// the zones the check read.
func TestNestedZoneCreatedMeanwhile(t *testing.T) {
	ctx := context.Background()
	zone := &Object{Spec: json.RawMessage(testZoneSpec)}
	// pair opens two writers on one store: a, whose writes let b in first.
	type pair func(t *testing.T) (a *Store, hook *beforeWrite, b *Store)
	pairs := map[string]pair{
		"embedded": func(t *testing.T) (*Store, *beforeWrite, *Store) {
			b, err := Open(ctx, Options{Location: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { b.Close() })
			hook := &beforeWrite{backend: b.b}
			return &Store{b: hook, opts: b.opts}, hook, b
		},
		"etcd": func(t *testing.T) (*Store, *beforeWrite, *Store) {
			e := etcdtest.Start(t)
			loc := e.Location(fmt.Sprintf("n%d", time.Now().UnixNano()))
			var s [2]*Store
			for i := range s {
				var err error
				if s[i], err = Open(ctx, Options{Location: loc}); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { s[i].Close() })
			}
			hook := &beforeWrite{backend: s[0].b}
			return &Store{b: hook, opts: s[0].opts}, hook, s[1]
		},
	}
	for name, open := range pairs {
		t.Run(name, func(t *testing.T) {
			a, hook, b := open(t)
			for _, c := range []struct{ mine, theirs, inner, outer string }{
				{"in.one.test", "one.test", "in.one.test.", "one.test."},
				{"two.test", "in.two.test", "in.two.test.", "two.test."},
			} {
				hook.other = func() {
					if _, _, err := b.PutZone(ctx, c.theirs, zone); err != nil {
						t.Errorf("the other writer: %v", err)
					}
				}
				_, _, err := a.PutZone(ctx, c.mine, zone)
				isNested(t, err, c.inner, c.outer)
				if _, err := b.GetZone(ctx, c.mine, ""); err == nil {
					t.Errorf("zone %s was stored inside or around %s", c.mine, c.theirs)
				}
			}
			// A zone beside the one created meanwhile is stored.
			hook.other = func() { b.PutZone(ctx, "three.test", zone) }
			if _, created, err := a.PutZone(ctx, "four.test", zone); err != nil || !created {
				t.Errorf("a zone beside another created meanwhile: %v", err)
			}
		})
	}
}

// TestNestedZonesStoredBefore: zones that nest, stored before the store
// refused them (or by an older replica), can be deleted but not replaced,
// and the root zone holds every other.
func TestNestedZonesStoredBefore(t *testing.T) {
	ctx := context.Background()
	s := openZone(t) // example.test
	v, _ := json.Marshal(stored{Metadata: storedMeta{Name: "sub.example.test"}, Spec: json.RawMessage(testZoneSpec)})
	if res, err := s.b.txn(ctx, &txn{puts: []kvPut{{zoneKey("sub.example.test"), v}, {markerKey("sub.example.test"), nil}}}); err != nil || !res.ok {
		t.Fatal(err)
	}
	_, _, err := s.PutZone(ctx, "sub.example.test", &Object{Spec: json.RawMessage(`{"ttl":"60s","nameservers":[{"name":"ns1","addresses":["192.0.2.53"]}]}`)})
	isNested(t, err, "sub.example.test.", "example.test.")
	_, _, err = s.PutZone(ctx, ".", &Object{Spec: json.RawMessage(testZoneSpec)})
	isNested(t, err, "example.test.", ".")
	if _, err := s.DeleteZone(ctx, "sub.example.test", ""); err != nil {
		t.Fatal(err)
	}
	if _, created, err := s.PutZone(ctx, "other.test", &Object{Spec: json.RawMessage(testZoneSpec)}); err != nil || !created {
		t.Errorf("a zone beside: %v", err)
	}
}
