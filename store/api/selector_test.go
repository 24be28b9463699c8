package api_test

import (
	"fmt"
	"net/url"
	"slices"
	"testing"

	"github.com/grpc-config-dns/grpc-config-dns/store"
)

// TestSelectors: labelSelector and fieldSelector on list (with limit and
// continue counting the objects selected) and on watch (an object that
// starts to match is ADDED, one that stops is DELETED), on both
// backends; a malformed selector is a 400 naming it.
func TestSelectors(t *testing.T) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			s := serve(t, b.open(t, store.Options{}))
			s.putZone("example.test")
			spec := 0
			put := func(name, team string) {
				t.Helper()
				spec++ // another config each time: every PUT is a change
				o := obj(svcSpec(spec), "")
				if team != "" {
					o["metadata"].(map[string]any)["labels"] = map[string]string{"team": team}
				}
				r := s.do("PUT", "/v1/zones/example.test/services/"+name, o)
				if r.code != 200 && r.code != 201 {
					t.Fatalf("PUT %s: %d %s", name, r.code, r.body)
				}
			}
			for i := range 7 {
				team := []string{"a", "b", ""}[i%3]
				put(fmt.Sprintf("s%d", i), team)
			}
			names := func(path string) []string {
				t.Helper()
				var out []string
				for _, o := range s.must(200, "GET", path, nil).list(t).Items {
					out = append(out, o.Metadata.Name)
				}
				return out
			}
			base := "/v1/zones/example.test/services?"
			for sel, want := range map[string][]string{
				"labelSelector=" + url.QueryEscape("team=a"):                                                            {"s0", "s3", "s6"},
				"labelSelector=" + url.QueryEscape("team!=a"):                                                           {"s1", "s2", "s4", "s5"},
				"labelSelector=" + url.QueryEscape("team in (a,b)"):                                                     {"s0", "s1", "s3", "s4", "s6"},
				"labelSelector=" + url.QueryEscape("!team"):                                                             {"s2", "s5"},
				"labelSelector=" + url.QueryEscape("team"):                                                              {"s0", "s1", "s3", "s4", "s6"},
				"fieldSelector=" + url.QueryEscape("metadata.name=s4"):                                                  {"s4"},
				"labelSelector=" + url.QueryEscape("team=a") + "&fieldSelector=" + url.QueryEscape("metadata.name!=s3"): {"s0", "s6"},
			} {
				if got := names(base + sel); !slices.Equal(got, want) {
					t.Errorf("%s: %v, want %v", sel, got, want)
				}
			}
			// Pages of two selected objects.
			var got []string
			cont := ""
			for range 5 {
				l := s.must(200, "GET", base+"labelSelector="+url.QueryEscape("team in (a,b)")+"&limit=2&continue="+url.QueryEscape(cont), nil).list(t)
				if len(l.Items) > 2 {
					t.Fatalf("a page of %d", len(l.Items))
				}
				for _, o := range l.Items {
					got = append(got, o.Metadata.Name)
				}
				if cont = l.Metadata.Continue; cont == "" {
					break
				}
			}
			if want := []string{"s0", "s1", "s3", "s4", "s6"}; !slices.Equal(got, want) {
				t.Errorf("pages: %v, want %v", got, want)
			}
			for _, bad := range []string{"labelSelector=" + url.QueryEscape("team in ("), "fieldSelector=" + url.QueryEscape("spec.x=1")} {
				if r := s.do("GET", base+bad, nil); r.code != 400 {
					t.Errorf("%s: %d %s", bad, r.code, r.body)
				}
			}
			// A watch of team=a from now: s1 joining is ADDED, s0 leaving
			// is DELETED, a change outside is not seen.
			rv := s.must(200, "GET", base+"limit=1", nil).list(t).Metadata.ResourceVersion
			w, r := s.watch(base + "watch=true&labelSelector=" + url.QueryEscape("team=a") + "&resourceVersion=" + rv)
			if w == nil {
				t.Fatalf("watch: %d %s", r.code, r.body)
			}
			put("s1", "a")
			if typ, o := w.next(); typ != store.Added || o.Metadata.Name != "s1" {
				t.Errorf("s1 joins: %s %s", typ, o.Metadata.Name)
			}
			put("s0", "b")
			if typ, o := w.next(); typ != store.Deleted || o.Metadata.Name != "s0" {
				t.Errorf("s0 leaves: %s %s", typ, o.Metadata.Name)
			}
			put("s2", "")
			put("s3", "a")
			if typ, o := w.next(); typ != store.Modified || o.Metadata.Name != "s3" {
				t.Errorf("s3 changes: %s %s", typ, o.Metadata.Name)
			}
		})
	}
}
