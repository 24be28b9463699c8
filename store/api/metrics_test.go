package api_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/grpc-config-dns/grpc-config-dns/internal/promtest"
	"github.com/grpc-config-dns/grpc-config-dns/store"
	"github.com/grpc-config-dns/grpc-config-dns/store/api"
)

// TestRequestMetrics: requests are counted by the route that served them
// (not their path), method and status code, any method a client invents
// is "other", and a watch still streams through the counting.
func TestRequestMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	st := openStore(t, store.Options{Location: t.TempDir()})
	h := newHandler(t, api.Options{Store: st, Registerer: reg})
	srv := httptest.NewServer(h)
	defer srv.Close()
	do := func(method, path, body string) int {
		req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	do("PUT", "/v1/zones/a.test", `{"spec":{"nameservers":["ns1.example.net."]}}`)
	do("PUT", "/v1/zones/a.test/services/one", `{"spec":{"addresses":["192.0.2.1"]}}`)
	do("PUT", "/v1/zones/a.test/services/two", `{"spec":{"addresses":["192.0.2.2"]}}`)
	do("PUT", "/v1/zones/a.test/services/bad", `{"spec":{"addresses":["nope"]}}`)
	do("GET", "/v1/zones/a.test/services/one", "")
	do("BREW", "/v1/zones/a.test/services/one", "")
	do("GET", "/nowhere", "")

	// A watch streams its first event through the counting writer.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/v1/zones/a.test/services?watch=true", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	if err != nil || !strings.Contains(line, `"ADDED"`) {
		t.Fatalf("the watch's first line: %q %v", line, err)
	}
	cancel()
	resp.Body.Close()

	const route = "/v1/zones/{zone}/services/{name}"
	m := promtest.Gather(t, reg)
	key := func(route, method, code string) string {
		return `grpc_config_dns_admin_http_requests_total{code="` + code + `",method="` + method + `",route="` + route + `"}`
	}
	for k, want := range map[string]float64{
		key(route, "PUT", "201"):              2,
		key(route, "PUT", "422"):              1,
		key(route, "GET", "200"):              1,
		key("/", "GET", "404"):                1,
		key("/v1/zones/{zone}", "PUT", "201"): 1,
	} {
		if got := m[k]; got != want {
			t.Errorf("%s = %v, want %v", k, got, want)
		}
	}
	other := 0.0
	for k, v := range m {
		if strings.Contains(k, `method="BREW"`) {
			t.Errorf("a method a client invented is a label: %s", k)
		}
		if strings.HasPrefix(k, "grpc_config_dns_admin_http_requests_total{") && strings.Contains(k, `method="other"`) {
			other += v
		}
	}
	if other != 1 {
		t.Errorf("the invented method counted %v times as \"other\", want 1", other)
	}
	if m[`grpc_config_dns_admin_http_request_duration_seconds_count{method="PUT",route="`+route+`"}`] != 3 {
		t.Error("the PUTs of services are not timed")
	}
	// The watch is counted once it ends, which its server sees after the
	// client went.
	for deadline := time.Now().Add(5 * time.Second); promtest.Gather(t, reg)[key("/v1/zones/{zone}/services", "GET", "200")] != 1; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the watch was not counted once it ended")
		}
	}
}

// TestUnknownParametersRefused: a query parameter a route does not take
// is refused (400, naming the ones it takes) and nothing is done: a PUT
// asked as a dry run stores nothing, a list asked with a selector or a
// misspelt limit does not list everything (issue 31).
func TestUnknownParametersRefused(t *testing.T) {
	st := openStore(t, store.Options{Location: t.TempDir()})
	srv := httptest.NewServer(newHandler(t, api.Options{Store: st}))
	defer srv.Close()
	do := func(method, path, body string) (int, string) {
		req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var e struct{ Message string }
		if json.Unmarshal(b, &e) == nil && e.Message != "" {
			return resp.StatusCode, e.Message
		}
		return resp.StatusCode, string(b)
	}
	if code, body := do("PUT", "/v1/zones/a.test", `{"spec":{"nameservers":["ns1.example.net."]}}`); code != 201 {
		t.Fatalf("PUT zone: %d %s", code, body)
	}
	rev, _ := st.Revision(context.Background())
	for _, c := range []struct{ method, path, body, want string }{
		{"PUT", "/v1/zones/a.test?fieldManager=kubectl", `{"spec":{"nameservers":["ns1.example.net."]}}`, `"fieldManager" is not supported by PUT /v1/zones/{zone}, which takes dryRun`},
		{"PUT", "/v1/zones/a.test/services/one?resourceVersion=1", `{"spec":{"addresses":["192.0.2.1"]}}`, `"resourceVersion" is not supported`},
		{"DELETE", "/v1/zones/a.test/policies/p?gracePeriodSeconds=0", "", `"gracePeriodSeconds" is not supported by DELETE /v1/zones/{zone}/policies/{name}, which takes resourceVersion, dryRun`},
		{"GET", "/v1/zones/a.test/services/one?labelSelector=team%3Dnobody", "", "selectors apply to lists and watches"},
		{"GET", "/v1/zones/a.test/services?limt=1", "", `"limt" is not supported by GET /v1/zones/{zone}/services, which takes limit, continue, resourceVersion`},
		{"POST", "/v1/zones/a.test/services:batch?fieldValidation=Strict", `{"items":[]}`, `"fieldValidation" is not supported by POST /v1/zones/{zone}/services:batch, which takes dryRun`},
		{"GET", "/v1/zones/a.test/services/one/inspect?x=1", "", "takes no query parameter"},
	} {
		code, body := do(c.method, c.path, c.body)
		if code != 400 || !strings.Contains(body, c.want) || !strings.Contains(body, "nothing was done") {
			t.Errorf("%s %s: %d %s, want 400 saying %q", c.method, c.path, code, body, c.want)
		}
	}
	if now, _ := st.Revision(context.Background()); now != rev {
		t.Errorf("the store moved from revision %d to %d: a refused request wrote", rev, now)
	}
	code, body := do("PUT", "/v1/zones/a.test/services/one?dryRun=Some", `{"spec":{"addresses":["192.0.2.1"]}}`)
	if code != 400 || !strings.Contains(body, "dryRun=All") {
		t.Errorf("dryRun=Some: %d %s", code, body)
	}
	// What the routes take still works.
	for _, path := range []string{"/v1/zones/a.test?resourceVersion=0", "/v1/zones/a.test/services?limit=1&resourceVersion=0&resourceVersionMatch=NotOlderThan"} {
		if code, body := do("GET", path, ""); code != 200 {
			t.Errorf("GET %s: %d %s", path, code, body)
		}
	}
}

// TestDryRunPutService: PUT of a service with dryRun=All answers as the
// PUT would (created or not, the object, 422 for an invalid spec, 409
// for a stale resourceVersion) plus what DNS would publish, and stores
// nothing: no revision, no object.
func TestDryRunPutService(t *testing.T) {
	st := openStore(t, store.Options{Location: t.TempDir()})
	srv := httptest.NewServer(newHandler(t, api.Options{Store: st}))
	defer srv.Close()
	do := func(method, path, body string) (int, []byte) {
		req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	do("PUT", "/v1/zones/a.test", `{"spec":{"nameservers":["ns1.example.net."]}}`)
	if code, b := do("PUT", "/v1/zones/a.test/services/old", `{"spec":{"addresses":["192.0.2.9"]}}`); code != 201 {
		t.Fatalf("PUT old: %d %s", code, b)
	}
	rev, _ := st.Revision(context.Background())
	const spec = `{"spec":{"addresses":["192.0.2.1"],"serviceConfig":{"methodConfig":[{"name":[{}],"timeout":"1.5s"}]}}}`

	code, b := do("PUT", "/v1/zones/a.test/services/new?dryRun=All", spec)
	var res struct {
		Metadata  store.Metadata
		Published struct {
			Owner     string
			TXT       []string
			Addresses []string
		}
	}
	if err := json.Unmarshal(b, &res); err != nil || code != 201 {
		t.Fatalf("dry run of a new service: %d %s %v", code, b, err)
	}
	if res.Metadata.ResourceVersion != "" || res.Published.Owner != "_grpc_config.new.a.test." ||
		len(res.Published.TXT) != 1 || !strings.Contains(res.Published.TXT[0], `"timeout":"1.500000000s"`) || len(res.Published.Addresses) != 1 {
		t.Errorf("dry run of a new service: %s", b)
	}
	if code, b := do("PUT", "/v1/zones/a.test/services/old?dryRun=All", spec); code != 200 || !strings.Contains(string(b), `"resourceVersion":"`) {
		t.Errorf("dry run of a change: %d %s", code, b)
	}
	if code, b := do("PUT", "/v1/zones/a.test/services/bad?dryRun=All", `{"spec":{"addresses":["192.0.2.1"],"serviceConfig":{"methodConfig":[{"name":[{}],"timeout":"soon"}]}}}`); code != 422 {
		t.Errorf("dry run of an invalid service: %d %s", code, b)
	}
	if code, b := do("PUT", "/v1/zones/a.test/services/old?dryRun=All", `{"metadata":{"resourceVersion":"1"},"spec":{"addresses":["192.0.2.1"]}}`); code != 409 {
		t.Errorf("dry run with a stale resourceVersion: %d %s", code, b)
	}
	if now, _ := st.Revision(context.Background()); now != rev {
		t.Errorf("dry runs moved the store from revision %d to %d", rev, now)
	}
	if code, _ := do("GET", "/v1/zones/a.test/services/new", ""); code != 404 {
		t.Errorf("the dry-run service was stored: GET %d", code)
	}
	if code, b := do("GET", "/v1/zones/a.test/services/old", ""); code != 200 || !strings.Contains(string(b), "192.0.2.9") {
		t.Errorf("the dry run changed the service: %d %s", code, b)
	}
}
