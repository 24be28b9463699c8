package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/grpc-config-dns/grpc-config-dns/store"
)

// TestConformance checks every rule of "Consistent Resource Version
// Semantics for List" (and of watches) against the real HTTP server, on
// both backends.
func TestConformance(t *testing.T) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			s := b.open(t, store.Options{History: 1000, BookmarkInterval: 200 * time.Millisecond})
			conformance(t, serve(t, s))
		})
	}
}

const services = "/v1/zones/example.test/services"

func conformance(t *testing.T, srv *server) {
	srv.putZone("example.test")
	var r0 int64
	for i := range 5 {
		r0 = srv.putService("example.test", fmt.Sprintf("s%d", i), svcSpec(i))
	}
	// s1 changes after r0: data at r0 and at the latest differ.
	r1 := srv.putService("example.test", "s1", svcSpec(11))
	if r1 <= r0 {
		t.Fatalf("revisions do not increase: %d then %d", r0, r1)
	}
	s1At := func(l *store.List) string {
		for _, it := range l.Items {
			if it.Metadata.Name == "s1" {
				return it.Metadata.ResourceVersion
			}
		}
		return ""
	}
	latest := func(l *store.List) {
		t.Helper()
		if rv := rvOf(t, l.Metadata.ResourceVersion); rv < r1 {
			t.Errorf("list at %d, older than the last write %d", rv, r1)
		}
		if got := s1At(l); got != fmt.Sprint(r1) {
			t.Errorf("s1 at version %s, want the latest %d", got, r1)
		}
	}
	exactR0 := func(l *store.List) {
		t.Helper()
		if rv := rvOf(t, l.Metadata.ResourceVersion); rv != r0 {
			t.Errorf("list at %d, want exactly %d", rv, r0)
		}
		if got := s1At(l); rvOf(t, got) > r0 {
			t.Errorf("s1 at version %s, newer than the list's %d", got, r0)
		}
	}
	notOlder := func(l *store.List) {
		t.Helper()
		if rv := rvOf(t, l.Metadata.ResourceVersion); rv < r0 {
			t.Errorf("list at %d, older than %d", rv, r0)
		}
	}
	type row struct {
		name  string
		query string
		code  int
		check func(*store.List)
		pages int // > 0: follow continue tokens; this many pages, all at one version
	}
	R0, future := fmt.Sprint(r0), fmt.Sprint(r1+1000)
	rows := []row{
		{"unset: the latest, consistent", "", 200, latest, 1},
		{"unset with limit: pages of the latest", "limit=2", 200, latest, 3},
		{"legacy 0: any version", "resourceVersion=0", 200, notOlder, 1},
		{"legacy 0 with limit: any version", "resourceVersion=0&limit=2", 200, notOlder, 3},
		{"legacy N without limit: NotOlderThan", "resourceVersion=" + R0, 200, notOlder, 1},
		{"legacy N with limit: Exact", "resourceVersion=" + R0 + "&limit=2", 200, exactR0, 3},
		{"NotOlderThan N", "resourceVersion=" + R0 + "&resourceVersionMatch=NotOlderThan", 200, notOlder, 1},
		{"NotOlderThan N with limit", "resourceVersion=" + R0 + "&resourceVersionMatch=NotOlderThan&limit=2", 200, notOlder, 3},
		{"NotOlderThan 0: any", "resourceVersion=0&resourceVersionMatch=NotOlderThan", 200, notOlder, 1},
		{"Exact N", "resourceVersion=" + R0 + "&resourceVersionMatch=Exact", 200, exactR0, 1},
		{"Exact N with limit", "resourceVersion=" + R0 + "&resourceVersionMatch=Exact&limit=2", 200, exactR0, 3},
		{"Exact 0 is invalid", "resourceVersion=0&resourceVersionMatch=Exact", 400, nil, 0},
		{"Exact without resourceVersion", "resourceVersionMatch=Exact", 400, nil, 0},
		{"NotOlderThan without resourceVersion", "resourceVersionMatch=NotOlderThan", 400, nil, 0},
		{"unknown match", "resourceVersion=1&resourceVersionMatch=Newest", 400, nil, 0},
		{"resourceVersion not a number", "resourceVersion=abc", 400, nil, 0},
		{"negative limit", "limit=-1", 400, nil, 0},
		{"bad continue token", "continue=xyz", 400, nil, 0},
		{"NotOlderThan a future version: timeout", "resourceVersion=" + future + "&resourceVersionMatch=NotOlderThan", 504, nil, 0},
		{"Exact a future version: timeout", "resourceVersion=" + future + "&resourceVersionMatch=Exact", 504, nil, 0},
		{"legacy future version: timeout", "resourceVersion=" + future, 504, nil, 0},
	}
	for _, rw := range rows {
		t.Run(rw.name, func(t *testing.T) {
			r := srv.do("GET", services+"?"+rw.query, nil)
			if r.code != rw.code {
				t.Fatalf("got %d, want %d: %s", r.code, rw.code, r.body)
			}
			if rw.code != 200 {
				e := r.err(t)
				if e.Message == "" || e.Reason == "" {
					t.Errorf("error without reason or message: %s", r.body)
				}
				return
			}
			l := r.list(t)
			all := &store.List{Metadata: l.Metadata, Items: l.Items}
			pages := 1
			for l.Metadata.Continue != "" {
				r := srv.must(200, "GET", services+"?limit=2&continue="+url.QueryEscape(l.Metadata.Continue), nil)
				next := r.list(t)
				if next.Metadata.ResourceVersion != all.Metadata.ResourceVersion {
					t.Errorf("page %d at %s, the first at %s", pages+1, next.Metadata.ResourceVersion, all.Metadata.ResourceVersion)
				}
				all.Items = append(all.Items, next.Items...)
				l = next
				pages++
			}
			if pages != rw.pages {
				t.Errorf("%d pages, want %d", pages, rw.pages)
			}
			if len(all.Items) != 5 {
				t.Errorf("%d items, want 5", len(all.Items))
			}
			for i, it := range all.Items {
				if want := fmt.Sprintf("s%d", i); it.Metadata.Name != want || it.Metadata.Zone != "example.test" {
					t.Errorf("item %d is %s/%s, want example.test/%s", i, it.Metadata.Zone, it.Metadata.Name, want)
				}
			}
			rw.check(all)
		})
	}

	t.Run("continue with resourceVersion or match", func(t *testing.T) {
		l := srv.must(200, "GET", services+"?limit=2", nil).list(t)
		c := url.QueryEscape(l.Metadata.Continue)
		srv.must(400, "GET", services+"?limit=2&continue="+c+"&resourceVersion="+l.Metadata.ResourceVersion, nil)
		srv.must(400, "GET", services+"?limit=2&continue="+c+"&resourceVersionMatch=Exact", nil)
	})

	t.Run("continue keeps the list at its version across writes", func(t *testing.T) {
		l := srv.must(200, "GET", services+"?limit=2", nil).list(t)
		at := l.Metadata.ResourceVersion
		srv.putService("example.test", "s3", svcSpec(33))
		srv.putService("example.test", "s5", svcSpec(5))
		var names []string
		for _, it := range l.Items {
			names = append(names, it.Metadata.Name)
		}
		for l.Metadata.Continue != "" {
			l = srv.must(200, "GET", services+"?limit=2&continue="+url.QueryEscape(l.Metadata.Continue), nil).list(t)
			if l.Metadata.ResourceVersion != at {
				t.Errorf("page at %s, the list at %s", l.Metadata.ResourceVersion, at)
			}
			for _, it := range l.Items {
				names = append(names, it.Metadata.Name)
				if rvOf(t, it.Metadata.ResourceVersion) > rvOf(t, at) {
					t.Errorf("%s at version %s, after the list's %s", it.Metadata.Name, it.Metadata.ResourceVersion, at)
				}
			}
		}
		if got := strings.Join(names, ","); got != "s0,s1,s2,s3,s4" {
			t.Errorf("pages hold %s, want s0..s4 as of %s", got, at)
		}
		// Unset: the latest has s5.
		if n := len(srv.must(200, "GET", services, nil).list(t).Items); n != 6 {
			t.Errorf("latest list has %d items, want 6", n)
		}
	})

	t.Run("watch from unset and 0: synthetic ADDED, then changes", func(t *testing.T) {
		for _, q := range []string{"watch=true", "watch=true&resourceVersion=0"} {
			w, r := srv.watch(services + "?" + q)
			if w == nil {
				t.Fatalf("%s: %d %s", q, r.code, r.body)
			}
			for i := range 6 {
				typ, o := w.next()
				if typ != store.Added || o.Metadata.Name != fmt.Sprintf("s%d", i) {
					t.Fatalf("%s: event %d is %s %s, want ADDED s%d", q, i, typ, o.Metadata.Name, i)
				}
			}
			typ, o := w.next()
			if typ != store.Bookmark || o.Metadata.Annotations["k8s.io/initial-events-end"] != "true" {
				t.Fatalf("%s: after the synthetic events %s %+v, want the initial-events-end BOOKMARK", q, typ, o.Metadata)
			}
			start := rvOf(t, o.Metadata.ResourceVersion)
			rv := srv.putService("example.test", "s2", svcSpec(22+len(q)))
			typ, o = w.next()
			// resourceVersion=0 may start at any recent version, but a
			// replica reads its own writes: the synthetic events hold the
			// previous write of s2, so the next event is this one.
			if typ != store.Modified || o.Metadata.Name != "s2" || rvOf(t, o.Metadata.ResourceVersion) != rv || rv <= start {
				t.Fatalf("%s: got %s %s@%s, want MODIFIED s2@%d", q, typ, o.Metadata.Name, o.Metadata.ResourceVersion, rv)
			}
			w.cancel()
		}
	})

	t.Run("watch from N: the changes after N only", func(t *testing.T) {
		n := srv.putService("example.test", "s6", svcSpec(6))
		a := srv.putService("example.test", "s7", svcSpec(7))
		m := srv.putService("example.test", "s6", svcSpec(66))
		d := rvOf(t, srv.must(200, "DELETE", services+"/s7", nil).object(t).Metadata.ResourceVersion)
		w, r := srv.watch(services + "?watch=true&resourceVersion=" + fmt.Sprint(n))
		if w == nil {
			t.Fatalf("%d %s", r.code, r.body)
		}
		for _, want := range []struct {
			typ  store.EventType
			name string
			rv   int64
		}{{store.Added, "s7", a}, {store.Modified, "s6", m}, {store.Deleted, "s7", d}} {
			typ, o := w.next()
			if typ != want.typ || o.Metadata.Name != want.name || rvOf(t, o.Metadata.ResourceVersion) != want.rv {
				t.Fatalf("got %s %s@%s, want %s %s@%d", typ, o.Metadata.Name, o.Metadata.ResourceVersion, want.typ, want.name, want.rv)
			}
		}
		w.quiet(300 * time.Millisecond)
		w.cancel()
	})

	t.Run("periodic bookmarks", func(t *testing.T) {
		w, _ := srv.watch(services + "?watch=true&resourceVersion=" + fmt.Sprint(r1))
		deadline := time.After(5 * time.Second)
		for {
			select {
			case e := <-w.events:
				if e.Type == store.Bookmark {
					if rv := rvOf(t, e.Object.(*store.Object).Metadata.ResourceVersion); rv < r1 {
						t.Fatalf("bookmark at %d, before the watch's start %d", rv, r1)
					}
					w.cancel()
					return
				}
			case <-deadline:
				t.Fatal("no BOOKMARK in 5s with a 200ms interval")
			}
		}
	})

	t.Run("compaction: Exact, continue and watch answer 410", func(t *testing.T) {
		old := srv.must(200, "GET", services+"?limit=2", nil).list(t)
		srv.putService("example.test", "s0", svcSpec(100))
		last := srv.putService("example.test", "s0", svcSpec(101))
		if err := srv.s.Compact(context.Background(), last); err != nil {
			t.Fatal(err)
		}
		for _, q := range []string{
			"resourceVersion=" + R0 + "&resourceVersionMatch=Exact",
			"resourceVersion=" + R0 + "&limit=2", // legacy Exact
			"continue=" + url.QueryEscape(old.Metadata.Continue) + "&limit=2",
		} {
			r := srv.must(410, "GET", services+"?"+q, nil)
			if e := r.err(t); e.Reason != "Gone" {
				t.Errorf("%s: reason %s, want Gone", q, e.Reason)
			}
		}
		// NotOlderThan never needs old data.
		for _, q := range []string{"resourceVersion=" + R0, "resourceVersion=" + R0 + "&resourceVersionMatch=NotOlderThan"} {
			l := srv.must(200, "GET", services+"?"+q, nil).list(t)
			if rvOf(t, l.Metadata.ResourceVersion) < last {
				t.Errorf("%s: list at %s, before the compaction at %d", q, l.Metadata.ResourceVersion, last)
			}
		}
		if _, r := srv.watch(services + "?watch=true&resourceVersion=" + R0); r.code != 410 || r.err(t).Reason != "Gone" {
			t.Errorf("watch from a compacted version: %d %s, want 410 Gone", r.code, r.body)
		}
		// The compaction point itself is still there.
		srv.must(200, "GET", services+"?resourceVersion="+fmt.Sprint(last)+"&resourceVersionMatch=Exact", nil)
	})

	objects(t, srv)
}

// objects checks single-object semantics: preconditions, validation,
// not found, zones with services.
func objects(t *testing.T, srv *server) {
	path := services + "/obj"
	t.Run("PUT creates (201) then replaces (200); an unchanged PUT writes nothing", func(t *testing.T) {
		r := srv.must(201, "PUT", path, obj(svcSpec(1), ""))
		rv := r.object(t).Metadata.ResourceVersion
		r = srv.must(200, "PUT", path, obj(svcSpec(1), ""))
		if got := r.object(t).Metadata.ResourceVersion; got != rv {
			t.Errorf("unchanged PUT made version %s, want %s kept", got, rv)
		}
		r = srv.must(200, "PUT", path, obj(svcSpec(2), rv))
		if rvOf(t, r.object(t).Metadata.ResourceVersion) <= rvOf(t, rv) {
			t.Errorf("replace did not increase the version")
		}
		g := srv.must(200, "GET", path, nil).object(t)
		if g.Metadata.ResourceVersion != r.object(t).Metadata.ResourceVersion {
			t.Errorf("GET at %s, PUT said %s", g.Metadata.ResourceVersion, r.object(t).Metadata.ResourceVersion)
		}
	})
	t.Run("stale precondition: 409, nothing changed", func(t *testing.T) {
		cur := srv.must(200, "GET", path, nil).object(t)
		r := srv.must(409, "PUT", path, obj(svcSpec(3), "1"))
		if r.err(t).Reason != "Conflict" {
			t.Errorf("reason %s", r.body)
		}
		srv.must(409, "DELETE", path+"?resourceVersion=1", nil)
		srv.must(409, "DELETE", path, `{"preconditions":{"resourceVersion":"1"}}`)
		if g := srv.must(200, "GET", path, nil).object(t); g.Metadata.ResourceVersion != cur.Metadata.ResourceVersion {
			t.Errorf("a refused write changed the object: %s → %s", cur.Metadata.ResourceVersion, g.Metadata.ResourceVersion)
		}
	})
	t.Run("invalid spec: 422 with lint's diagnostics, nothing stored", func(t *testing.T) {
		before := srv.must(200, "GET", services, nil).list(t).Metadata.ResourceVersion
		r := srv.must(422, "PUT", services+"/bad", obj(`{"serviceConfig":{"methodConfig":[{"name":[{"service":"s"}],"timeout":"1x"}]},"addresses":["300.1.1.1"]}`, ""))
		e := r.err(t)
		if e.Reason != "Invalid" || len(e.Diagnostics) < 2 {
			t.Fatalf("want Invalid with two diagnostics: %s", r.body)
		}
		codes := map[string]bool{}
		for _, d := range e.Diagnostics {
			codes[d.Code] = true
			if !strings.HasPrefix(d.Path, "/spec/") || d.Line == 0 || d.Severity != "error" {
				t.Errorf("diagnostic not placed in the spec: %+v", d)
			}
		}
		if !codes["address-syntax"] || len(codes) < 2 {
			t.Errorf("codes %v", codes)
		}
		srv.must(404, "GET", services+"/bad", nil)
		if after := srv.must(200, "GET", services, nil).list(t).Metadata.ResourceVersion; after != before {
			t.Errorf("a refused write moved the store from %s to %s", before, after)
		}
	})
	t.Run("names", func(t *testing.T) {
		srv.must(400, "PUT", services+"/bad_name!", obj(svcSpec(1), ""))
		r := srv.do("PUT", services+"/x", map[string]any{"metadata": map[string]any{"name": "y"}, "spec": json.RawMessage(svcSpec(1))})
		if r.code != 400 {
			t.Errorf("name differing from the URL: %d %s", r.code, r.body)
		}
		srv.must(404, "PUT", "/v1/zones/nozone.test/services/x", obj(svcSpec(1), ""))
		srv.must(404, "GET", services+"/nothing", nil)
		srv.must(404, "DELETE", services+"/nothing", nil)
		srv.must(400, "PUT", services+"/x", `{"metadata":{}}`)
		srv.must(400, "PUT", services+"/x", `not json`)
	})
	t.Run("zones", func(t *testing.T) {
		r := srv.must(409, "DELETE", "/v1/zones/example.test", nil)
		if !strings.Contains(r.err(t).Message, "services") {
			t.Errorf("message should say the zone has services: %s", r.body)
		}
		srv.must(422, "PUT", "/v1/zones/bad.test", obj(`{"ttl":"forever","nameservers":["ns1"]}`, ""))
		srv.must(422, "PUT", "/v1/zones/bad.test", obj(`{"nameservers":["ns1.example.net."],"services":[]}`, ""))
		srv.must(201, "PUT", "/v1/zones/empty.test", obj(`{"nameservers":["ns1.example.net."]}`, ""))
		l := srv.must(200, "GET", "/v1/zones", nil).list(t)
		if len(l.Items) != 2 {
			t.Errorf("%d zones, want 2", len(l.Items))
		}
		srv.must(200, "DELETE", "/v1/zones/empty.test", nil)
		srv.must(404, "GET", "/v1/zones/empty.test", nil)
		// A zone whose new settings would make its services invalid.
		r = srv.must(422, "PUT", "/v1/zones/example.test", obj(`{"ttl":"30s","nameservers":[{"name":"obj","addresses":["192.0.2.9"]}]}`, ""))
		if len(r.err(t).Diagnostics) == 0 {
			t.Errorf("no diagnostics: %s", r.body)
		}
	})
}
