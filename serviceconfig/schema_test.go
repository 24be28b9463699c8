package serviceconfig

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/grpc-config-dns/grpc-config-dns/internal/jtree"
	"github.com/grpc-config-dns/grpc-config-dns/serviceconfig/internal/schemalayer"
	"github.com/grpc-config-dns/grpc-config-dns/serviceconfig/schema"
)

// corpusFiles returns the names listed in testdata/corpus/MANIFEST.
func corpusFiles(t testing.TB) []string {
	f, err := os.Open("../testdata/corpus/MANIFEST")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var names []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line != "" && line[0] != '#' {
			names = append(names, strings.Fields(line)[0])
		}
	}
	return names
}

// corpusValue returns the JSON value a corpus record holds and its kind.
func corpusValue(text []byte) ([]byte, Kind) {
	switch k := DetectKind(text); k {
	case KindChoices, KindServiceConfig:
		return text, k
	case KindTXT:
		recs, _, bad := textRecords(text)
		if bad != nil {
			return nil, KindUnknown
		}
		v, err := DecodeTXT(recs)
		if err != nil {
			return nil, KindUnknown
		}
		return v, KindChoices
	}
	return nil, KindUnknown
}

// TestSchemaAgreesWithRules keeps the JSON Schema and the Go rules
// consistent over the whole corpus: everything the schema reports, the Go
// rules report too (same code, same value), and a value the schema rejects
// the Go rules reject. The Go rules may say more: the schema cannot express
// duplicate names, duration ranges and the like.
func TestSchemaAgreesWithRules(t *testing.T) {
	n := 0
	for _, name := range corpusFiles(t) {
		text, err := os.ReadFile(filepath.Join("../testdata/corpus", name))
		if err != nil {
			t.Fatal(err)
		}
		value, k := corpusValue(text)
		tr, err := jtree.Parse(value)
		if k == KindUnknown || err != nil {
			continue
		}
		n++
		c := newChecker(tr)
		if k == KindChoices {
			validateChoiceConfigs(c, parseChoices(c))
		} else {
			validateServiceConfig(c, 0)
		}
		schema := schemaDiagnostics(tr, k)
	next:
		for _, s := range schema {
			for _, g := range c.diags {
				if covers(g, s) {
					continue next
				}
			}
			t.Errorf("%s: the schema reports %s at %s (%s), the Go rules do not", name, s.Code, s.Path, s.Message)
		}
		if schema.HasErrors() && !c.diags.HasErrors() {
			t.Errorf("%s: the schema rejects it, the Go rules accept it", name)
		}
	}
	if n < 80 {
		t.Errorf("only %d corpus values checked", n)
	}
}

// TestSchemaCodes: the shipped schema compiles as editors would, and
// every x-code names a registered code.
func TestSchemaCodes(t *testing.T) {
	codes, err := schema.Codes()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range codes {
		if _, ok := lookupCode(c); !ok {
			t.Errorf("schema x-code %q is not a registered code", c)
		}
	}
	if len(codes) < 10 {
		t.Errorf("only %d x-codes", len(codes))
	}
}

// Without the schema package linked in, Lint runs the Go rules alone, and
// says the same over the whole corpus: the layer costs clients nothing
// they need.
func TestLintWithoutSchemaLayer(t *testing.T) {
	validate := schemalayer.Validate
	if validate == nil {
		t.Fatal("the schema layer is not linked into the tests")
	}
	for _, name := range corpusFiles(t) {
		text, err := os.ReadFile(filepath.Join("../testdata/corpus", name))
		if err != nil {
			t.Fatal(err)
		}
		_, with := Lint(text, LintOptions{})
		schemalayer.Validate = nil
		_, without := Lint(text, LintOptions{})
		schemalayer.Validate = validate
		if len(with) != len(without) {
			t.Errorf("%s: %d diagnostics with the schema layer, %d without:\n%v\n%v", name, len(with), len(without), with, without)
		}
	}
}
