package api_test

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/grpc-config-dns/grpc-config-dns/internal/etcdtest"
	"github.com/grpc-config-dns/grpc-config-dns/store"
)

// nested checks that r is the 422 a zone PUT gets when it would nest
// zones: the zone-nested diagnostic of a config, naming both zones, at
// the zone's name.
func nested(t *testing.T, r response, inner, outer string) {
	t.Helper()
	if r.code != http.StatusUnprocessableEntity {
		t.Fatalf("got %d, want 422 zone-nested: %s", r.code, r.body)
	}
	e := r.err(t)
	if e.Reason != store.ReasonInvalid || len(e.Diagnostics) != 1 {
		t.Fatalf("want Invalid with one diagnostic: %s", r.body)
	}
	d := e.Diagnostics[0]
	want := fmt.Sprintf("zone %s lies inside zone %s", inner, outer)
	if d.Code != "zone-nested" || d.Severity != "error" || d.Path != "/metadata/name" ||
		!strings.Contains(d.Message, want) || !strings.Contains(d.Message, "serve its names as services of "+outer) {
		t.Errorf("diagnostic %+v, want zone-nested at /metadata/name saying %q", d, want)
	}
}

// zoneNames lists the zones of the store, by name.
func (s *server) zoneNames() string {
	s.t.Helper()
	var names []string
	for _, it := range s.must(200, "GET", "/v1/zones", nil).list(s.t).Items {
		names = append(names, it.Metadata.Name)
	}
	return strings.Join(names, ",")
}

// TestNestedZones: a zone inside another, or holding another, is refused
// (422, the zone-nested diagnostic of a config, nothing stored) in
// whichever order they come; a zone beside another is not.
func TestNestedZones(t *testing.T) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			srv := serve(t, b.open(t, store.Options{}))
			srv.must(201, "PUT", "/v1/zones/test", obj(zoneSpec, ""))
			before := srv.must(200, "GET", "/v1/zones", nil).list(t).Metadata.ResourceVersion
			nested(t, srv.do("PUT", "/v1/zones/example.test", obj(zoneSpec, "")), "example.test.", "test.")
			nested(t, srv.do("PUT", "/v1/zones/Sub.Example.test.", obj(zoneSpec, "")), "sub.example.test.", "test.")
			l := srv.must(200, "GET", "/v1/zones", nil).list(t)
			if l.Metadata.ResourceVersion != before || len(l.Items) != 1 {
				t.Errorf("refused zones were stored: %d zones at version %s, was %s", len(l.Items), l.Metadata.ResourceVersion, before)
			}
			// Replacing the zone is no nesting.
			srv.must(200, "PUT", "/v1/zones/test", obj(`{"ttl":"60s","nameservers":[{"name":"ns1","addresses":["192.0.2.53"]}]}`, ""))

			// The other way round: the innermost first.
			srv.must(200, "DELETE", "/v1/zones/test", nil)
			srv.must(201, "PUT", "/v1/zones/sub.example.test", obj(zoneSpec, ""))
			nested(t, srv.do("PUT", "/v1/zones/example.test", obj(zoneSpec, "")), "sub.example.test.", "example.test.")
			nested(t, srv.do("PUT", "/v1/zones/test", obj(zoneSpec, "")), "sub.example.test.", "test.")
			// Beside it: a sibling, a name that only ends the same way.
			srv.must(201, "PUT", "/v1/zones/other.example.test", obj(zoneSpec, ""))
			srv.must(201, "PUT", "/v1/zones/b-sub.example.test", obj(zoneSpec, ""))
			if got := srv.zoneNames(); got != "b-sub.example.test,other.example.test,sub.example.test" {
				t.Errorf("zones %s", got)
			}
		})
	}
}

// TestNestedZonesRace: two writers create a zone and a zone inside it at
// once, through two replicas on one etcd (through one embedded store):
// never both. The store checks the zones it read inside the write's
// transaction, not only before it.
func TestNestedZonesRace(t *testing.T) {
	race := func(t *testing.T, a, b *server) {
		for i := range 20 {
			outer := fmt.Sprintf("z%d.test", i)
			inner := "in." + outer
			if i%2 == 1 {
				a, b = b, a
			}
			var ra, rb response
			var wg sync.WaitGroup
			start := make(chan struct{})
			wg.Add(2)
			go func() { defer wg.Done(); <-start; ra = a.do("PUT", "/v1/zones/"+outer, obj(zoneSpec, "")) }()
			go func() { defer wg.Done(); <-start; rb = b.do("PUT", "/v1/zones/"+inner, obj(zoneSpec, "")) }()
			close(start)
			wg.Wait()
			switch {
			case ra.code == 201 && rb.code == 201:
				t.Fatalf("round %d: both %s and %s were created", i, outer, inner)
			case ra.code == 201:
				nested(t, rb, inner+".", outer+".")
			case rb.code == 201:
				nested(t, ra, inner+".", outer+".")
			default:
				t.Fatalf("round %d: neither was created: %d %s, %d %s", i, ra.code, ra.body, rb.code, rb.body)
			}
		}
		if n := len(a.must(200, "GET", "/v1/zones", nil).list(t).Items); n != 20 {
			t.Errorf("%d zones stored, want 20", n)
		}
	}
	t.Run("embedded", func(t *testing.T) {
		s := openStore(t, store.Options{Location: t.TempDir()})
		race(t, serve(t, s), serve(t, s))
	})
	t.Run("etcd", func(t *testing.T) {
		e := etcdtest.Start(t)
		loc := e.Location("nested")
		race(t, serve(t, openStore(t, store.Options{Location: loc})), serve(t, openStore(t, store.Options{Location: loc})))
	})
}
