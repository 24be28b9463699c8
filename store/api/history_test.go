package api_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/grpc-config-dns/grpc-config-dns/store"
)

// TestHistory: GET …/history answers the versions of a zone, a service
// or a policy the store holds, newest first, each as it was; back to the
// creation, or marked truncated where older versions were compacted.
func TestHistory(t *testing.T) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			s := serve(t, b.open(t, store.Options{History: 1000}))
			s.putZone("example.test")
			var rvs []int64
			for i := range 3 {
				rvs = append(rvs, s.putService("example.test", "echo", svcSpec(i)))
			}
			s.putService("example.test", "echo2", svcSpec(9)) // a neighbour by prefix
			var h store.History
			r := s.must(200, "GET", "/v1/zones/example.test/services/echo/history", nil)
			decodeJSON(t, r.body, &h)
			if h.Kind != "ServiceHistory" || len(h.Items) != 3 || h.Truncated {
				t.Fatalf("history: %s", r.body)
			}
			for i, o := range h.Items {
				want := rvs[len(rvs)-1-i]
				if rvOf(t, o.Metadata.ResourceVersion) != want || !strings.Contains(string(o.Spec), svcSpec(len(rvs) - 1 - i)[15:26]) {
					t.Errorf("item %d: version %s %s, want version %d", i, o.Metadata.ResourceVersion, o.Spec, want)
				}
				if at, err := time.Parse(time.RFC3339, o.Metadata.Annotations[store.WrittenAt]); err != nil || time.Since(at) > time.Minute {
					t.Errorf("item %d: written at %q", i, o.Metadata.Annotations[store.WrittenAt])
				}
			}
			decodeJSON(t, s.must(200, "GET", "/v1/zones/example.test/services/echo/history?limit=2", nil).body, &h)
			if len(h.Items) != 2 {
				t.Errorf("limit=2: %d items", len(h.Items))
			}
			decodeJSON(t, s.must(200, "GET", "/v1/zones/example.test/history", nil).body, &h)
			if h.Kind != "ZoneHistory" || len(h.Items) != 1 {
				t.Errorf("zone history: %+v", h)
			}
			s.must(201, "PUT", "/v1/zones/example.test/policies/retries", obj(retries, ""))
			decodeJSON(t, s.must(200, "GET", "/v1/zones/example.test/policies/retries/history", nil).body, &h)
			if h.Kind != "PolicyHistory" || len(h.Items) != 1 || h.Items[0].Kind != "Policy" {
				t.Errorf("policy history: %+v", h)
			}
			s.must(404, "GET", "/v1/zones/example.test/services/nope/history", nil)
			s.must(400, "GET", "/v1/zones/example.test/services/echo/history?limit=x", nil)
			s.must(400, "GET", "/v1/zones/example.test/services/echo/history?resourceVersion=1", nil)
		})
	}
}

// TestHistoryTruncated: versions older than the store keeps are not
// answered, and the history says so.
func TestHistoryTruncated(t *testing.T) {
	st := openStore(t, store.Options{Location: t.TempDir(), History: 3})
	s := serve(t, st)
	s.putZone("example.test")
	for i := range 10 {
		s.putService("example.test", "echo", svcSpec(i))
	}
	var h store.History
	decodeJSON(t, s.must(200, "GET", "/v1/zones/example.test/services/echo/history", nil).body, &h)
	if !h.Truncated || len(h.Items) == 0 || len(h.Items) > 4 {
		t.Errorf("with 3 revisions kept: %d items, truncated %v", len(h.Items), h.Truncated)
	}
}

func decodeJSON(t *testing.T, b []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
}
