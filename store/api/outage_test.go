package api_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/grpc-config-dns/grpc-config-dns/internal/etcdtest"
	"github.com/grpc-config-dns/grpc-config-dns/store"
)

// TestEtcdOutageIs503: while etcd does not answer, writes and consistent
// reads get 503 ServiceUnavailable with Retry-After, as docs/store.md
// says (and as clients retry), not 504.
func TestEtcdOutageIs503(t *testing.T) {
	e := etcdtest.Start(t)
	srv := serve(t, openStore(t, store.Options{Location: e.Location("outage")}))
	srv.putZone("example.test")
	srv.putService("example.test", "s", svcSpec(1))
	e.Stop()
	reqs := []struct {
		method, path string
		body         any
	}{
		{"PUT", services + "/s", obj(svcSpec(2), "")},
		{"PUT", "/v1/zones/other.test", obj(zoneSpec, "")},
		{"DELETE", services + "/s", nil},
		{"GET", services + "/s", nil},
		{"GET", services, nil},
	}
	// Each waits for etcd's request timeout: all at once.
	type answer struct {
		code       int
		retryAfter string
		body       []byte
		err        error
	}
	got := make([]answer, len(reqs))
	var wg sync.WaitGroup
	start := time.Now()
	for i, rq := range reqs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var body io.Reader
			if rq.body != nil {
				b, _ := json.Marshal(rq.body)
				body = bytes.NewReader(b)
			}
			req, _ := http.NewRequest(rq.method, srv.url+rq.path, body)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				got[i].err = err
				return
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			got[i] = answer{resp.StatusCode, resp.Header.Get("Retry-After"), b, nil}
		}()
	}
	wg.Wait()
	t.Logf("answered in %v", time.Since(start))
	for i, rq := range reqs {
		a := got[i]
		if a.err != nil {
			t.Errorf("%s %s: %v", rq.method, rq.path, a.err)
			continue
		}
		if a.code != http.StatusServiceUnavailable || a.retryAfter != "1" {
			t.Errorf("%s %s during an etcd outage: %d, Retry-After %q; want 503 with Retry-After: 1: %s", rq.method, rq.path, a.code, a.retryAfter, a.body)
			continue
		}
		if e := (response{a.code, a.body}).err(t); e.Reason != store.ReasonUnavailable || !strings.Contains(e.Message, "try again") {
			t.Errorf("%s %s: %s", rq.method, rq.path, a.body)
		}
	}
}
