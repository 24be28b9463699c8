package api_test

import (
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/grpc-config-dns/grpc-config-dns/store"
)

// TestResourceVersionSyntax: a resourceVersion is the decimal the store
// writes, without sign, leading zeros or spaces; anything else is a 400
// naming the parameter, wherever it is given, and nothing is written.
func TestResourceVersionSyntax(t *testing.T) {
	srv := serve(t, openStore(t, store.Options{Location: t.TempDir()}))
	srv.putZone("example.test")
	rv := srv.putService("example.test", "s", svcSpec(1))
	path := services + "/s"
	RV := fmt.Sprint(rv)
	for _, bad := range []string{"+" + RV, "0" + RV, " " + RV, RV + " ", "-0", "+0", "00", "1e3", "0x1", "٣", "9223372036854775808"} {
		q := url.QueryEscape(bad)
		for _, c := range []struct {
			method, path string
			body         any
			param        string
		}{
			{"GET", path + "?resourceVersion=" + q, nil, "resourceVersion"},
			{"GET", services + "?resourceVersion=" + q, nil, "resourceVersion"},
			{"GET", services + "?resourceVersion=" + q + "&resourceVersionMatch=NotOlderThan", nil, "resourceVersion"},
			{"GET", services + "?watch=true&timeoutSeconds=1&resourceVersion=" + q, nil, "resourceVersion"},
			{"PUT", path, obj(svcSpec(2), bad), "metadata.resourceVersion"},
			{"DELETE", path + "?resourceVersion=" + q, nil, "resourceVersion"},
			{"DELETE", path, `{"preconditions":{"resourceVersion":"` + bad + `"}}`, "resourceVersion"},
		} {
			r := srv.do(c.method, c.path, c.body)
			if r.code != 400 {
				t.Errorf("%s %s %v: got %d, want 400: %s", c.method, c.path, c.body, r.code, r.body)
				continue
			}
			if e := r.err(t); !strings.Contains(e.Message, c.param+" ") || !strings.Contains(e.Message, fmt.Sprintf("%q", bad)) {
				t.Errorf("%s %s: the message does not name %s and %q: %s", c.method, c.path, c.param, bad, r.body)
			}
		}
	}
	if got := srv.must(200, "GET", path, nil).object(t); got.Metadata.ResourceVersion != RV {
		t.Errorf("the service moved to %s", got.Metadata.ResourceVersion)
	}
	// What the store writes is read.
	srv.must(200, "GET", path+"?resourceVersion=0", nil)
	srv.must(200, "GET", path+"?resourceVersion="+RV, nil)
	srv.must(200, "GET", services+"?resourceVersion="+RV+"&resourceVersionMatch=Exact", nil)
	srv.must(200, "PUT", path, obj(svcSpec(2), RV))
}
