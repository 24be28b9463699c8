package api_test

import (
	"strings"
	"testing"

	"github.com/grpc-config-dns/grpc-config-dns/store"
)

// TestKinds: every object and list says its apiVersion and kind (as
// Kubernetes' do), in answers to reads, writes and watches; a write may
// leave them out, and one naming another kind or version is refused.
func TestKinds(t *testing.T) {
	s := serve(t, openStore(t, store.Options{Location: t.TempDir()}))
	s.putZone("example.test")
	s.putService("example.test", "echo", svcSpec(1))
	s.must(201, "PUT", "/v1/zones/example.test/policies/retries", obj(retries, ""))
	for path, kind := range map[string]string{
		"/v1/zones/example.test":                  "Zone",
		"/v1/zones/example.test/services/echo":    "Service",
		"/v1/zones/example.test/policies/retries": "Policy",
		"/v1/zones":                               "ZoneList",
		"/v1/zones/example.test/services":         "ServiceList",
		"/v1/zones/example.test/policies":         "PolicyList",
		"/v1/zones/example.test/services?limit=1": "ServiceList",
	} {
		r := s.must(200, "GET", path, nil)
		if !strings.HasPrefix(string(r.body), `{"apiVersion":"grpc-config-dns/v1","kind":"`+kind+`",`) {
			t.Errorf("GET %s: %s", path, r.body)
		}
		if strings.HasSuffix(kind, "List") && !strings.Contains(string(r.body), `"items":[{"apiVersion":"grpc-config-dns/v1","kind":"`+strings.TrimSuffix(kind, "List")+`"`) {
			t.Errorf("GET %s: items without their kind: %s", path, r.body)
		}
	}
	put := func(path, kind, apiVersion, spec string) response {
		o := obj(spec, "")
		if kind != "" {
			o["kind"] = kind
		}
		if apiVersion != "" {
			o["apiVersion"] = apiVersion
		}
		return s.do("PUT", path, o)
	}
	if r := put("/v1/zones/example.test/services/web", "Service", "grpc-config-dns/v1", svcSpec(2)); r.code != 201 || r.object(t).Kind != "Service" {
		t.Errorf("PUT with its kind: %d %s", r.code, r.body)
	}
	if r := put("/v1/zones/example.test", "Zone", "", zoneSpec); r.code != 200 || r.object(t).APIVersion != "grpc-config-dns/v1" {
		t.Errorf("PUT zone with its kind: %d %s", r.code, r.body)
	}
	for _, c := range []struct{ path, kind, apiVersion, spec, want string }{
		{"/v1/zones/example.test/services/web", "Zone", "", svcSpec(2), `kind "Zone" of service web of zone example.test: it is a Service`},
		{"/v1/zones/example.test/services/web", "", "v1", svcSpec(2), `apiVersion "v1" of service web`},
		{"/v1/zones/example.test", "Service", "", zoneSpec, `kind "Service" of zone example.test: it is a Zone`},
		{"/v1/zones/example.test/policies/retries", "Service", "", retries, `kind "Service" of policy retries`},
	} {
		if r := put(c.path, c.kind, c.apiVersion, c.spec); r.code != 400 || !strings.Contains(r.err(t).Message, c.want) {
			t.Errorf("PUT %s kind %q apiVersion %q: %d %s, want 400 saying %q", c.path, c.kind, c.apiVersion, r.code, r.body, c.want)
		}
	}
	w, _ := s.watch("/v1/zones/example.test/services?watch=1")
	if typ, o := w.next(); typ != store.Added || o.Kind != "Service" || o.APIVersion != "grpc-config-dns/v1" {
		t.Errorf("a watch event's object: %s %+v", typ, o)
	}
}
