package serviceconfig

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseDuration(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
		err  string
	}{
		{"1s", time.Second, ""},
		{"1.5s", 1500 * time.Millisecond, ""},
		{"0.000000001s", 1, ""},
		{"-2.25s", -2250 * time.Millisecond, ""},
		{"315576000000s", 1<<63 - 1, ""},
		{"0s", 0, ""},
		{"1", 0, `"s" suffix`},
		{"1m", 0, `write "60s"`},
		{"100ms", 0, `write "0.100000000s"`},
		{"1.s", time.Second, ""},
		{".5s", 500 * time.Millisecond, ""},
		{"+1s", time.Second, ""},
		{"-.25s", -250 * time.Millisecond, ""},
		{".s", 0, "digits before"},
		{"1.0000000001s", 0, "at most 9"},
		{"315576000001s", 0, "out of range"},
		{"99999999999999999999999s", 0, "out of range"},
		{"1e3s", 0, `"s" suffix`},
		{"s", 0, "digits before"},
		{"", 0, `"s" suffix`},
	} {
		got, err := parseDuration(tc.in)
		if tc.err == "" {
			if err != nil || got != tc.want {
				t.Errorf("parseDuration(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("parseDuration(%q) error %v, want one mentioning %q", tc.in, err, tc.err)
		}
	}
}

func TestFormatDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0: "0s", time.Second: "1s", 100 * time.Millisecond: "0.100000000s",
		-1500 * time.Millisecond: "-1.500000000s", 90 * time.Second: "90s",
	} {
		if got := formatDuration(d); got != want {
			t.Errorf("formatDuration(%v) = %s, want %s", d, got, want)
		}
		back, err := parseDuration(want)
		if err != nil || back != d {
			t.Errorf("parseDuration(%s) = %v, %v", want, back, err)
		}
	}
	// The edges of time.Duration, and a spread of values, as fmt writes
	// them.
	ref := func(d time.Duration) string {
		u, sign := uint64(d), ""
		if d < 0 {
			u, sign = -u, "-"
		}
		if u%1e9 == 0 {
			return fmt.Sprintf("%s%ds", sign, u/1e9)
		}
		return fmt.Sprintf("%s%d.%09ds", sign, u/1e9, u%1e9)
	}
	ds := []time.Duration{math.MinInt64, math.MinInt64 + 1, math.MaxInt64, -1, 1, 999_999_999, 1_000_000_001}
	for i := range 2000 {
		ds = append(ds, time.Duration(uint64(i)*0x9E3779B97F4A7C15))
	}
	for _, d := range ds {
		if got, want := formatDuration(d), ref(d); got != want {
			t.Errorf("formatDuration(%d) = %s, want %s", int64(d), got, want)
		}
	}
}

// Diagnostics carry the pointer, the position and a message with the fix.
func TestValidateDiagnostics(t *testing.T) {
	cfg := `{
  "methodConfig": [{
    "name": [{"service": "pkg.Echo"}],
    "retryPolicy": {"maxAttempts": 3, "initialBackoff": "0.100000000s", "maxBackoff": "1s",
                    "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE", "CANCELED"]},
    "waitForReadyy": true
  }]
}`
	ds := ValidateServiceConfig([]byte(cfg))
	if len(ds) != 2 {
		t.Fatalf("got %d diagnostics: %v", len(ds), ds)
	}
	d := ds[0]
	if d.Code != "status-code" || d.Path != "/methodConfig/0/retryPolicy/retryableStatusCodes/1" ||
		!strings.Contains(d.Message, `did you mean "CANCELLED"?`) || cfg[d.Offset:d.Offset+10] != `"CANCELED"` {
		t.Errorf("diagnostic 0: %+v", d)
	}
	d = ds[1]
	if d.Code != "unknown-field" || d.Severity != Warning || d.Path != "/methodConfig/0/waitForReadyy" ||
		!strings.Contains(d.Message, `did you mean "waitForReady"?`) {
		t.Errorf("diagnostic 1: %+v", d)
	}
}

func TestSuggest(t *testing.T) {
	known := []string{"maxAttempts", "initialBackoff", "maxBackoff", "backoffMultiplier", "retryableStatusCodes"}
	for in, want := range map[string]string{
		"max_attempts": "maxAttempts", "MaxAttempts": "maxAttempts", "maxAtempts": "maxAttempts",
		"retryableStatusCode": "retryableStatusCodes", "timeout": "", "backoff": "",
	} {
		if got := Suggest(in, known); got != want {
			t.Errorf("Suggest(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestLintPositionsInTXT(t *testing.T) {
	// The record as dig prints it, with escapes: positions point into this
	// text, not into the decoded JSON.
	text := "_grpc_config.echo.example.test. 30 IN TXT \"grpc_config=[{\\\"percentage\\\":500,\" \"\\\"serviceConfig\\\":{}}]\"\n"
	k, ds := Lint([]byte(text), LintOptions{})
	if k != KindTXT || len(ds) != 1 {
		t.Fatalf("kind %v, %v", k, ds)
	}
	d := ds[0]
	col := strings.Index(text, "500") + 1
	if d.Code != "choice-percentage" || d.Line != 1 || d.Column != col {
		t.Errorf("got %s at %d:%d, want choice-percentage at 1:%d", d.Code, d.Line, d.Column, col)
	}
}

func TestLintPositionsMultiLine(t *testing.T) {
	text := "[\n  {\n    \"serviceConfig\": {\n      \"methodConfig\": [{\"name\": [{}], \"timeout\": \"1m\"}]\n    }\n  }\n]\n"
	_, ds := Lint([]byte(text), LintOptions{})
	if len(ds) != 1 || ds[0].Line != 4 || ds[0].Column != 50 {
		t.Fatalf("got %v", ds)
	}
}

func TestDetectKind(t *testing.T) {
	for in, want := range map[string]Kind{
		`[{"serviceConfig":{}}]`:             KindChoices,
		" \n{\"methodConfig\":[]}":           KindServiceConfig,
		`{"zones":[]}`:                       KindPublisher,
		"{\n \"other\": 1, \"zones\": []\n}": KindPublisher,
		"zones:\n  - origin: x.\n":           KindPublisher,
		"# comment\nzones: []\n":             KindPublisher,
		`grpc_config=[]`:                     KindTXT,
		`"grpc_config=[]" "x"`:               KindTXT,
		"_grpc_config.x. 60 IN TXT \"a\"":    KindTXT,
		"hello":                              KindUnknown,
		"":                                   KindUnknown,
	} {
		if got := DetectKind([]byte(in)); got != want {
			t.Errorf("DetectKind(%q) = %v, want %v", in, got, want)
		}
	}
}

var updateCodes = flag.Bool("update-codes", false, "rewrite the code table in docs/codes.md")

// The table of diagnostic codes in docs/codes.md is generated from the
// registry, so users can look up every code:
// go test ./serviceconfig -run CodesDocTable -update-codes
func TestCodesDocTable(t *testing.T) {
	const file = "../docs/codes.md"
	const begin, end = "<!-- codes:begin -->\n", "<!-- codes:end -->"
	var table strings.Builder
	table.WriteString("| code | severity | meaning |\n|---|---|---|\n")
	for _, c := range Codes() {
		fmt.Fprintf(&table, "| `%s` | %s | %s |\n", c.Code, c.Severity, c.Summary)
	}
	syncDocSection(t, file, begin, end, table.String(), *updateCodes, "go test ./serviceconfig -run CodesDocTable -update-codes")
}

var updateRules = flag.Bool("update-rules", false, "rewrite the code table in docs/rules.md")

// Every code says why it has its severity, in docs/rules.md:
// go test ./serviceconfig -run RulesCodeTable -update-rules
func TestRulesCodeTable(t *testing.T) {
	const begin, end = "<!-- rules:begin -->\n", "<!-- rules:end -->"
	var table strings.Builder
	table.WriteString("| code | severity | why |\n|---|---|---|\n")
	for _, c := range Codes() {
		if c.Why == "" {
			t.Errorf("code %s says nothing about its severity", c.Code)
		}
		fmt.Fprintf(&table, "| `%s` | %s | %s |\n", c.Code, c.Severity, strings.ReplaceAll(c.Why, "|", "\\|"))
	}
	syncDocSection(t, "../docs/rules.md", begin, end, table.String(), *updateRules, "go test ./serviceconfig -run RulesCodeTable -update-rules")
}

func FuzzLint(f *testing.F) {
	f.Add([]byte(canary))
	f.Add([]byte(`_grpc_config.x 60 IN TXT "grpc_config=[{\"serviceConfig\":{}}]" "x"`))
	f.Add([]byte(`{"methodConfig":[{"name":[{"service":"a"}],"retryPolicy":{"maxAttempts":2}}]}`))
	f.Fuzz(func(t *testing.T, text []byte) {
		_, ds := Lint(text, LintOptions{})
		if len(ds) > MaxDiagnostics+1 {
			t.Fatalf("%d diagnostics", len(ds))
		}
		lines := bytes.Count(text, []byte("\n")) + 1
		for _, d := range ds {
			if _, ok := lookupCode(d.Code); !ok || d.Message == "" {
				t.Fatalf("bad diagnostic %+v", d)
			}
			if d.Line > lines {
				t.Fatalf("line %d beyond the input's %d lines: %+v", d.Line, lines, d)
			}
		}
	})
}

// FuzzValidateAgainstGrpcGo: whatever service config we accept without a
// warning that grpc-go rejects it, grpc-go accepts.
func FuzzValidateAgainstGrpcGo(f *testing.F) {
	f.Add([]byte(`{"methodConfig":[{"name":[{"service":"a.B","method":"C"}],"timeout":"1.5s","retryPolicy":{"maxAttempts":2,"initialBackoff":"1s","maxBackoff":"2s","backoffMultiplier":1.5,"retryableStatusCodes":[14,"UNAVAILABLE"]}}],"loadBalancingConfig":[{"round_robin":{}}]}`))
	f.Add([]byte(`{"loadBalancingPolicy":"round_robin","retryThrottling":{"maxTokens":10,"tokenRatio":0.5},"healthCheckConfig":{"serviceName":"x"}}`))
	f.Add([]byte(`{"loadBalancingConfig":[{"ring_hash_experimental":{"minRingSize":1,"maxRingSize":2}},{"pick_first":{"shuffleAddressList":true}}]}`))
	// proto3 JSON forms and the deep policy checks.
	f.Add([]byte(`{"methodConfig":[{"name":[{"service":null}],"timeout":".5s","maxRequestMessageBytes":"1024","retryPolicy":{"maxAttempts":"3","initialBackoff":"+1s","maxBackoff":"1.s","backoffMultiplier":"1.5","retryableStatusCodes":[14,"unavailable"]}}],"retryThrottling":{"maxTokens":1e1,"tokenRatio":0.5466}}`))
	f.Add([]byte(`{"loadBalancingPolicy":"ROUND_ROBIN","loadBalancingConfig":[]}`))
	f.Add([]byte(`{"loadBalancingConfig":[{"rls_experimental":{"routeLookupConfig":{"lookupService":"rls.example.com:80","cacheSizeBytes":"1","grpcKeybuilders":[{"names":[{"service":"foo"}],"headers":[{"key":"k","names":["n"]}],"extraKeys":{"host":"h"},"constantKeys":{"c":"v"}}]},"childPolicy":[{"unknown":{}},{"grpclb":{"childPolicy":[]}}],"childPolicyConfigTargetFieldName":"serviceName"}}]}`))
	f.Add([]byte(`{"loadBalancingConfig":[{"outlier_detection_experimental":{"interval":"1s","maxEjectionPercent":100,"successRateEjection":{},"failurePercentageEjection":{"threshold":85},"childPolicy":[{"round_robin":{}}]}},{"random_subsetting_experimental":{"subsetSize":2,"childPolicy":[{"pick_first":{}}]}},{}]}`))
	f.Fuzz(func(t *testing.T, cfg []byte) {
		ds := ValidateServiceConfig(cfg)
		if ds.HasErrors() {
			return
		}
		if grpcGoMayReject(ds) {
			return
		}
		if err := grpcGoParse(cfg); err != nil {
			t.Fatalf("we accept %s, grpc-go rejects it: %v", cfg, err)
		}
	})
}

func TestNineDigitDurations(t *testing.T) {
	in := `[{"serviceConfig":{"methodConfig":[{"name":[{}],"timeout":"0.1s","retryPolicy":{"maxAttempts":2,"initialBackoff":"1.25s","maxBackoff":"2s","backoffMultiplier":2,"retryableStatusCodes":["UNAVAILABLE"]}}],"loadBalancingConfig":[{"weighted_round_robin":{"blackoutPeriod":"0.5s"}}]}}]`
	want := `[{"serviceConfig":{"methodConfig":[{"name":[{}],"timeout":"0.100000000s","retryPolicy":{"maxAttempts":2,"initialBackoff":"1.250000000s","maxBackoff":"2s","backoffMultiplier":2,"retryableStatusCodes":["UNAVAILABLE"]}}],"loadBalancingConfig":[{"weighted_round_robin":{"blackoutPeriod":"0.500000000s"}}]}}]`
	got, err := nineDigitDurations([]byte(in))
	if err != nil || string(got) != want {
		t.Fatalf("got %s, %v\nwant %s", got, err, want)
	}
	// Lint has nothing left to say about grpc-js.
	if _, ds := Lint(got, LintOptions{}); len(ds) != 0 {
		t.Errorf("lint: %v", ds)
	}
	if _, err := nineDigitDurations([]byte(`[{"serviceConfig":{"methodConfig":[{"timeout":"1m"}]}}]`)); err == nil {
		t.Error("an invalid value was accepted")
	}
}

// Every code is registered with its text, severity, summary and reason;
// the texts are unique.
func TestEveryCodeRegistered(t *testing.T) {
	seen := map[string]bool{}
	for c := diagCode(1); c < numCodes; c++ {
		info := c.info()
		if info.Code == "" || info.Summary == "" || info.Why == "" || (info.Severity != Error && info.Severity != Warning) {
			t.Errorf("code %d after %q is not registered in full: %+v", c, codes[c-1].Code, info)
		}
		if seen[info.Code] {
			t.Errorf("code %q twice", info.Code)
		}
		seen[info.Code] = true
		if got, ok := lookupCode(info.Code); !ok || got != info {
			t.Errorf("lookupCode(%q) = %+v, %v", info.Code, got, ok)
		}
	}
}

// The JSON parser (internal/jtree) reports its own codes as text: each is
// one of ours, with its severity.
func TestParserCodesRegistered(t *testing.T) {
	for _, in := range []string{`[`, `{"a":1,"a":2}`, strings.Repeat("[", 10000)} {
		_, err := ParseChoices([]byte(in))
		var ie *InvalidError
		if !errors.As(err, &ie) || len(ie.Diagnostics) == 0 {
			t.Fatalf("%.20q: %v", in, err)
		}
		d := ie.Diagnostics[0]
		if info, ok := lookupCode(d.Code); !ok || info.Severity != d.Severity {
			t.Errorf("%.20q: code %q (%v) is not registered as such", in, d.Code, d.Severity)
		}
	}
}

func TestOmitNulls(t *testing.T) {
	in := `[{"clientLanguage":["GO"],"serviceConfig":{"retryThrottling":null}},{"serviceConfig":{"methodConfig":[{"name":[{"service":"s","method":null}],"timeout":"1s","waitForReady":null}],"loadBalancingConfig":[{"pick_first":{"shuffleAddressList":null}}]}}]`
	want := `[{"clientLanguage":["GO"],"serviceConfig":{}},{"serviceConfig":{"methodConfig":[{"name":[{"service":"s"}],"timeout":"1s"}],"loadBalancingConfig":[{"pick_first":{}}]}}]`
	got, err := omitNulls([]byte(in))
	if err != nil || string(got) != want {
		t.Fatalf("got %s, %v\nwant %s", got, err, want)
	}
	// Lint has nothing left to say about grpc-java and grpc-js.
	if _, ds := Lint(got, LintOptions{}); len(ds) != 0 {
		t.Errorf("lint: %v", ds)
	}
	// Nothing to drop: the value itself.
	if got, err := omitNulls([]byte(want)); err != nil || string(got) != want {
		t.Errorf("without nulls: got %s, %v", got, err)
	}
	if _, err := omitNulls([]byte(`[{"serviceConfig":{"methodConfig":[{"timeout":"1m"}]}}]`)); err == nil {
		t.Error("an invalid value was accepted")
	}
}

// TestNoKnownPolicySaysWhatEachClientDoes: a list naming no policy of the
// spec is invalid, but the message must not say every client rejects it
// when one has a listed policy under its own name, or falls back.
func TestNoKnownPolicySaysWhatEachClientDoes(t *testing.T) {
	for _, tc := range []struct {
		cfg       string
		want, not []string
	}{
		{`{"loadBalancingConfig":[{"random_subsetting":{"subset_size":3,"childPolicy":[{"round_robin":{}}]}}]}`,
			[]string{"grpc-go and grpc-java reject", `C-core has a policy named "random_subsetting"`, "grpc-js uses pick_first", `"random_subsetting_experimental"`},
			[]string{"every client rejects"}},
		{`{"loadBalancingConfig":[{"outlier_detection":{"child_policy":[{"round_robin":{}}]}}]}`,
			[]string{"grpc-go, C-core and grpc-java reject", `grpc-js has a policy named "outlier_detection"`},
			[]string{"every client rejects", "uses pick_first"}},
		{`{"loadBalancingConfig":[{"autosharding_experimental":{"channelFactoryKey":"k","autoshardingTarget":"t","keyHeaderName":"x-k"}}]}`,
			[]string{"grpc-go and grpc-java reject", `C-core has a policy named "autosharding_experimental"`, "grpc-js uses pick_first"},
			[]string{"every client rejects"}},
		{`{"loadBalancingConfig":[{"nope":{}}]}`,
			[]string{"grpc-go, C-core and grpc-java reject", "grpc-js uses pick_first"},
			[]string{"every client rejects"}},
		{`{"loadBalancingConfig":[{"grpclb":{"childPolicy":[{"nope":{}}]}}]}`,
			[]string{"names no policy it allows", "C-core and grpc-java reject", "grpc-go uses round_robin"},
			[]string{"every client rejects", "grpc-js"}},
	} {
		var msg string
		for _, d := range ValidateServiceConfig([]byte(tc.cfg)) {
			if d.Code == "lb-no-known-policy" {
				msg = d.Message
			}
		}
		if msg == "" {
			t.Errorf("%s: no lb-no-known-policy error", tc.cfg)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(msg, w) {
				t.Errorf("%s: message %q does not say %q", tc.cfg, msg, w)
			}
		}
		for _, n := range tc.not {
			if strings.Contains(msg, n) {
				t.Errorf("%s: message %q says %q", tc.cfg, msg, n)
			}
		}
	}
}

// Names are the same when their paths are: grpc-go keys a methodConfig
// name by "/service/method", so {"a/b","c"} and {"a","b/c"} are one name
// to it and it refuses the config; so is it refused here, and not
// published.
func TestMethodNamesSameByPath(t *testing.T) {
	cfg := []byte(`{"methodConfig":[{"name":[{"service":"a/b","method":"c"}],"timeout":"1s"},{"name":[{"service":"a","method":"b/c"}],"timeout":"2s"}]}`)
	var codes []string
	for _, d := range ValidateServiceConfig(cfg) {
		codes = append(codes, d.Code)
	}
	if !slices.Contains(codes, codeMethodNameDuplicate.String()) {
		t.Errorf("diagnostics %v, want %s", codes, codeMethodNameDuplicate)
	}
	if r, _ := Publish(Source{JSON: cfg, Kind: KindServiceConfig}, DefaultPublishOptions()); r != nil {
		t.Error("published")
	}
}
