package serviceconfig

import (
	"fmt"
	"github.com/grpc-config-dns/grpc-config-dns/internal/jtree"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// referencePublish is Publish as it was before it reused what lint learned:
// lint with every layer (the JSON Schema too) and every message, then each
// rewrite and grpc-go's verdict parsing and validating the value anew. It
// is kept to hold Publish to the same records and diagnostics.
func referencePublish(src Source, opts PublishOptions) (*Record, Diagnostics) {
	lo := opts.LintOptions()
	lo.rewritten = txtFormCodes // the publisher encodes the TXT record anew
	r := referenceRead(src, lo)
	out := make(Diagnostics, 0, len(r.ds))
	for _, d := range r.ds {
		switch {
		case d.Code == codeDurationFraction.String() && opts.NineDigitDurations:
			continue
		case d.Code == codeNullValue.String() && opts.OmitNulls:
			continue
		case isSizeCode(d.Code):
			continue
		}
		out = append(out, d)
	}
	if out.HasErrors() || r.ch == nil {
		return nil, out
	}
	value, bad := referencePublished(r.ch, opts)
	if bad != nil {
		return nil, append(out, r.placed(bad)...)
	}
	if bad := rebuiltProblems(value); bad != nil {
		return nil, append(out, r.placed(bad)...)
	}
	sizes := r.placed(sizeDiagnostics(opts.Owner, EncodeTXT(value)))
	out = append(out, sizes...)
	if sizes.HasErrors() {
		return nil, out
	}
	return &Record{Value: value, TXT: EncodeTXT(value)}, out
}

// referenceRead is Source.read as it was.
func referenceRead(s Source, lo LintOptions) reading {
	switch {
	case s.Text != nil:
		_, ds := Lint(s.Text, lo)
		r := reading{ds: ds}
		if r.ch, _ = choicesFromText(s.Text); r.ch != nil {
			r.src, r.bare = r.ch.src, r.ch.src.wrapped
		}
		return r
	case s.JSON != nil:
		ds, _ := lintJSON(s.JSON, s.Kind, lo)
		r := reading{ds: ds, bare: s.Kind == KindServiceConfig}
		value := s.JSON
		if r.bare {
			value = wrapConfig(value)
		}
		r.ch, _ = ParseChoices(value)
		return r
	}
	ch, _ := choicesFromRecords(s.Records)
	return reading{ch: ch, ds: LintRecords(s.Records, lo)}
}

// publishOptionSets are the compat settings the differential tests try.
func publishOptionSets() []PublishOptions {
	def := DefaultPublishOptions()
	lax := def
	lax.AllowGrpcGoFailure, lax.AllowMisspelledFields = true, true
	return []PublishOptions{def, lax, {}, {NineDigitDurations: true, Owner: "_grpc_config.a-rather-long-service-name.example.test."}, {OmitNulls: true}}
}

// publishSources are the ways a tool hands text to Publish: as a text,
// and as the JSON or TXT records it holds.
func publishSources(text []byte) []Source {
	srcs := []Source{{Text: text}}
	switch k := DetectKind(text); k {
	case KindChoices, KindServiceConfig:
		srcs = append(srcs, Source{JSON: text, Kind: k})
	case KindTXT:
		if recs, _, bad := textRecords(text); bad == nil {
			srcs = append(srcs, Source{Records: recs})
			if v, err := DecodeTXT(recs); err == nil {
				srcs = append(srcs, Source{JSON: v, Kind: KindChoices})
			}
		}
	}
	return srcs
}

// checkPublishAgainstReference reports where Publish and referencePublish
// differ on text.
func checkPublishAgainstReference(t *testing.T, name string, text []byte) {
	t.Helper()
	for _, src := range publishSources(text) {
		for _, opts := range publishOptionSets() {
			rec, ds := Publish(src, opts)
			wantRec, wantDs := referencePublish(src, opts)
			if !reflect.DeepEqual(rec, wantRec) || !reflect.DeepEqual(ds, wantDs) {
				t.Errorf("%s (%s, %+v):\nPublish:   %v %v\nreference: %v %v", name, sourceKind(src), opts, rec, ds, wantRec, wantDs)
			}
		}
	}
}

func sourceKind(s Source) string {
	switch {
	case s.Text != nil:
		return "text"
	case s.JSON != nil:
		return fmt.Sprintf("JSON %v", s.Kind)
	}
	return "records"
}

// FuzzPublishMatchesReference holds Publish, which reuses the lint pass's
// findings for its rewrites and for grpc-go's verdict and leaves the JSON
// Schema out, to the records and diagnostics of the reference that checks
// everything anew, over the corpus, the peer vectors, the examples of the
// benchmarks, and what the fuzzer makes of them.
func FuzzPublishMatchesReference(f *testing.F) {
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
	bench, err := os.ReadFile("../testdata/bench/choices-4k.json")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(bench)
	f.Add(fleetServiceConfig)
	f.Fuzz(func(t *testing.T, text []byte) {
		checkPublishAgainstReference(t, "input", text)
	})
}

// The reference and Publish agree on inputs whose facts are incomplete
// too (past the cap, fields in another case), and on the grpc-go verdicts
// that refuse a record.
func TestPublishMatchesReferenceEdges(t *testing.T) {
	many := `[` + strings.Repeat(`{"clientHostname":["h"],"serviceConfig":{"methodConfig":[{"name":[{}],"timeout":"0.1s","waitForReady":null}]}},`, 60) + `{"serviceConfig":{}}]`
	// Past the cap, where the schema's findings add to the count of
	// warnings left out (found in review: 22 more instead of 32).
	var capped strings.Builder
	capped.WriteString("[")
	for i := range 110 {
		fmt.Fprintf(&capped, `{"percentage":%d,"serviceConfig":{"foo":1}},`, i%100)
	}
	capped.WriteString(`{"serviceConfig":{}}]`)
	for _, text := range []string{
		many,
		capped.String(),
		`{"methodConfig":[{"name":[{}],"Timeout":"0.5s"}]}`,
		`[{"clientLanguage":["GO"],"serviceConfig":{"methodConfig":[{"name":[{}],"retryPolicy":{"maxAttempts":"3","initialBackoff":"0.1s","maxBackoff":"1s","backoffMultiplier":2,"retryableStatusCodes":["UNAVAILABLE"]}}]}},{"serviceConfig":{}}]`,
		`[{"percentage":50,"serviceConfig":{"loadBalancingConfig":[]}},{"clientHostname":null,"serviceConfig":{"methodConfig":[{"name":[{"service":"s"}],"timeout":"1.5s"}]}}]`,
		`[{"clientLanguage":["java"],"serviceConfig":{}}]`,
		`{"methodConfig":[{"name":[{}],"timout":"1s"}]}`,
		// Bare configs nested up to the parser's limit, which the list
		// that wraps them passes two levels earlier (found in review: a
		// refusal that said the rebuilt record was broken).
		nested(jtree.MaxDepth - 3), nested(jtree.MaxDepth - 2), nested(jtree.MaxDepth - 1), nested(jtree.MaxDepth),
	} {
		checkPublishAgainstReference(t, text, []byte(text))
	}
}

// nested is a bare service config whose objects nest depth deep.
func nested(depth int) string {
	return strings.Repeat(`{"x":`, depth-1) + "{}" + strings.Repeat("}", depth-1)
}
