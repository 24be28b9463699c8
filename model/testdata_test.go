package model

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	sc "github.com/grpc-config-dns/grpc-config-dns/serviceconfig"
)

// TestTestdata: the example configs in testdata/publisher are valid, and
// the built-in example is the one documented there.
func TestTestdata(t *testing.T) {
	dir := filepath.Join("..", "testdata", "publisher")
	for _, name := range []string{"example.yaml", "example.json", "production.yaml", "design.yaml"} {
		text, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if cfg, ds := Parse(text); cfg == nil || ds.HasErrors() {
			t.Errorf("%s:\n%s", name, dump(ds))
		}
	}
	doc, _ := os.ReadFile(filepath.Join(dir, "example.yaml"))
	if !bytes.Equal(doc, Example) {
		t.Error("testdata/publisher/example.yaml differs from the built-in example model/example.yaml: copy it over")
	}
	if _, ds := Parse(mustRead(t, filepath.Join(dir, "invalid.yaml"))); !ds.HasErrors() {
		t.Error("invalid.yaml is valid")
	}
}

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestCodesRegistered: every code is registered in full, and reported
// somewhere (a code that is not declared does not compile).
func TestCodesRegistered(t *testing.T) {
	files, _ := filepath.Glob("*.go")
	re := regexp.MustCompile(`\bcode[A-Z]\w*`)
	used := map[string]bool{}
	for _, f := range files {
		if f == "codes.go" || strings.HasSuffix(f, "_test.go") {
			continue
		}
		for _, m := range re.FindAll(mustRead(t, f), -1) {
			used[string(m)] = true
		}
	}
	src := string(mustRead(t, "codes.go"))
	for c := diagCode(1); c < numCodes; c++ {
		info := codes[c]
		if info.Code == "" || info.Summary == "" || (info.Severity != sc.Error && info.Severity != sc.Warning) {
			t.Errorf("code %d after %q is not registered in full: %+v", c, codes[c-1].Code, info)
		}
		// The constant's name is the one codes.go keys the entry with.
		i := strings.Index(src, `{Code: "`+info.Code+`"`)
		j := strings.LastIndex(src[:max(i, 0)], "\n\t")
		if i < 0 || j < 0 {
			t.Errorf("code %q: no entry in codes.go", info.Code)
			continue
		}
		if name, _, _ := strings.Cut(src[j+2:i], ":"); !used[name] {
			t.Errorf("code %q (%s) is registered but never reported", info.Code, name)
		}
	}
}

// TestDocsExample: the config reference in docs/publisher.md is valid.
func TestDocsExample(t *testing.T) {
	doc := mustRead(t, filepath.Join("..", "docs", "publisher.md"))
	m := regexp.MustCompile("(?s)```yaml\n(.*?)```").FindSubmatch(doc)
	if m == nil {
		t.Fatal("no yaml block in docs/publisher.md")
	}
	if cfg, ds := Parse(m[1]); cfg == nil || len(ds) > 0 {
		t.Errorf("the config in docs/publisher.md:\n%s", dump(ds))
	}
}

// TestDocsCodes: the code table in docs/publisher.md lists every code with
// its severity and summary.
func TestDocsCodes(t *testing.T) {
	doc := string(mustRead(t, filepath.Join("..", "docs", "publisher.md")))
	for _, c := range codes[1:] {
		row := fmt.Sprintf("| `%s` | %s | %s |", c.Code, c.Severity, c.Summary)
		if !strings.Contains(doc, row) {
			t.Errorf("docs/publisher.md lacks the row\n%s", row)
		}
	}
}
