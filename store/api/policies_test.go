package api_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/grpc-config-dns/grpc-config-dns/internal/httpserve"
	"github.com/grpc-config-dns/grpc-config-dns/store"
	"github.com/grpc-config-dns/grpc-config-dns/store/api"
)

// hedged is a service whose own method config hedges: valid alone, and
// invalid under a policy that adds a retryPolicy to the same methods
// (gRFC A6: one or the other).
const hedged = `{"addresses":["192.0.2.7"],"serviceConfig":{"methodConfig":[{"name":[{"service":"s"}],"hedgingPolicy":{"maxAttempts":2,"hedgingDelay":"0.1s"}}]}}`

const retries = `{"targetRef":{"kind":"Zone"},"default":{"methodConfig":[{"name":[{"service":"s"}],"retryPolicy":{"maxAttempts":3,"initialBackoff":"0.1s","maxBackoff":"1s","backoffMultiplier":2,"retryableStatusCodes":["UNAVAILABLE"]}}]}}`

func TestPolicies(t *testing.T) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			srv := serve(t, b.open(t, store.Options{History: 5000}))
			policies(t, srv)
		})
	}
}

func policies(t *testing.T, srv *server) {
	const zone = "/v1/zones/example.test"
	srv.putZone("example.test")
	// 300 services, every other one labelled team=a; one hedges.
	for i := range 300 {
		spec := svcSpec(i)
		if i == 137 {
			spec = hedged
		}
		o := obj(spec, "")
		if i%2 == 0 {
			o["metadata"].(map[string]any)["labels"] = map[string]string{"team": "a"}
		}
		if r := srv.do("PUT", fmt.Sprintf("%s/services/svc-%d", zone, i), o); r.code != 201 {
			t.Fatalf("PUT svc-%d: %d %s", i, r.code, r.body)
		}
	}

	// A zone-wide retry policy breaks svc-137 alone: 422 naming it and
	// the field, and nothing stored.
	before := srv.must(200, "GET", zone+"/services/svc-137", nil).object(t).Metadata.ResourceVersion
	e := srv.must(422, "PUT", zone+"/policies/retries", obj(retries, "")).err(t)
	if e.Reason != store.ReasonInvalid || !strings.Contains(e.Message, "policy retries") {
		t.Fatalf("422: %+v", e)
	}
	if len(e.Diagnostics) != 1 {
		t.Fatalf("want one service named in the diagnostics (svc-137), got %+v", e.Diagnostics)
	}
	d := e.Diagnostics[0]
	if d.Code != "retry-and-hedging" || !strings.Contains(d.Message, "svc-137") || !strings.Contains(d.Path, "/methodConfig/0/") {
		t.Fatalf("the diagnostic names the policy, the service and the rule: %+v", d)
	}
	srv.must(404, "GET", zone+"/policies/retries", nil)
	if got := srv.must(200, "GET", zone+"/services/svc-137", nil).object(t).Metadata.ResourceVersion; got != before {
		t.Fatalf("svc-137 changed: %s → %s", before, got)
	}

	// Narrowed to team=a (svc-137 is odd: not selected), it is stored.
	narrowed := strings.Replace(retries, `{"kind":"Zone"}`, `{"kind":"Service","labels":{"team":"a"}}`, 1)
	r := srv.must(201, "PUT", zone+"/policies/retries", obj(narrowed, ""))
	p := r.object(t)
	if p.Kind != store.PolicyKind || p.Metadata.Name != "retries" || p.Metadata.Zone != "example.test" {
		t.Fatalf("policy object: %s", r.body)
	}
	rv := p.Metadata.ResourceVersion
	got := srv.must(200, "GET", zone+"/policies/retries", nil).object(t)
	if got.Metadata.ResourceVersion != rv || got.Kind != store.PolicyKind {
		t.Fatalf("GET: %+v", got)
	}
	// The same spec again: no new version.
	if again := srv.must(200, "PUT", zone+"/policies/retries", obj(narrowed, "")).object(t); again.Metadata.ResourceVersion != rv {
		t.Fatalf("an unchanged PUT made version %s (was %s)", again.Metadata.ResourceVersion, rv)
	}
	// resourceVersion preconditions, as for services.
	srv.must(409, "PUT", zone+"/policies/retries", obj(narrowed, fmt.Sprint(rvOf(t, rv)-1)))
	srv.must(409, "DELETE", zone+"/policies/retries?resourceVersion="+fmt.Sprint(rvOf(t, rv)-1), nil)

	// Labelling svc-137 team=a now breaks it: its PUT is refused, the
	// diagnostic placed in the policy.
	lab := obj(hedged, "")
	lab["metadata"].(map[string]any)["labels"] = map[string]string{"team": "a"}
	e = srv.must(422, "PUT", zone+"/services/svc-137", lab).err(t)
	if len(e.Diagnostics) == 0 || e.Diagnostics[0].Code != "retry-and-hedging" || !strings.Contains(e.Message, "retries") {
		t.Fatalf("the service's 422 names the policy: %+v", e)
	}
	// Labels live in metadata.labels only.
	e = srv.must(400, "PUT", zone+"/services/svc-1", obj(`{"labels":{"team":"a"},"addresses":["192.0.2.1"]}`, "")).err(t)
	if !strings.Contains(e.Message, "metadata.labels") {
		t.Fatalf("spec.labels: %s", e.Message)
	}

	// inspect: the final config and who set each value.
	var in struct {
		Service  string `json:"service"`
		Labels   map[string]string
		Policies []struct{ Name, Kind string }
		Fields   []struct {
			Path    string
			Origins []struct{ Policy, Kind, Path string }
		}
	}
	ir := srv.must(200, "GET", zone+"/services/svc-0/inspect", nil)
	if err := json.Unmarshal(ir.body, &in); err != nil {
		t.Fatal(err)
	}
	if in.Service != "svc-0.example.test." || in.Labels["team"] != "a" || len(in.Policies) != 1 || in.Policies[0].Name != "retries" || in.Policies[0].Kind != "ServiceByLabels" {
		t.Fatalf("inspect svc-0: %s", ir.body)
	}
	found := false
	for _, f := range in.Fields {
		if strings.HasSuffix(f.Path, "/retryPolicy/maxAttempts") {
			found = len(f.Origins) == 1 && f.Origins[0].Policy == "retries"
		}
	}
	if !found {
		t.Fatalf("inspect svc-0: retryPolicy/maxAttempts not from policy retries: %s", ir.body)
	}
	// A service no policy selects still shows its result.
	ir = srv.must(200, "GET", zone+"/services/svc-1/inspect", nil)
	if err := json.Unmarshal(ir.body, &in); err != nil || len(in.Policies) != 0 || len(in.Fields) == 0 {
		t.Fatalf("inspect svc-1: %s", ir.body)
	}
	srv.must(404, "GET", zone+"/services/nope/inspect", nil)

	// list and watch.
	l := srv.must(200, "GET", zone+"/policies", nil).list(t)
	if len(l.Items) != 1 || l.Items[0].Metadata.Name != "retries" {
		t.Fatalf("list: %+v", l)
	}
	w, wr := srv.watch(zone + "/policies?watch=true")
	if wr.code != 200 {
		t.Fatalf("watch: %d %s", wr.code, wr.body)
	}
	defer w.cancel()
	if typ, o := w.next(); typ != store.Added || o.Metadata.Name != "retries" {
		t.Fatalf("watch: %s %+v", typ, o)
	}
	if typ, _ := w.next(); typ != store.Bookmark {
		t.Fatalf("watch: %s, want the initial BOOKMARK", typ)
	}

	// A zone with policies is not deleted; nor is a policy whose
	// services need it.
	for i := range 300 {
		srv.must(200, "DELETE", fmt.Sprintf("%s/services/svc-%d", zone, i), nil)
	}
	e = srv.must(409, "DELETE", zone, nil).err(t)
	if !strings.Contains(e.Message, "policies") {
		t.Fatalf("zone delete: %s", e.Message)
	}
	srv.must(200, "DELETE", zone+"/policies/retries", nil)
	if typ, o := w.next(); typ != store.Deleted || o.Metadata.Name != "retries" {
		t.Fatalf("watch: %s %+v", typ, o)
	}
	srv.must(200, "DELETE", zone, nil)
	srv.must(404, "PUT", zone+"/policies/retries", obj(retries, ""))

	// Malformed policies: 422 at the field; bad names: 400.
	srv.putZone("example.test")
	e = srv.must(422, "PUT", zone+"/policies/p1", obj(`{"targetRef":{"kind":"Service"},"default":{}}`, "")).err(t)
	if len(e.Diagnostics) == 0 || !strings.HasPrefix(e.Diagnostics[0].Path, "/spec/targetRef") {
		t.Fatalf("bad targetRef: %+v", e)
	}
	srv.must(400, "PUT", zone+"/policies/Bad_Name", obj(retries, ""))
	srv.must(400, "PUT", zone+"/policies/p2", map[string]any{"metadata": map[string]any{"name": "p3"}, "spec": json.RawMessage(retries)})
}

// TestPolicyDeleteNeeded: deleting a policy a service relies on is
// refused, naming the service.
func TestPolicyDeleteNeeded(t *testing.T) {
	srv := serve(t, openStore(t, store.Options{Location: t.TempDir()}))
	const zone = "/v1/zones/example.test"
	srv.putZone("example.test")
	srv.must(201, "PUT", zone+"/policies/retries", obj(retries, ""))
	// Valid only with the policy's retryPolicy: it sets maxAttempts
	// alone.
	partial := `{"addresses":["192.0.2.1"],"serviceConfig":{"methodConfig":[{"name":[{"service":"s"}],"retryPolicy":{"maxAttempts":4}}]}}`
	srv.must(201, "PUT", zone+"/services/echo", obj(partial, ""))
	e := srv.must(422, "DELETE", zone+"/policies/retries", nil).err(t)
	if len(e.Diagnostics) == 0 || !strings.Contains(e.Diagnostics[0].Message, "echo") {
		t.Fatalf("delete of a needed policy: %+v", e)
	}
	srv.must(200, "GET", zone+"/policies/retries", nil)
}

// TestWebViewBehindTokens: /ui/ on the admin listener takes the API's
// tokens, from a header or, for a browser, a login form and a cookie.
func TestWebViewBehindTokens(t *testing.T) {
	const token = "0123456789abcdef0123"
	view := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "the view") })
	h := newHandler(t, api.Options{Store: openStore(t, store.Options{Location: t.TempDir()}), Tokens: []string{token}, UI: view})
	hs, err := httpserve.Listen("127.0.0.1:0", h, httpserve.Limits{MaxConns: 16})
	if err != nil {
		t.Fatal(err)
	}
	go hs.Serve()
	defer hs.Close()
	base := "http://" + hs.Addr().String()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, Timeout: 5 * time.Second}

	resp, err := c.Get(base + "/ui/zones/x")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.Request.URL.Path != "/ui/login" || resp.StatusCode != 200 {
		t.Fatalf("without a token: %d at %s, want the login page", resp.StatusCode, resp.Request.URL)
	}
	resp, err = c.PostForm(base+"/ui/login", url.Values{"token": {"wrong-token-wrong-token"}, "next": {"/ui/zones/x"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 401 {
		t.Fatalf("a wrong token: %d", resp.StatusCode)
	}
	resp, err = c.PostForm(base+"/ui/login", url.Values{"token": {token}, "next": {"/ui/zones/x"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Request.URL.Path != "/ui/zones/x" {
		t.Fatalf("after login: %d at %s", resp.StatusCode, resp.Request.URL)
	}
	// The cookie opens the view, not the API.
	resp, err = c.Get(base + "/v1/zones")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 401 {
		t.Fatalf("the API with the view's cookie: %d, want 401", resp.StatusCode)
	}
	// An open redirect is not possible.
	resp, err = c.PostForm(base+"/ui/login", url.Values{"token": {token}, "next": {"https://evil.example/"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.Request.URL.Host != hs.Addr().String() || resp.Request.URL.Path != "/ui/" {
		t.Fatalf("next outside /ui/ followed: %s", resp.Request.URL)
	}
	// A header works too.
	req, _ := http.NewRequest("GET", base+"/ui/", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("bearer: %d", resp.StatusCode)
	}
}

// TestPolicyRaces: services that are valid only with a policy are
// written while the policy is deleted and put back, concurrently. The
// policy marker makes one of two racing writes fail and retry, so no
// stored service is ever left invalid (inspect, which validates the
// stored service under the stored policies, never answers 409).
func TestPolicyRaces(t *testing.T) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			srv := serve(t, b.open(t, store.Options{History: 100000}))
			const zone = "/v1/zones/example.test"
			srv.putZone("example.test")
			srv.must(201, "PUT", zone+"/policies/retries", obj(retries, ""))
			partial := func(i int) string {
				return fmt.Sprintf(`{"addresses":["192.0.2.1"],"serviceConfig":{"methodConfig":[{"name":[{"service":"s"}],"retryPolicy":{"maxAttempts":%d}}]}}`, i%4+2)
			}
			// The toggler records when the policy was absent (from its
			// deletion's version to its next creation's), the writer the
			// versions of its writes: none may fall in between.
			type gap struct{ from, to int64 }
			var gaps []gap
			done := make(chan struct{})
			stop := time.Now().Add(soak(t) / 2)
			go func() {
				defer close(done)
				for time.Now().Before(stop) {
					r := srv.do("DELETE", zone+"/policies/retries", nil)
					if r.code != 200 {
						continue
					}
					from := rvOf(t, r.object(t).Metadata.ResourceVersion)
					to := rvOf(t, srv.must(201, "PUT", zone+"/policies/retries", obj(retries, "")).object(t).Metadata.ResourceVersion)
					gaps = append(gaps, gap{from, to})
				}
			}()
			// Services come and go, so that the policy's deletion often
			// goes through and races with their writes.
			var writes []int64
			for i := 0; time.Now().Before(stop); i++ {
				path := fmt.Sprintf("%s/services/svc-%d", zone, i%2)
				if r := srv.do("PUT", path, obj(partial(i), "")); r.code < 300 {
					writes = append(writes, rvOf(t, r.object(t).Metadata.ResourceVersion))
					srv.do("DELETE", path, nil)
				}
			}
			<-done
			for _, g := range gaps {
				for _, w := range writes {
					if g.from < w && w < g.to {
						t.Fatalf("a service needing the policy was written at version %d, while the policy was deleted (versions %d to %d)", w, g.from, g.to)
					}
				}
			}
			t.Logf("%d service writes, the policy deleted %d times", len(writes), len(gaps))
			written := len(writes)
			if written == 0 {
				t.Fatal("no service write went through")
			}
			// The policy is back; every stored service is valid with it
			// and was valid at every revision (each write was checked
			// against the policies it committed with).
			srv.must(201, "PUT", zone+"/services/svc-0", obj(partial(0), ""))
			for i := range 2 {
				r := srv.do("GET", fmt.Sprintf("%s/services/svc-%d/inspect", zone, i), nil)
				if r.code != 200 && r.code != 404 {
					t.Fatalf("svc-%d: %d %s", i, r.code, r.body)
				}
			}
			// Deleting the policy now is refused: services need it.
			if e := srv.do("DELETE", zone+"/policies/retries", nil); e.code != 422 {
				t.Fatalf("DELETE a needed policy: %d %s", e.code, e.body)
			}
		})
	}
}

// countingReader counts what a handler read of a body.
type countingReader struct {
	n int64
	r io.Reader
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// TestLoginHostileInput: the login form (open to anyone) reads at most
// 4 KiB of a body, never a multipart one, and goes on only to a path of
// the web view.
func TestLoginHostileInput(t *testing.T) {
	const token = "0123456789abcdef0123"
	h := newHandler(t, api.Options{Store: openStore(t, store.Options{Location: t.TempDir()}), Tokens: []string{token}, UI: http.NotFoundHandler()})
	for _, ct := range []string{"application/x-www-form-urlencoded", "multipart/form-data; boundary=x"} {
		cr := &countingReader{r: strings.NewReader("token=x&pad=" + strings.Repeat("a", 8<<20))}
		r := httptest.NewRequest("POST", "/ui/login", cr)
		r.Header.Set("Content-Type", ct)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if cr.n > 8<<10 || w.Code < 400 {
			t.Errorf("%s: read %d bytes of an 8 MiB body, answered %d", ct, cr.n, w.Code)
		}
	}
	for _, next := range []string{"/ui/../\\evil.example", "/ui/..%2F%5Cevil", "//evil.example/ui/", "https://evil.example/ui/", "/ui//evil.example", "/ui/\\\\evil", "/ui/login"} {
		r := httptest.NewRequest("POST", "/ui/login", strings.NewReader(url.Values{"token": {token}, "next": {next}}.Encode()))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if loc := w.Header().Get("Location"); w.Code != http.StatusSeeOther || loc != "/ui/" {
			t.Errorf("next %q: %d to %q, want /ui/", next, w.Code, loc)
		}
	}
	r := httptest.NewRequest("POST", "/ui/login", strings.NewReader(url.Values{"token": {token}, "next": {"/ui/zones/example.test/services/echo?q=a%20b"}}.Encode()))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if loc := w.Header().Get("Location"); loc != "/ui/zones/example.test/services/echo?q=a%20b" {
		t.Errorf("a page of the view: to %q", loc)
	}
}
