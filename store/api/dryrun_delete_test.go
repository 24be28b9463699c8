package api_test

import (
	"strconv"
	"testing"

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
