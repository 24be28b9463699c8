package api_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/grpc-config-dns/grpc-config-dns/store"
)

// TestPatch: PATCH with a JSON merge patch (RFC 7386) or a JSON patch
// (RFC 6902) writes the patched object as a PUT would, validation and
// preconditions included; patches without a resourceVersion that race
// each other all land.
func TestPatch(t *testing.T) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) { patch(t, serve(t, b.open(t, store.Options{}))) })
	}
}

func patch(t *testing.T, s *server) {
	s.putZone("example.test")
	rv := s.putService("example.test", "echo", svcSpec(1))
	const path = "/v1/zones/example.test/services/echo"
	const merge, jsonp = "application/merge-patch+json", "application/json-patch+json"

	r := s.doType("PATCH", path, merge, `{"metadata":{"labels":{"team":"a"}},"spec":{"port":8443}}`)
	o := r.object(t)
	if r.code != 200 || o.Metadata.Labels["team"] != "a" || !strings.Contains(string(o.Spec), `"port":8443`) || !strings.Contains(string(o.Spec), `"192.0.2.2"`) {
		t.Fatalf("merge patch: %d %s", r.code, r.body)
	}
	if got := s.must(200, "GET", path, nil).object(t); got.Metadata.ResourceVersion != o.Metadata.ResourceVersion || got.Metadata.Labels["team"] != "a" {
		t.Errorf("stored: %+v", got.Metadata)
	}
	// RFC 7386: null removes a member.
	if r := s.doType("PATCH", path, merge, `{"spec":{"port":null}}`); r.code != 200 || strings.Contains(string(r.object(t).Spec), "port") {
		t.Errorf("merge patch removing port: %d %s", r.code, r.body)
	}
	// RFC 6902, with a test of the version: a precondition.
	cur := s.must(200, "GET", path, nil).object(t).Metadata.ResourceVersion
	if r := s.doType("PATCH", path, jsonp, fmt.Sprintf(`[{"op":"test","path":"/metadata/resourceVersion","value":"%d"},{"op":"add","path":"/spec/port","value":9000}]`, rv)); r.code != 409 {
		t.Errorf("a JSON patch testing a stale version: %d %s", r.code, r.body)
	}
	if r := s.doType("PATCH", path, jsonp, `[{"op":"test","path":"/metadata/resourceVersion","value":"`+cur+`"},{"op":"add","path":"/spec/port","value":9000}]`); r.code != 200 || !strings.Contains(string(r.body), `"port":9000`) {
		t.Errorf("a JSON patch testing the current version: %d %s", r.code, r.body)
	}
	// A merge patch naming a stale version is refused.
	if r := s.doType("PATCH", path, merge, fmt.Sprintf(`{"metadata":{"resourceVersion":"%d"},"spec":{"port":1}}`, rv)); r.code != 409 {
		t.Errorf("a merge patch with a stale version: %d %s", r.code, r.body)
	}
	for _, c := range []struct {
		ctype, body string
		code        int
		want        string
	}{
		{"application/strategic-merge-patch+json", `{"spec":{}}`, 415, "merge-patch+json"},
		{"application/json", `{"spec":{}}`, 415, "RFC 7386"},
		{merge, `{"spec":{"addresses":["not an address"]}}`, 422, "invalid"},
		{merge, `{"spec":`, 400, "merge patch"},
		{jsonp, `{"op":"add"}`, 400, "JSON patch"},
		{jsonp, `[{"op":"remove","path":"/spec/nothing"}]`, 422, "does not apply"},
		{merge, `{"metadata":{"name":"other"}}`, 400, "metadata.name"},
	} {
		r := s.doType("PATCH", path, c.ctype, c.body)
		if r.code != c.code || !strings.Contains(string(r.body), c.want) {
			t.Errorf("PATCH %s %s: %d %s, want %d saying %q", c.ctype, c.body, r.code, r.body, c.code, c.want)
		}
	}
	if r := s.doType("PATCH", "/v1/zones/example.test/services/nope", merge, `{}`); r.code != 404 {
		t.Errorf("PATCH of a missing service: %d %s", r.code, r.body)
	}
	// Zones and policies too.
	if r := s.doType("PATCH", "/v1/zones/example.test", jsonp, `[{"op":"replace","path":"/spec/ttl","value":"60s"}]`); r.code != 200 || !strings.Contains(string(r.body), `"60s"`) {
		t.Errorf("PATCH of a zone: %d %s", r.code, r.body)
	}
	s.must(201, "PUT", "/v1/zones/example.test/policies/retries", obj(retries, ""))
	if r := s.doType("PATCH", "/v1/zones/example.test/policies/retries", merge, `{"metadata":{"labels":{"owner":"sre"}}}`); r.code != 200 || r.object(t).Kind != "Policy" {
		t.Errorf("PATCH of a policy: %d %s", r.code, r.body)
	}
	// Racing patches without a version all land.
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if r := s.doType("PATCH", path, merge, fmt.Sprintf(`{"metadata":{"labels":{"k%d":"v"}}}`, i)); r.code != 200 {
				t.Errorf("racing patch %d: %d %s", i, r.code, r.body)
			}
		}()
	}
	wg.Wait()
	if got := s.must(200, "GET", path, nil).object(t); len(got.Metadata.Labels) != 17 {
		t.Errorf("after 16 racing patches, labels %v", got.Metadata.Labels)
	}
}
