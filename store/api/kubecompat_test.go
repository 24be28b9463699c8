package api_test

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/grpc-config-dns/grpc-config-dns/store"
)

// TestKubeCompatibilityTable sends every request of docs/store.md's
// "Kubernetes compatibility, request by request" table, in order, and
// requires the answer written there: the docs say exactly what is and is
// not kube-compatible, and stay true.
func TestKubeCompatibilityTable(t *testing.T) {
	doc, err := os.ReadFile("../../docs/store.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(doc), "## Kubernetes compatibility, request by request\n")
	if !ok {
		t.Fatal("docs/store.md has no compatibility table")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	row := regexp.MustCompile("^\\| `(GET|PUT|POST|PATCH|DELETE) ([^`]+)`( (merge|json|strategic|apply))? \\| (`([^`]*)`)? *\\| (\\d{3}) \\|")
	patchTypes := map[string]string{"merge": "application/merge-patch+json", "json": "application/json-patch+json",
		"strategic": "application/strategic-merge-patch+json", "apply": "application/apply-patch+yaml"}

	s := serve(t, openStore(t, store.Options{Location: t.TempDir()}))
	s.putZone("example.test")
	o := obj(svcSpec(1), "")
	o["metadata"].(map[string]any)["labels"] = map[string]string{"team": "a"}
	s.must(201, "PUT", "/v1/zones/example.test/services/echo", o)
	s.must(201, "PUT", "/v1/zones/example.test/policies/retries", obj(retries, ""))
	n := 0
	for _, line := range strings.Split(section, "\n") {
		m := row.FindStringSubmatch(line)
		if m == nil {
			if strings.HasPrefix(line, "| `") {
				t.Errorf("a row the test cannot read: %s", line)
			}
			continue
		}
		n++
		method, path, ptype, body := m[1], m[2], m[4], m[6]
		want, _ := strconv.Atoi(m[7])
		var b any
		if body != "" {
			b = body
		}
		r := s.doType(method, path, patchTypes[ptype], b)
		if r.code != want {
			t.Errorf("%s %s %s: %d %s, docs/store.md says %d", method, path, body, r.code, r.body, want)
		}
	}
	if n < 20 {
		t.Errorf("%d rows read from the table", n)
	}
}
