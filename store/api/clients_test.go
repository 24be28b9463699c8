package api_test

import (
	"testing"

	"github.com/grpc-config-dns/grpc-config-dns/store"
)

// A refusal for a declared client says, diagnostic by diagnostic, what each
// client does (as lint --format json does); with the client taken out of
// the zone's declared ones, the same service is stored.
func TestRefusalSaysWhatEachClientDoes(t *testing.T) {
	srv := serve(t, openStore(t, store.Options{Location: t.TempDir()}))
	srv.putZone("c.test")
	const spec = `{"addresses":["192.0.2.1"],"serviceConfig":{"methodConfig":[{"name":[{}],"retryPolicy":{"maxAttempts":2,"initialBackoff":"1s","maxBackoff":"1s","backoffMultiplier":2,"retryableStatusCodes":["unavailable"]}}]}}`
	r := srv.do("PUT", "/v1/zones/c.test/services/echo", obj(spec, ""))
	if r.code != 422 {
		t.Fatalf("PUT: %d %s", r.code, r.body)
	}
	e := r.err(t)
	if len(e.Diagnostics) != 1 || e.Diagnostics[0].Code != "status-code-case" {
		t.Fatalf("diagnostics: %+v", e.Diagnostics)
	}
	want := map[string]string{"go": "rejects config", "c-core": "rejects config", "java": "rejects config", "node": "ok", "dnsconfig": "ok"}
	for id, eff := range want {
		if got := e.Diagnostics[0].Clients[id]; got != eff {
			t.Errorf("clients[%s] = %q, want %q (all: %v)", id, got, eff, e.Diagnostics[0].Clients)
		}
	}
	srv.must(200, "PUT", "/v1/zones/c.test", obj(`{"nameservers":[{"name":"ns1","addresses":["192.0.2.53"]}],"compat":{"clients":["node"]}}`, ""))
	srv.must(201, "PUT", "/v1/zones/c.test/services/echo", obj(spec, ""))
}
