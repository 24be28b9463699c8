package api_test

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/grpc-config-dns/grpc-config-dns/store"
)

// TestDryRunDelete: DELETE ?dryRun=All of a service or a zone checks
// what the DELETE would (the resourceVersion precondition, a zone's
// being empty), answers with the object it would delete, and deletes
// nothing: the store's version does not move.
func TestDryRunDelete(t *testing.T) {
	s := serve(t, openStore(t, store.Options{Location: t.TempDir()}))
	s.putZone("example.test")
	rv := s.putService("example.test", "echo", svcSpec(1))
	version := func() string {
		return s.must(200, "GET", "/v1/zones/example.test/services", nil).list(t).Metadata.ResourceVersion
	}
	before := version()
	if o := s.must(200, "DELETE", "/v1/zones/example.test/services/echo?dryRun=All", nil).object(t); o.Metadata.Name != "echo" {
		t.Errorf("dry-run DELETE answered %+v", o.Metadata)
	}
	s.must(200, "GET", "/v1/zones/example.test/services/echo", nil)
	if r := s.do("DELETE", "/v1/zones/example.test/services/echo?dryRun=All&resourceVersion=1", nil); r.code != 409 {
		t.Errorf("a stale precondition: %d %s", r.code, r.body)
	}
	if r := s.do("DELETE", "/v1/zones/example.test/services/echo?dryRun=All&resourceVersion="+strconv.FormatInt(rv, 10), nil); r.code != 200 {
		t.Errorf("the current precondition: %d %s", r.code, r.body)
	}
	if r := s.do("DELETE", "/v1/zones/example.test?dryRun=All", nil); r.code != 409 {
		t.Errorf("a zone with services: %d %s", r.code, r.body)
	}
	if r := s.do("DELETE", "/v1/zones/example.test/services/nope?dryRun=All", nil); r.code != 404 {
		t.Errorf("a service that is not there: %d %s", r.code, r.body)
	}
	if r := s.do("DELETE", "/v1/zones/example.test/services/echo?dryRun=yes", nil); r.code != 400 {
		t.Errorf("dryRun=yes: %d %s", r.code, r.body)
	}
	if after := version(); after != before {
		t.Errorf("the store moved from version %s to %s", before, after)
	}
	s.must(200, "DELETE", "/v1/zones/example.test/services/echo", nil)
	if o := s.must(200, "DELETE", "/v1/zones/example.test?dryRun=All", nil).object(t); o.Metadata.Name != "example.test" {
		t.Errorf("dry-run DELETE of the empty zone: %+v", o.Metadata)
	}
	s.must(200, "GET", "/v1/zones/example.test", nil)
}

// TestDryRunEveryWrite: every write with dryRun=All (PUT, PATCH and
// DELETE of zones, services and policies, POST of a batch) answers as
// the write would, and stores nothing: the store's revision does not
// move, a watch sees no event, every object reads as before. Invalid
// writes are refused as they would be.
func TestDryRunEveryWrite(t *testing.T) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) { dryRunEveryWrite(t, serve(t, b.open(t, store.Options{}))) })
	}
}

func dryRunEveryWrite(t *testing.T, s *server) {
	s.putZone("example.test")
	s.putService("example.test", "echo", svcSpec(1))
	s.must(201, "PUT", "/v1/zones/example.test/policies/retries", obj(retries, ""))
	revision := func() string {
		return s.must(200, "GET", "/v1/zones/example.test/services", nil).list(t).Metadata.ResourceVersion
	}
	before := revision()
	snapshot := func() string {
		var b strings.Builder
		for _, p := range []string{"/v1/zones/example.test", "/v1/zones/example.test/services", "/v1/zones/example.test/policies"} {
			b.Write(s.must(200, "GET", p, nil).body)
		}
		return b.String()
	}
	was := snapshot()
	w, _ := s.watch("/v1/zones/example.test/services?watch=1&resourceVersion=" + before)
	for _, c := range []struct {
		method, path, ctype string
		body                any
		code                int
		check               func(r response)
	}{
		{"PUT", "/v1/zones/new.test", "", obj(zoneSpec, ""), 201, func(r response) {
			if o := r.object(t); o.Metadata.Name != "new.test" || o.Metadata.ResourceVersion != "" {
				t.Errorf("a new zone, dry: %+v", o.Metadata)
			}
		}},
		{"PUT", "/v1/zones/example.test", "", obj(`{"ttl":"60s","nameservers":[{"name":"ns1","addresses":["192.0.2.53"]}]}`, ""), 200, func(r response) {
			if o := r.object(t); !strings.Contains(string(o.Spec), `"60s"`) {
				t.Errorf("a changed zone, dry: %s", r.body)
			}
			// Its services' default TTL: echo's records change.
			if !strings.Contains(string(r.body), `"effect":{"services":[{"name":"echo","owner":"_grpc_config.echo.example.test."`) || !strings.Contains(string(r.body), `"ttlBefore":30,"ttlAfter":60}],"total":1}`) {
				t.Errorf("a changed zone, dry, its effect: %s", r.body)
			}
		}},
		{"PUT", "/v1/zones/example.test/services/web", "", obj(svcSpec(2), ""), 201, func(r response) {
			if !strings.Contains(string(r.body), `"published":{"owner":"_grpc_config.web.example.test."`) {
				t.Errorf("a new service, dry: %s", r.body)
			}
		}},
		{"PUT", "/v1/zones/example.test/services/echo", "", obj(`{"addresses":["192.0.2.9"]}`, "1"), 409, nil},
		{"PUT", "/v1/zones/example.test/services/echo", "", obj(`{"addresses":["nope"]}`, ""), 422, nil},
		{"PUT", "/v1/zones/example.test/policies/retries", "", obj(`{"targetRef":{"kind":"Zone"},"default":{"methodConfig":[{"name":[{"service":"s"}],"timeout":"9s"}]}}`, ""), 200, nil},
		{"PUT", "/v1/zones/example.test/policies/more", "", obj(retries, ""), 201, nil},
		{"PATCH", "/v1/zones/example.test/services/echo", "application/merge-patch+json", `{"spec":{"addresses":["192.0.2.200"]}}`, 200, func(r response) {
			if !strings.Contains(string(r.body), `"192.0.2.200"`) || !strings.Contains(string(r.body), `"published"`) {
				t.Errorf("a merge patch, dry: %s", r.body)
			}
		}},
		{"PATCH", "/v1/zones/example.test", "application/json-patch+json", `[{"op":"replace","path":"/spec/ttl","value":"90s"}]`, 200, nil},
		{"DELETE", "/v1/zones/example.test/policies/retries", "", nil, 200, func(r response) {
			if o := r.object(t); o.Kind != "Policy" || o.Metadata.Name != "retries" {
				t.Errorf("a policy's deletion, dry: %s", r.body)
			}
			// echo loses the policy's retryPolicy.
			var res struct {
				Effect store.Effect `json:"effect"`
			}
			json.Unmarshal(r.body, &res)
			if res.Effect.Total != 1 || len(res.Effect.Services) != 1 || !strings.Contains(strings.Join(res.Effect.Services[0].Before, ""), "retryPolicy") || strings.Contains(strings.Join(res.Effect.Services[0].After, ""), "retryPolicy") {
				t.Errorf("a policy's deletion, dry, its effect: %s", r.body)
			}
		}},
		{"DELETE", "/v1/zones/example.test/services/echo", "", nil, 200, nil},
		{"DELETE", "/v1/zones/example.test", "", nil, 409, nil},
		{"POST", "/v1/zones/example.test/services:batch", "", map[string]any{"items": []any{
			map[string]any{"metadata": map[string]any{"name": "a"}, "spec": json.RawMessage(svcSpec(3))},
			map[string]any{"metadata": map[string]any{"name": "echo"}, "spec": json.RawMessage(svcSpec(4))},
		}}, 200, func(r response) {
			var res store.BatchResult
			json.Unmarshal(r.body, &res)
			if res.Created != 1 || res.Configured != 1 || res.ResourceVersion != "" {
				t.Errorf("a batch, dry: %s", r.body)
			}
		}},
	} {
		r := s.doType(c.method, c.path+"?dryRun=All", c.ctype, c.body)
		if r.code != c.code {
			t.Errorf("%s %s dry: %d %s, want %d", c.method, c.path, r.code, r.body, c.code)
			continue
		}
		if c.check != nil {
			c.check(r)
		}
	}
	if after := revision(); after != before {
		t.Errorf("the store moved from revision %s to %s", before, after)
	}
	if now := snapshot(); now != was {
		t.Errorf("the objects changed:\n%s\n%s", was, now)
	}
	w.quiet(300 * time.Millisecond)
}
