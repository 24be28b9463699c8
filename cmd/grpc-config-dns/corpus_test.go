package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// corpusCase is one line of testdata/corpus/MANIFEST.
type corpusCase struct {
	file  string
	valid bool
	codes []string
}

func readManifest(t *testing.T) []corpusCase {
	t.Helper()
	f, err := os.Open("../../testdata/corpus/MANIFEST")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var cases []corpusCase
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) < 2 || (fields[1] != "valid" && fields[1] != "invalid") {
			t.Fatalf("MANIFEST: bad line %q", line)
		}
		cases = append(cases, corpusCase{file: fields[0], valid: fields[1] == "valid", codes: fields[2:]})
	}
	return cases
}

var updateManifest = flag.Bool("update-manifest", false, "rewrite testdata/corpus/MANIFEST with the verdicts and codes lint reports now (review the diff!)")

// TestLintCorpus runs `lint --format json` on every corpus record, through
// the CLI's own code path, and checks the verdict, the exit status and the
// exact set of diagnostic codes.
func TestLintCorpus(t *testing.T) {
	cases := readManifest(t)
	if len(cases) < 80 {
		t.Errorf("corpus has %d records, want at least 80", len(cases))
	}
	listed := map[string]bool{}
	actual := map[string]string{}
	defer func() {
		if *updateManifest {
			rewriteManifest(t, actual)
		}
	}()
	for _, c := range cases {
		listed[c.file] = true
		t.Run(c.file, func(t *testing.T) {
			path := filepath.Join("../../testdata/corpus", c.file)
			var stdout, stderr bytes.Buffer
			code := run([]string{"lint", "--format", "json", path}, nil, &stdout, &stderr)
			var rep lintReport
			if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
				t.Fatalf("lint output is not JSON: %v\n%s\nstderr: %s", err, stdout.String(), stderr.String())
			}
			if len(rep.Inputs) != 1 {
				t.Fatalf("got %d inputs in the report", len(rep.Inputs))
			}
			in := rep.Inputs[0]
			wantCode := exitOK
			if !c.valid {
				wantCode = exitInvalid
			}
			if in.Valid != c.valid || code != wantCode {
				t.Errorf("valid=%v exit=%d, want valid=%v exit=%d", in.Valid, code, c.valid, wantCode)
			}
			var got []string
			defer func() {
				verdict := "invalid"
				if in.Valid {
					verdict = "valid"
				}
				actual[c.file] = strings.Join(append([]string{c.file, verdict}, got...), " ")
			}()
			for _, d := range in.Diagnostics {
				got = append(got, d.Code)
				if d.Message == "" {
					t.Errorf("diagnostic %s has no message", d.Code)
				}
			}
			want := slices.Clone(c.codes)
			slices.Sort(got)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("codes %v, want %v", got, want)
				for _, d := range in.Diagnostics {
					t.Logf("  %s", formatDiagnostic(c.file, d.lintDiagnostic))
				}
			}
		})
	}
	// Every file in the corpus must be listed, so none is silently skipped.
	entries, _ := os.ReadDir("../../testdata/corpus")
	for _, e := range entries {
		if e.Name() != "MANIFEST" && !listed[e.Name()] {
			t.Errorf("testdata/corpus/%s is not in MANIFEST", e.Name())
		}
	}
}

func rewriteManifest(t *testing.T, actual map[string]string) {
	path := "../../testdata/corpus/MANIFEST"
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, line := range strings.Split(strings.TrimRight(string(b), "\n"), "\n") {
		if f := strings.Fields(line); len(f) > 0 && !strings.HasPrefix(line, "#") {
			if a, ok := actual[f[0]]; ok {
				line = a
			}
		}
		out = append(out, line)
	}
	if err := os.WriteFile(path, []byte(strings.Join(out, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}
