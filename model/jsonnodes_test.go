package model

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/grpc-config-dns/grpc-config-dns/serviceconfig/policy"
)

// checkJSON fails t when readJSON reads text and yaml.v3 does not, or
// reads it differently; it reports whether readJSON read it. It reads
// text twice with a scratch that read something else before, and once
// without one.
func checkJSON(t *testing.T, text []byte) bool {
	t.Helper()
	var scratch yamlScratch
	readJSON([]byte(`{"before":[1,2,{"x":"y"}],"anchor":"a"}`), &scratch)
	got, ok := readJSON(text, &scratch)
	checkLazy(t, text, &scratch)
	if fresh, fok := readJSON(text, nil); fok != ok || ok && sameNodes(got, fresh, "") != "" {
		t.Fatalf("readJSON reads %q otherwise with a used scratch", text)
	}
	if !ok {
		return false
	}
	var want yaml.Node
	if err := yaml.Unmarshal(text, &want); err != nil {
		t.Fatalf("readJSON read %q, which yaml.v3 refuses: %v", text, err)
	}
	if d := sameNodes(got, &want, ""); d != "" {
		t.Fatalf("readJSON reads %q differently from yaml.v3: %s", text, d)
	}
	return true
}

// checkLazy fails t unless each node the last read with scratch left
// unmade converts, once made, to the text toJSON writes for it unmade,
// with nothing reported; it leaves every node made.
func checkLazy(t *testing.T, text []byte, scratch *yamlScratch) {
	t.Helper()
	d := newDoc(text)
	d.scratch = scratch
	for len(scratch.lazy) > 0 {
		n := scratch.lazy[0].node
		j, ok := d.toJSON(n, "")
		if !ok || j.lazy != n {
			t.Fatalf("%q: toJSON of a node left unmade: ok %v, written from its text %v", text, ok, j.lazy == n)
		}
		lazyText := string(j.text)
		d.materialize(n)
		if len(scratch.lazy) > 0 && scratch.lazy[0].node == n {
			t.Fatalf("%q: materialize left the node unmade", text)
		}
		made := newDoc(text)
		mj, ok := made.toJSON(n, "")
		if !ok || len(made.diagnostics()) > 0 || string(mj.text) != lazyText {
			t.Fatalf("%q: a node left unmade is written %s, and %s made (ok %v, %v)", text, lazyText, mj.text, ok, made.diagnostics())
		}
	}
}

// The JSON that store specs and JSON configs are made of is read as
// yaml.v3 reads it; what yaml.v3 reads otherwise is left to it.
func TestReadJSON(t *testing.T) {
	for _, tc := range []struct {
		text string
		read bool
	}{
		{`{"addresses":["10.0.0.1"],"serviceConfig":{"methodConfig":[{"name":[{"service":"fleet.v1.Service1"}],"timeout":"1s","retryPolicy":{"maxAttempts":3,"initialBackoff":"0.1s","maxBackoff":"1s","backoffMultiplier":2,"retryableStatusCodes":["UNAVAILABLE"]}}]}}`, true},
		{"{\n  \"zones\": [\n    {\"origin\": \"é.test.\", \"ttl\": 30, \"x\": null, \"y\": true, \"z\": -0.5e3, \"w\": {}}\n  ],\n  \"e\": []\n}\n", true},
		{`[1, -0, 1.0, 1e400, 18446744073709551616, 9223372036854775807, "\u00e9\n\"\\", "<<", "~", "null", "0x10"]`, true},
		{`{"a":"\\ud800"}`, true},
		{`{"a":"\/"}`, false}, // not a YAML escape
		{` {"a": "b"} `, true},

		{`{"a":"\ud800"}`, false},       // yaml.v3 refuses a surrogate
		{"{\"a\":\t1}", false},          // a tab
		{"{\"a\":\r\n1}", false},        // a carriage return
		{"{\"a\":\"x\u2028y\"}", false}, // folded by YAML
		{`{"a":1,"a":2}`, false},        // duplicate: reported by the config
		{`"a"`, false},                  // not a collection
		{`{"a":1} x`, false},
		{`{a: 1}`, false},
		{"", false},
	} {
		if got := checkJSON(t, []byte(tc.text)); got != tc.read {
			t.Errorf("readJSON(%q) read: %v, want %v", tc.text, got, tc.read)
		}
	}
}

// Every JSON config in testdata is read by readJSON, as yaml.v3 reads it.
func TestReadJSONTestdata(t *testing.T) {
	files, _ := filepath.Glob("../testdata/publisher/*.json")
	if len(files) == 0 {
		t.Fatal("no JSON configs in testdata/publisher")
	}
	for _, f := range files {
		text, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if !checkJSON(t, text) && !strings.Contains(f, "invalid") {
			t.Errorf("%s is not read by readJSON", f)
		}
	}
}

// FuzzReadJSONAgreesWithYAML: whatever readJSON reads, yaml.v3 reads too,
// into the same nodes.
func FuzzReadJSONAgreesWithYAML(f *testing.F) {
	f.Add([]byte(`{"addresses":["10.0.0.1"],"serviceConfig":{"methodConfig":[{"name":[{"service":"s"}],"timeout":"1s"}]}}`))
	f.Add([]byte("[1, -0, 1.0, 1e400, \"\\u00e9\\n\\\"\\\\\", \"<<\", {\"a\": [true, false, null]}]"))
	f.Add([]byte("{\n \"a\": \"é\",\n \"b\": [\n  {}\n ]\n}"))
	f.Add([]byte("{\n  \"choices\": [{\"percentage\": 5, \"serviceConfig\": {\"x\": [1.5, -0, null]}}],\n  \"serviceConfig\": {\"a\": {\"b\": 1e3}}\n}"))
	f.Add([]byte(`{"serviceConfig": {"x": 1` + strings.Repeat("0", 320) + `, "y": 12345678901234567890}}`))
	for _, br := range yamlBreaks {
		f.Add([]byte(`{"a":"x` + br + `y"}`))
	}
	f.Fuzz(func(t *testing.T, text []byte) {
		checkJSON(t, text)
	})
}

// TestLazyConfigs: a service's config is left unmade when toJSON of it is
// its text without blanks, and made otherwise.
func TestLazyConfigs(t *testing.T) {
	for _, tc := range []struct {
		text string
		lazy int
	}{
		{`{"serviceConfig":{"methodConfig":[{"name":[{}],"timeout":"1s","retryPolicy":{"backoffMultiplier":1.5}}]}}`, 1},
		{"{\n  \"choices\": [\n    {\"percentage\": 50, \"serviceConfig\": {}}\n  ],\n  \"serviceConfig\": [null, true]\n}", 2},
		{`{"serviceConfig":{"retryPolicy":{"backoffMultiplier":1e2}}}`, 0}, // an exponent: it could overflow
		{`{"serviceConfig":{"x":"a\"b"}}`, 0},    // an escape
		{`{"serviceConfig":{"x":"é"}}`, 0},       // not ASCII
		{`{"serviceConfig":"x","choices":3}`, 0}, // not collections
		{`{"other":{"serviceConfig":{}}}`, 0},    // not the root's
		{`[{"serviceConfig":{}}]`, 0},
	} {
		var scratch yamlScratch
		if _, ok := readJSON([]byte(tc.text), &scratch); !ok {
			t.Fatalf("readJSON(%q) did not read it", tc.text)
		}
		if len(scratch.lazy) != tc.lazy {
			t.Errorf("readJSON(%q) left %d nodes unmade, want %d", tc.text, len(scratch.lazy), tc.lazy)
		}
		checkLazy(t, []byte(tc.text), &scratch)
		checkJSON(t, []byte(tc.text))
	}
}

// TestLazyConfigPlaced: a problem in a config left unmade is placed where
// it is written, with policies or without.
func TestLazyConfigPlaced(t *testing.T) {
	z := storeZone(t)
	lb, ds := ValidatePolicy(z, "lb", []byte(`{"targetRef":{"kind":"Zone"},"default":{"loadBalancingConfig":[{"round_robin":{}}]}}`))
	if lb == nil {
		t.Fatal(ds)
	}
	zp, err := z.WithPolicies([]*policy.Policy{lb})
	if err != nil {
		t.Fatal(err)
	}
	spec := "{\n  \"addresses\": [\"10.0.0.1\"],\n  \"serviceConfig\": {\n    \"methodConfig\": [{\n      \"name\": [{\"service\": \"a.B\"}],\n      \"timeout\": \"soon\"\n    }]\n  }\n}"
	for _, zone := range []*Zone{z, zp} {
		var v ServiceValidator
		for round := range 2 { // the second with a used scratch
			s, ds := v.Validate(zone, "echo", nil, []byte(spec), nil)
			if s != nil || len(ds) == 0 {
				t.Fatalf("policies %v, round %d: %v %v", zone.PolicySet != nil, round, s, ds)
			}
			d := ds[0]
			if d.Path != "/serviceConfig/methodConfig/0/timeout" || d.Line != 6 || d.Column != 18 || d.Offset != strings.Index(spec, `"soon"`) {
				t.Fatalf("policies %v, round %d: placed at %s %d:%d (offset %d), want /serviceConfig/methodConfig/0/timeout 6:18 (%d): %+v",
					zone.PolicySet != nil, round, d.Path, d.Line, d.Column, d.Offset, strings.Index(spec, `"soon"`), d)
			}
		}
	}
}

// A service's config left unmade in an item of a JSON config file is
// placed in the file: its problems are where they are written, as when the
// text is read whole (a comment after it keeps it from being cut, and from
// the JSON reader), with a policy or without, errors and warnings.
func TestLazyConfigPlacedInJSONFile(t *testing.T) {
	for _, text := range []string{
		`{"zones": [{"origin": "example.test.", "nameservers": [{"name": "ns1", "addresses": ["192.0.2.53"]}],
  "services": [
    {"name": "a", "addresses": ["10.0.0.1"]},
    {"name": "b",
     "serviceConfig": {
       "methodConfig": [{"name": [{"service": "a.B"}], "timeout": "soon"}]}}]}]}`,
		`{"zones": [{"origin": "example.test.", "nameservers": [{"name": "ns1", "addresses": ["192.0.2.53"]}],
  "policies": [{"name": "p", "targetRef": {"kind": "Zone"}, "default": {"waitForReady": true}}],
  "services": [{"name": "a", "addresses": ["10.0.0.1"], "serviceConfig": {"methodConfig": [{"name": [{}], "timeout": "0.5s"}]}},
    {"name": "b", "addresses": ["10.0.0.2"],
     "choices": [{"percentage": 50, "serviceConfig": {"loadBalancingPolicy": "round_robin"}},
       {"serviceConfig": {"methodConfig": [{"name": [{"service": "x.Y"}],
         "retryPolicy": {"maxAttempts": 1, "initialBackoff": "1s", "maxBackoff": "1s", "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]}}]}}]}]}]}`,
	} {
		cut, cutDs := Parse([]byte(text))
		whole, wholeDs := Parse([]byte(text + "\n# read whole\n"))
		if len(cutDs) == 0 || len(cutDs) != len(wholeDs) {
			t.Fatalf("%d diagnostics cut into items, %d read whole: %v\n%v", len(cutDs), len(wholeDs), cutDs, wholeDs)
		}
		for i := range cutDs {
			if cutDs[i] != wholeDs[i] {
				t.Errorf("cut into items: %+v\nread whole:     %+v", cutDs[i], wholeDs[i])
			}
		}
		if (cut == nil) != (whole == nil) {
			t.Fatalf("valid cut %v, whole %v", cut != nil, whole != nil)
		}
		if cut == nil {
			continue
		}
		for i := range cut.Zones {
			for k, s := range cut.Zones[i].Services {
				if w := whole.Zones[i].Services[k]; !slices.Equal(s.TXT, w.TXT) {
					t.Errorf("service %s publishes %q cut, %q whole", s.Name, s.TXT, w.TXT)
				}
			}
		}
	}
}

// A number float64 cannot hold is a string to YAML, and the converter
// writes it quoted: a config holding one is made, and publishes what the
// same config written in YAML does.
func TestLazyConfigHugeNumber(t *testing.T) {
	big := "1" + strings.Repeat("0", 400)
	z := storeZone(t)
	js, _ := ValidateService(z, "echo", nil, []byte(`{"serviceConfig":{"x":`+big+`}}`), nil)
	ys, _ := ValidateService(z, "echo", nil, []byte("serviceConfig:\n  x: "+big+"\n"), nil)
	if js == nil || ys == nil || strings.Join(js.TXT, "") != strings.Join(ys.TXT, "") {
		t.Fatalf("JSON spec publishes\n%q\nYAML spec publishes\n%q", js.TXT, ys.TXT)
	}
}
