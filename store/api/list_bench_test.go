package api_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/grpc-config-dns/grpc-config-dns/store"
	"github.com/grpc-config-dns/grpc-config-dns/store/api"
)

// BenchmarkListPage: a 500-item page of services with NotOlderThan, as
// bench/store.sh asks it, through the handler (no network).
func BenchmarkListPage(b *testing.B) {
	s, err := store.Open(context.Background(), store.Options{Location: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	h := newHandler(b, api.Options{Store: s})
	put := func(path, body string) {
		req := httptest.NewRequest("PUT", path, strings.NewReader(body))
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code >= 300 {
			b.Fatalf("PUT %s: %d %s", path, rec.Code, rec.Body)
		}
	}
	put("/v1/zones/fleet.test", `{"spec":`+zoneSpec+`}`)
	for i := range 1000 {
		put(fmt.Sprintf("/v1/zones/fleet.test/services/svc-%d", i), `{"spec":`+svcSpec(i)+`}`)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		req := httptest.NewRequest("GET", "/v1/zones/fleet.test/services?limit=500&resourceVersion=1&resourceVersionMatch=NotOlderThan", nil)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			b.Fatalf("list: %d %s", rec.Code, rec.Body)
		}
		io.Discard.Write(rec.Body.Bytes())
	}
}
