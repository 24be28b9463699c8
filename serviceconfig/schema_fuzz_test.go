package serviceconfig

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/grpc-config-dns/grpc-config-dns/serviceconfig/internal/schemalayer"
)

// FuzzSchemaAddsNothing is the evidence Publish rests on when it leaves
// the JSON Schema layer out of records the Go rules accept
// (LintOptions.lazySchema): for any input without an error, Lint says
// exactly the same with the layer and without it, because the Go rules
// already report everything the schema finds. An input where the schema
// adds a finding is a gap in the Go rules, to be closed there; the inputs
// the fuzzer found are kept in testdata/fuzz/FuzzSchemaAddsNothing: a
// field named in another case (the Go rules now call it unknown too), and
// constraints nested past the depth the Go rules read, whose contents the
// schema still checks (an invalid record: the layer runs for those).
//
// Past the cap the Go rules only count, and the schema's findings add to
// the count, so the layer runs there too and the property is for inputs
// with nothing left out.
//
// The seeds are the corpus and the peer vectors, read where they live
// rather than copied. Run it with
// go test -run XXX -fuzz FuzzSchemaAddsNothing -fuzztime 3m ./serviceconfig
func FuzzSchemaAddsNothing(f *testing.F) {
	if schemalayer.Validate == nil {
		f.Fatal("the schema layer is not linked into the tests")
	}
	for _, name := range corpusFiles(f) {
		text, err := os.ReadFile(filepath.Join("../testdata/corpus", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(text)
	}
	for _, pf := range loadPeerFiles(f) {
		for _, v := range pf.Vectors {
			f.Add([]byte(v.text()))
		}
	}
	f.Fuzz(func(t *testing.T, text []byte) {
		_, with := Lint(text, LintOptions{})
		_, without := Lint(text, LintOptions{goRulesOnly: true})
		if !reflect.DeepEqual(with, without) && !without.HasErrors() && !capped(without) {
			t.Errorf("the schema layer adds to the Go rules:\nwith:    %v\nwithout: %v", with, without)
		}
	})
}

// capped reports whether ds left diagnostics out (past MaxDiagnostics).
func capped(ds Diagnostics) bool {
	for _, d := range ds {
		if e, w := d.OmittedCounts(); e+w > 0 {
			return true
		}
	}
	return false
}
