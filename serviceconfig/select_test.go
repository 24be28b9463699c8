package serviceconfig

import (
	"strconv"
	"testing"
)

const canary = `[
 {"clientLanguage":["GO","Java"],"percentage":20,"serviceConfig":{"loadBalancingConfig":[{"round_robin":{}}]}},
 {"clientHostname":["canary-1"],"serviceConfig":{"methodConfig":[{"name":[{}],"timeout":"1s"}]}},
 {"clientLanguage":[],"clientHostname":[],"serviceConfig":{}}
]`

func TestSelect(t *testing.T) {
	ch, err := ParseChoices([]byte(canary))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		client Client
		want   int
	}{
		{"go in the canary", Client{Language: "go", Hostname: "web-1", Bucket: 20}, 0},
		{"language is case-insensitive", Client{Language: "JAVA", Hostname: "web-1", Bucket: 1}, 0},
		{"bucket above the percentage", Client{Language: "go", Hostname: "web-1", Bucket: 21}, 2},
		{"other language", Client{Language: "c++", Hostname: "web-1", Bucket: 1}, 2},
		{"hostname is exact", Client{Language: "c++", Hostname: "canary-1", Bucket: 50}, 1},
		{"hostname is case-sensitive", Client{Language: "c++", Hostname: "Canary-1", Bucket: 50}, 2},
		{"empty lists match everyone", Client{Language: "", Hostname: "", Bucket: 100}, 2},
	} {
		if got := ch.Select(tc.client); got != tc.want {
			t.Errorf("%s: Select = %d, want %d", tc.name, got, tc.want)
		}
	}
}

func TestSelectPercentageBoundaries(t *testing.T) {
	for _, tc := range []struct {
		pct, bucket int
		match       bool
	}{{0, 1, false}, {1, 1, true}, {1, 2, false}, {50, 50, true}, {50, 51, false}, {100, 100, true}} {
		ch, err := ParseChoices([]byte(`[{"percentage":` + itoa(tc.pct) + `,"serviceConfig":{}}]`))
		if err != nil {
			t.Fatal(err)
		}
		if got := ch.Select(Client{Bucket: tc.bucket}) == 0; got != tc.match {
			t.Errorf("percentage %d, bucket %d: match %v, want %v", tc.pct, tc.bucket, got, tc.match)
		}
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

func TestSelectNone(t *testing.T) {
	ch, err := ParseChoices([]byte(`[{"clientLanguage":["java"],"serviceConfig":{}}]`))
	if err != nil {
		t.Fatal(err)
	}
	if got := ch.Select(Client{Language: "go", Bucket: 1}); got != -1 {
		t.Errorf("Select = %d, want -1", got)
	}
}

func TestExplain(t *testing.T) {
	ch, err := ParseChoices([]byte(canary))
	if err != nil {
		t.Fatal(err)
	}
	vs := ch.Explain(Client{Language: "go", Hostname: "canary-1", Bucket: 37})
	want := []string{
		`choice 0: skipped: clientLanguage ["GO", "Java"] includes "go"; NO: bucket 37 > percentage 20; any host (no clientHostname)`,
		`choice 1: selected: any language (no clientLanguage); any bucket (no percentage); clientHostname ["canary-1"] includes "canary-1"`,
		`choice 2: matches, but an earlier choice was selected: any language (empty clientLanguage); any bucket (no percentage); any host (empty clientHostname)`,
	}
	for i, v := range vs {
		if v.String() != want[i] {
			t.Errorf("verdict %d:\n got %s\nwant %s", i, v, want[i])
		}
	}
}

func TestParseChoicesRejects(t *testing.T) {
	for _, in := range []string{
		`{}`, `[]`, `[1]`, `[{"serviceConfig":{},"clientHostName":["x"]}]`, `[{"percentage":50.5,"serviceConfig":{}}]`,
		`[{"percentage":"50","serviceConfig":{}}]`, `[{"percentage":-1,"serviceConfig":{}}]`, `[{"percentage":101,"serviceConfig":{}}]`,
		`[{"clientLanguage":"go","serviceConfig":{}}]`, `[{"clientLanguage":["go"]}]`, `[{"serviceConfig":[]}]`,
		`[{"serviceConfig":{},"serviceConfig":{}}]`, `[{"serviceConfig":{}}`,
	} {
		if _, err := ParseChoices([]byte(in)); err == nil {
			t.Errorf("ParseChoices(%s) accepted", in)
		} else if _, ok := err.(*InvalidError); !ok {
			t.Errorf("ParseChoices(%s): error %T, want *InvalidError", in, err)
		}
	}
}

// A client validates only the chosen config (gRFC A21): a bad config in a
// choice for another language does not make the record unusable.
func TestOnlyChosenConfigIsValidated(t *testing.T) {
	ch, err := ParseChoices([]byte(`[{"clientLanguage":["java"],"serviceConfig":{"methodConfig":[{"name":[{}],"timeout":"1m"}]}},{"serviceConfig":{}}]`))
	if err != nil {
		t.Fatalf("structure is valid: %v", err)
	}
	i := ch.Select(Client{Language: "go", Bucket: 1})
	if i != 1 || ch.Validate(i).HasErrors() {
		t.Fatalf("chose %d", i)
	}
	ds := ch.Validate(0)
	if !ds.HasErrors() || ds[0].Path != "/0/serviceConfig/methodConfig/0/timeout" {
		t.Fatalf("Validate(0) = %v", ds)
	}
	if got := string(ch.CompactConfig(1)); got != "{}" {
		t.Errorf("CompactConfig = %s", got)
	}
}

func FuzzParseChoices(f *testing.F) {
	f.Add([]byte(canary))
	f.Add([]byte(a2Value))
	f.Add([]byte(`[{"percentage":100,"clientHostname":["h"],"serviceConfig":{"retryThrottling":{"maxTokens":10,"tokenRatio":0.1}}}]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		ch, err := ParseChoices(b)
		if err != nil {
			if _, ok := err.(*InvalidError); !ok {
				t.Fatalf("error %T", err)
			}
			return
		}
		for _, bucket := range []int{1, 50, 100} {
			if i := ch.Select(Client{Language: "go", Hostname: "h", Bucket: bucket}); i >= 0 {
				ch.Validate(i)
				if _, err := ParseChoices(ch.Compact()); err != nil {
					t.Fatalf("compact form rejected: %v", err)
				}
			}
		}
		// The TXT round trip keeps the value.
		value, err := DecodeTXT([][]string{EncodeTXT(ch.Compact())})
		if err != nil || string(value) != string(ch.Compact()) {
			t.Fatalf("TXT round trip: %v", err)
		}
	})
}

// A Choices built by hand, without parsing, works as the parsed JSON of
// its fields would: nothing panics, and what cannot be JSON is reported.
func TestHandBuiltChoices(t *testing.T) {
	expr, err := parseConstraintsJSON([]byte(`{"constraint":{"key":"env","value":"prod"}}`))
	if err != nil {
		t.Fatal(err)
	}
	ch := &Choices{List: []Choice{
		{ClientLanguage: []string{"java"}, Percentage: -1, ServiceConfig: []byte(`{"loadBalancingPolicy":"round_robin"}`)},
		{Percentage: 20, ClientHostname: []string{"web-\"1\""}, Constraints: expr, ServiceConfig: []byte(` { "methodConfig" : [ ] } `)},
		{Percentage: -1}, // no service config: {}
	}}
	want := `[{"clientLanguage":["java"],"serviceConfig":{"loadBalancingPolicy":"round_robin"}},` +
		`{"percentage":20,"clientHostname":["web-\"1\""],"dynamicParameterConstraints":{"constraint":{"key":"env","value":"prod"}},"serviceConfig":{"methodConfig":[]}},` +
		`{"serviceConfig":{}}]`
	if got := string(ch.Compact()); got != want {
		t.Errorf("Compact:\n%s\nwant\n%s", got, want)
	}
	if got := string(ch.CompactConfig(1)); got != `{"methodConfig":[]}` {
		t.Errorf("CompactConfig(1) = %s", got)
	}
	if got := string(ch.GrpcGoConfig(0)); got != `{"loadBalancingPolicy":"round_robin"}` {
		t.Errorf("GrpcGoConfig(0) = %s", got)
	}
	if ds := ch.Validate(0); ds.HasErrors() || len(ds) != 1 || ds[0].Path != "/0/serviceConfig/loadBalancingPolicy" {
		t.Errorf("Validate(0) = %v, want the warning about loadBalancingPolicy, at its place", ds)
	}
	if i := ch.Select(Client{Language: "go", Bucket: 50, Params: map[string]string{"env": "prod"}}); i != 2 {
		t.Errorf("Select = %d, want 2", i)
	}

	bad := &Choices{List: []Choice{{Percentage: 101, ServiceConfig: []byte(`{"timeout":`)}}}
	ds := bad.Validate(0)
	if !ds.HasErrors() {
		t.Errorf("Validate of a service config that is not JSON: %v", ds)
	}
	if got := string(bad.Compact()); got != `[{"percentage":101,"serviceConfig":{"timeout":}]` {
		t.Errorf("Compact writes the fields as given: %s", got)
	}
	if got := string(bad.CompactConfig(0)); got != `{"timeout":` {
		t.Errorf("CompactConfig(0) = %s", got)
	}
	(&Choices{}).Compact()
}
