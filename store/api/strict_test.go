package api_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/grpc-config-dns/grpc-config-dns/store"
)

// TestStrictBody: a body whose meaning depends on which of two copies of
// a key a decoder keeps, or on whether it folds case, is refused (400,
// naming the key's JSON pointer), and nothing is stored: encoding/json
// alone would keep the last copy and take "Metadata" for "metadata".
func TestStrictBody(t *testing.T) {
	srv := serve(t, openStore(t, store.Options{Location: t.TempDir()}))
	srv.putZone("example.test")
	rv := srv.putService("example.test", "s", svcSpec(1))
	path := services + "/s"
	spec := svcSpec(2)
	for _, c := range []struct {
		name, body, pointer string
	}{
		{"two specs", `{"metadata":{},"spec":` + svcSpec(3) + `,"spec":` + spec + `}`, "/spec"},
		{"two names", `{"metadata":{"name":"x","name":"s"},"spec":` + spec + `}`, "/metadata/name"},
		{"two resourceVersions", `{"metadata":{"resourceVersion":"1","resourceVersion":"` + fmt.Sprint(rv) + `"},"spec":` + spec + `}`, "/metadata/resourceVersion"},
		{"two labels of one key", `{"metadata":{"labels":{"app.kubernetes.io/tier":"a","app.kubernetes.io/tier":"b"}},"spec":` + spec + `}`, "/metadata/labels/app.kubernetes.io~1tier"},
		{"an escaped copy", `{"metadata":{},"spec":` + spec + `,"sp\u0065c":{}}`, "/spec"},
		{"a copy elsewhere", `{"metadata":{},"spec":` + spec + `,"status":{"a":[{"b":1,"b":2}]}}`, "/status/a/0/b"},
		{"Metadata", `{"Metadata":{"labels":{"a":"b"}},"spec":` + spec + `}`, "/Metadata"},
		{"SPEC", `{"metadata":{},"SPEC":` + spec + `}`, "/SPEC"},
		{"Kelvin sign for k", `{"\u212aind":"Policy","metadata":{},"spec":` + spec + `}`, "/\u212aind"},
		{"resourceversion", `{"metadata":{"resourceversion":"1"},"spec":` + spec + `}`, "/metadata/resourceversion"},
		{"Labels", `{"metadata":{"Labels":{"a":"b"}},"spec":` + spec + `}`, "/metadata/Labels"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := srv.do("PUT", path, c.body)
			if r.code != 400 {
				t.Fatalf("got %d, want 400: %s", r.code, r.body)
			}
			if e := r.err(t); e.Reason != store.ReasonBadRequest || !strings.Contains(e.Message, " at "+c.pointer+" ") {
				t.Errorf("the message does not name %s: %s", c.pointer, r.body)
			}
		})
	}
	if got := srv.must(200, "GET", path, nil).object(t); got.Metadata.ResourceVersion != fmt.Sprint(rv) {
		t.Errorf("a refused body changed the service: now at %s, was %d", got.Metadata.ResourceVersion, rv)
	}
	// A DELETE's options alike.
	for body, pointer := range map[string]string{
		`{"preconditions":{"resourceVersion":"1","resourceVersion":"` + fmt.Sprint(rv) + `"}}`: "/preconditions/resourceVersion",
		`{"Preconditions":{"resourceVersion":"1"}}`:                                            "/Preconditions",
		`{"preconditions":{"ResourceVersion":"1"}}`:                                            "/preconditions/ResourceVersion",
	} {
		r := srv.must(400, "DELETE", path, body)
		if e := r.err(t); !strings.Contains(e.Message, " at "+pointer+" ") {
			t.Errorf("DELETE %s: the message does not name %s: %s", body, pointer, r.body)
		}
	}
	srv.must(200, "GET", path, nil)
	// Bodies that are not JSON are refused as before, saying so, however
	// deep they nest.
	for _, body := range []string{
		`{"metadata":{"name":"s","name":`,
		`{"metadata":{},"spec":{},"status":` + strings.Repeat("[", 1_000_000) + strings.Repeat("]", 1_000_000) + `}`,
	} {
		if r := srv.must(400, "PUT", path, body); !strings.Contains(r.err(t).Message, "not a JSON object") {
			t.Errorf("%.40s…: %s", body, r.body)
		}
	}
	// Keys that only look alike are different keys of a map, and a
	// spec's own copies are the validator's (422, lint's diagnostic).
	srv.must(200, "PUT", path, `{"metadata":{"labels":{"a":"1","A":"2"}},"spec":`+spec+`,"status":{}}`)
	r := srv.must(422, "PUT", path, `{"metadata":{},"spec":{"addresses":["192.0.2.1"],"addresses":["192.0.2.2"]}}`)
	if d := r.err(t).Diagnostics; len(d) == 0 || d[0].Code != "yaml-duplicate-key" || d[0].Path != "/spec/addresses" {
		t.Errorf("a spec with a key twice: %s", r.body)
	}
}
