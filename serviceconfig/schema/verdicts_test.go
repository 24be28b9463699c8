package schema

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

var updateVerdicts = flag.Bool("update-verdicts", false, "rewrite testdata/schema-verdicts.txt")

// TestCorpusVerdicts writes down, for every JSON file of the corpus,
// whether the schema (as a whole: a choice list or a service config)
// accepts it, as this Go validator decides. .ci/schema-check.sh has ajv
// decide the same files and compares: the schema means the same in Go and
// in ECMA-262 engines (editors, ajv), issue 18.
//
//	go test ./serviceconfig/schema -run CorpusVerdicts -update-verdicts
func TestCorpusVerdicts(t *testing.T) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(ServiceConfig))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(ServiceConfigID, doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile(ServiceConfigID)
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob("../../testdata/corpus/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no corpus: %v", err)
	}
	var out strings.Builder
	out.WriteString("# Whether the JSON Schema accepts each JSON file of the corpus (not lint's verdict:\n")
	out.WriteString("# see MANIFEST). Written by go test ./serviceconfig/schema -run CorpusVerdicts -update-verdicts;\n")
	out.WriteString("# .ci/schema-check.sh checks that ajv agrees.\n")
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		verdict := "valid"
		if inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(b)); err != nil {
			verdict = "unparsable"
		} else if err := sch.Validate(inst); err != nil {
			verdict = "invalid"
		}
		fmt.Fprintf(&out, "%s %s\n", filepath.Base(f), verdict)
	}
	const golden = "../../testdata/schema-verdicts.txt"
	if *updateVerdicts {
		if err := os.WriteFile(golden, []byte(out.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if have, _ := os.ReadFile(golden); string(have) != out.String() {
		t.Errorf("%s is stale: go test ./serviceconfig/schema -run CorpusVerdicts -update-verdicts", golden)
	}
}

// TestUnknownFieldsInOrder: a value with several unknown members gets the
// same findings, in the same order, with the same message, at every run
// (the validator lists them in map order; a Parser compared with a fresh
// read found the difference).
func TestUnknownFieldsInOrder(t *testing.T) {
	inst := map[string]any{"methodConfig": []any{map[string]any{"name": []any{map[string]any{}}, "retryPolicy": map[string]any{
		"maxAttempts": 2.0, "initialBackoff": "1s", "maxBackoff": "2s", "backoffMultiplier": 2.0, "retryableStatusCodes": []any{"UNAVAILABLE"},
		"zeta": 1.0, "alpha": 1.0, "mu": 1.0, "beta": 1.0, "omega": 1.0}}}}
	var first string
	for i := range 50 {
		var b strings.Builder
		for _, f := range validate(inst, false) {
			fmt.Fprintf(&b, "%s %s: %s\n", f.Code, strings.Join(f.Loc, "/"), f.Message())
		}
		if i == 0 {
			first = b.String()
			if !strings.Contains(first, "'alpha', 'beta', 'mu', 'omega', 'zeta'") {
				t.Fatalf("findings:\n%s", first)
			}
		} else if b.String() != first {
			t.Fatalf("run %d:\n%s\nfirst:\n%s", i, b.String(), first)
		}
	}
}
