package model

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
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
	for _, br := range yamlBreaks {
		f.Add([]byte(`{"a":"x` + br + `y"}`))
	}
	f.Fuzz(func(t *testing.T, text []byte) {
		checkJSON(t, text)
	})
}
