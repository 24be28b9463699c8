package api_test

import (
	"strings"
	"testing"

	"github.com/grpc-config-dns/grpc-config-dns/store"
)

// TestAnnotations: an object's metadata.annotations are stored as given
// and answered by GET, list, history (beside grpc-config-dns/written-at,
// which the store says itself: one given is not stored) and watch; a
// write that changes only an annotation is a new version; too large ones
// are refused.
func TestAnnotations(t *testing.T) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			s := serve(t, b.open(t, store.Options{History: 1000}))
			s.putZone("example.test")
			put := func(code int, src string) *store.Object {
				t.Helper()
				o := obj(svcSpec(1), "")
				o["metadata"].(map[string]any)["annotations"] = map[string]string{"grpc-config-dns/source": src, store.WrittenAt: "2000-01-01T00:00:00Z"}
				return s.must(code, "PUT", "/v1/zones/example.test/services/echo", o).object(t)
			}
			check := func(what string, o *store.Object, src string) {
				t.Helper()
				if got := o.Metadata.Annotations["grpc-config-dns/source"]; got != src {
					t.Errorf("%s: source %q, want %q", what, got, src)
				}
				if at := o.Metadata.Annotations[store.WrittenAt]; at == "2000-01-01T00:00:00Z" {
					t.Errorf("%s: the written-at given was stored", what)
				}
			}
			check("PUT", put(201, "a.yaml:5"), "a.yaml:5")
			check("GET", s.must(200, "GET", "/v1/zones/example.test/services/echo", nil).object(t), "a.yaml:5")
			again := put(200, "a.yaml:5")
			check("PUT again", again, "a.yaml:5")
			moved := put(200, "a.yaml:9")
			if rvOf(t, moved.Metadata.ResourceVersion) <= rvOf(t, again.Metadata.ResourceVersion) {
				t.Errorf("a changed annotation is no new version: %s then %s", again.Metadata.ResourceVersion, moved.Metadata.ResourceVersion)
			}
			if l := s.must(200, "GET", "/v1/zones/example.test/services", nil).list(t); len(l.Items) != 1 {
				t.Fatalf("list: %d items", len(l.Items))
			} else {
				check("list", l.Items[0], "a.yaml:9")
			}
			var h store.History
			decodeJSON(t, s.must(200, "GET", "/v1/zones/example.test/services/echo/history", nil).body, &h)
			if len(h.Items) != 2 || h.Items[0].Metadata.Annotations[store.WrittenAt] == "" {
				t.Fatalf("history: %+v", h.Items)
			}
			check("history 0", h.Items[0], "a.yaml:9")
			check("history 1", h.Items[1], "a.yaml:5")
			w, _ := s.watch("/v1/zones/example.test/services?watch=true")
			defer w.cancel()
			if typ, o := w.next(); typ != store.Added {
				t.Errorf("watch: %s", typ)
			} else {
				check("watch", o, "a.yaml:9")
			}
			big := obj(svcSpec(1), "")
			big["metadata"].(map[string]any)["annotations"] = map[string]string{"x": strings.Repeat("a", 300<<10)}
			if e := s.must(400, "PUT", "/v1/zones/example.test/services/echo", big).err(t); !strings.Contains(e.Message, "annotations") {
				t.Errorf("too large: %s", e.Message)
			}
			s.must(200, "PUT", "/v1/zones/example.test/services/echo", obj(svcSpec(1), ""))
			if o := s.must(200, "GET", "/v1/zones/example.test/services/echo", nil).object(t); o.Metadata.Annotations != nil {
				t.Errorf("a PUT without annotations keeps %v", o.Metadata.Annotations)
			}
		})
	}
}
