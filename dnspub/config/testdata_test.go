package config

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestTestdata: the example configs in testdata/publisher are valid, and
// the built-in example is the one documented there.
func TestTestdata(t *testing.T) {
	dir := filepath.Join("..", "..", "testdata", "publisher")
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
		t.Error("testdata/publisher/example.yaml differs from the built-in example dnspub/config/example.yaml: copy it over")
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

// TestCodesRegistered: every code the package reports is in the registry
// (severityOf would panic on a config that triggers an unregistered one).
func TestCodesRegistered(t *testing.T) {
	files, _ := filepath.Glob("*.go")
	re := regexp.MustCompile(`"([a-z]+(?:-[a-z0-9]+)+)"`)
	used := map[string]bool{}
	for _, f := range files {
		if f == "codes.go" || filepath.Ext(f) != ".go" || len(f) > 8 && f[len(f)-8:] == "_test.go" {
			continue
		}
		for _, m := range re.FindAllSubmatch(mustRead(t, f), -1) {
			used[string(m[1])] = true
		}
	}
	delete(used, "hmac-sha256")       // a key algorithm, not a code
	delete(used, "duration-fraction") // serviceconfig's code, which the publisher fixes
	delete(used, "null-value")        // likewise
	for c := range used {
		if _, ok := codeIndex[c]; !ok {
			t.Errorf("code %q is reported but not registered in codes.go", c)
		}
	}
	for _, c := range codes {
		if !used[c.Code] {
			t.Errorf("code %q is registered but never reported", c.Code)
		}
	}
}

// TestDocsExample: the config reference in docs/publisher.md is valid.
func TestDocsExample(t *testing.T) {
	doc := mustRead(t, filepath.Join("..", "..", "docs", "publisher.md"))
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
	doc := string(mustRead(t, filepath.Join("..", "..", "docs", "publisher.md")))
	for _, c := range codes {
		row := fmt.Sprintf("| `%s` | %s | %s |", c.Code, c.Severity, c.Summary)
		if !strings.Contains(doc, row) {
			t.Errorf("docs/publisher.md lacks the row\n%s", row)
		}
	}
}
