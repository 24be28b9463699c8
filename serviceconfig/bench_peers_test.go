package serviceconfig

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// peerInputs returns the text lint reads for every vector of the peers'
// test suites (testdata/peers).
func peerInputs(b *testing.B) [][]byte {
	paths, _ := filepath.Glob("../testdata/peers/*.json")
	var out [][]byte
	for _, p := range paths {
		raw, err := os.ReadFile(p)
		if err != nil {
			b.Fatal(err)
		}
		var f struct {
			Vectors []struct{ Kind, Policy, Input string }
		}
		if err := json.Unmarshal(raw, &f); err != nil {
			b.Fatal(err)
		}
		for _, v := range f.Vectors {
			if v.Kind == "lb-config" {
				v.Input = `{"loadBalancingConfig":[{"` + v.Policy + `":` + v.Input + `}]}`
			}
			out = append(out, []byte(v.Input))
		}
	}
	if len(out) < 250 {
		b.Fatalf("only %d vectors", len(out))
	}
	return out
}

// BenchmarkLintPeerVectors lints every vector of the differential suite
// once per iteration: the cost of lint on the inputs the peers test with.
// It is written against the API lint had before the suite, so that one
// run can compare it with an older checkout (docs/peers.md).
func BenchmarkLintPeerVectors(b *testing.B) {
	inputs := peerInputs(b)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		for _, in := range inputs {
			Lint(in, LintOptions{})
		}
	}
}
