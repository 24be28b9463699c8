package main

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// The CLI's public contract (docs/architecture.md, "Semantics and the public contract"): exit codes, the JSON report,
// the text format, and what encode publishes.

func runStdin(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(args, strings.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String()
}

func TestNoCommandIsAUsageError(t *testing.T) {
	if code, _, errs := runCLI(t); code != exitUsage || !strings.Contains(errs, "no command given") {
		t.Errorf("no command: exit %d, stderr %q; want %d and a hint", code, errs, exitUsage)
	}
	if code, _, _ := runCLI(t, "--help"); code != exitOK {
		t.Errorf("--help: exit %d, want 0", code)
	}
}

func TestEncodePublishesWhatServeWould(t *testing.T) {
	in := `[{"dynamicParameterConstraints":{"or_constraints":{"constraints":[{"constraint":{"key":"env","value":"prod"}}]}},"serviceConfig":{"methodConfig":[{"name":[{}],"timeout":"0.1s"}]}},{"serviceConfig":{}}]`
	// Dynamic parameter constraints are for our resolver (a Go client):
	// grpc-java and grpc-js reject the record, so it is refused unless the
	// declared clients leave them out.
	if code, _, errs := runStdin(t, in, "encode", "-"); code != exitInvalid || !strings.Contains(errs, "grpc-java and grpc-js are among the declared clients") {
		t.Errorf("encode for every client: exit %d, %s", code, errs)
	}
	code, out, errs := runStdin(t, in, "encode", "--clients", "dnsconfig", "-")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{`orConstraints`, `0.100000000s`} {
		if !strings.Contains(out, want) {
			t.Errorf("encode output lacks %s: %s", want, out)
		}
	}
	if strings.Contains(out, "or_constraints") || strings.Contains(errs, "duration-fraction") {
		t.Errorf("encode kept a proto name or warned about a duration it rewrites:\n%s%s", out, errs)
	}
	code, out, errs = runStdin(t, in, "encode", "--clients", "dnsconfig", "--nine-digit-durations=false", "-")
	if code != exitOK || !strings.Contains(out, `\"0.1s\"`) || !strings.Contains(errs, "[duration-fraction]") {
		t.Errorf("--nine-digit-durations=false: exit %d, %s%s; want the duration as written and the warning", code, out, errs)
	}
	// A null member is left out (grpc-java and grpc-js reject it), unless
	// --omit-nulls=false.
	withNull := `[{"serviceConfig":{"methodConfig":[{"name":[{"service":"s","method":null}],"waitForReady":true}]}}]`
	code, out, errs = runStdin(t, withNull, "encode", "-")
	if code != exitOK || strings.Contains(out, "null") || strings.Contains(errs, "null-value") {
		t.Errorf("encode of a null member: exit %d, %s%s; want it left out, without a warning", code, out, errs)
	}
	// Kept, it is refused for grpc-java and grpc-js, and published with
	// a warning for the others.
	code, _, errs = runStdin(t, withNull, "encode", "--omit-nulls=false", "-")
	if code != exitInvalid || !strings.Contains(errs, "error: \"method\" is null") {
		t.Errorf("--omit-nulls=false for every client: exit %d, %s; want it refused", code, errs)
	}
	code, out, errs = runStdin(t, withNull, "encode", "--omit-nulls=false", "--clients", "go,c-core", "-")
	if code != exitOK || !strings.Contains(out, `\"method\":null`) || !strings.Contains(errs, "warning: \"method\" is null") {
		t.Errorf("--omit-nulls=false: exit %d, %s%s; want the null kept and the warning", code, out, errs)
	}
}

func TestSelectWithoutRecordIsNoConfig(t *testing.T) {
	spf := writeFile(t, "spf.txt", `"v=spf1 -all"`+"\n")
	code, out, errs := runCLI(t, "select", "--bucket", "1", spf)
	if code != exitNoMatch || out != "" || !strings.Contains(errs, "default service config") {
		t.Errorf("exit %d, stdout %q, stderr %q; want %d (gRFC A21: no record is no config)", code, out, errs, exitNoMatch)
	}
}

func TestSelectRefusesPublisherConfigs(t *testing.T) {
	code, _, errs := runCLI(t, "select", "--bucket", "1", "../../testdata/publisher/example.yaml")
	if code != exitUsage || !strings.Contains(errs, "publisher config") {
		t.Errorf("exit %d, stderr %q; want %d", code, errs, exitUsage)
	}
}

func TestSelectPlacesDiagnosticsLikeLint(t *testing.T) {
	for name, text := range map[string]string{
		"config.json": "{\n  \"methodConfig\": [{\"name\": [{}], \"timeout\": \"1m\"}]\n}\n",
		"raw.txt":     `  grpc_config=[{"serviceConfig":{"methodConfig":[{"name":[{}],"timeout":"1m"}]}}]` + "\n",
		"dig.txt":     `_grpc_config.x 30 IN TXT "grpc_config=[{\"serviceConfig\":" "{\"methodConfig\":[{\"name\":[{}],\"timeout\":\"1m\"}]}}]"` + "\n",
	} {
		p := writeFile(t, name, text)
		code, lintOut, _ := runCLI(t, "lint", p)
		if code != exitInvalid {
			t.Fatalf("%s: lint exit %d", name, code)
		}
		var want string
		for _, l := range strings.Split(lintOut, "\n") {
			if strings.HasSuffix(l, "[duration]") {
				want = l
			}
		}
		code, _, errs := runCLI(t, "select", "--bucket", "1", p)
		if code != exitInvalid || want == "" || !strings.Contains(errs, want+"\n") {
			t.Errorf("%s: select exit %d, stderr\n%s\nwant lint's line\n%s", name, code, errs, want)
		}
	}
}

func TestLintReportListsEveryInput(t *testing.T) {
	good := writeFile(t, "good.json", `{"loadBalancingConfig":[{"round_robin":{}}]}`)
	missing := filepath.Join(t.TempDir(), "missing.json")
	code, out, _ := runCLI(t, "lint", "--format", "json", missing, good)
	if code != exitUsage {
		t.Errorf("exit %d, want %d", code, exitUsage)
	}
	var r lintReport
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	if len(r.Inputs) != 2 || r.Inputs[0].Input != missing || r.Inputs[0].Valid ||
		len(r.Inputs[0].Diagnostics) != 1 || r.Inputs[0].Diagnostics[0].Code != "input-unreadable" ||
		r.Inputs[1].Input != good || !r.Inputs[1].Valid {
		t.Errorf("report: %s", out)
	}
}

func TestLintStrictKeepsSeverities(t *testing.T) {
	// "go" in clientLanguage is a warning when grpc-go is not among the
	// declared clients (grpc-go matches only "GO").
	p := writeFile(t, "warn.json", `[{"clientLanguage":["go"],"serviceConfig":{}},{"serviceConfig":{}}]`)
	code, out, _ := runCLI(t, "lint", "--strict", "--clients", "java,node", "--format", "json", p)
	if code != exitInvalid {
		t.Errorf("exit %d, want %d", code, exitInvalid)
	}
	if !strings.Contains(out, `"severity": "warning"`) || strings.Contains(out, `"severity": "error"`) || !strings.Contains(out, `"valid": false`) {
		t.Errorf("--strict report:\n%s", out)
	}
}

func TestLintTextFormat(t *testing.T) {
	// FILE:LINE:COL: severity: message [code], the code last.
	p := writeFile(t, "bad.json", "[\n {\"serviceConfig\":{}, \"percentage\": 101}\n]\n")
	_, out, _ := runCLI(t, "lint", p)
	want := p + `:2:37: error: percentage must be an integer from 0 to 100 written without sign, fraction or exponent, not 101 (at /0/percentage) [choice-percentage]`
	if !strings.Contains(out, want+"\n") {
		t.Errorf("got\n%s\nwant the line\n%s", out, want)
	}
	// A problem of the whole record is placed at its start.
	big := writeFile(t, "big.json", " "+`[{"serviceConfig":{"methodConfig":[{"name":[{"service":"`+strings.Repeat("s", 1500)+`"}]}]}}]`)
	_, out, _ = runCLI(t, "lint", big)
	if !strings.Contains(out, big+":1:2: ") {
		t.Errorf("whole-record diagnostic not placed at the record's start:\n%s", out)
	}
}

func TestStdinOnlyOnce(t *testing.T) {
	code, _, errs := runStdin(t, "{}", "lint", "-", "-")
	if code != exitUsage || !strings.Contains(errs, "only once") {
		t.Errorf("exit %d, stderr %q", code, errs)
	}
}

func TestEmptyAndScalarInputsSayWhatTheyAre(t *testing.T) {
	for in, want := range map[string]string{"": "the input is empty", "42\n": "a JSON number", "null": "JSON literal null"} {
		code, out, _ := runStdin(t, in, "lint", "-")
		if code != exitInvalid || !strings.Contains(out, want) {
			t.Errorf("lint of %q: exit %d, %q; want %q", in, code, out, want)
		}
	}
}

// The cases of the issue "one verdict everywhere", each a disagreement
// between lint and the publisher before declared clients.
func TestOneVerdictCases(t *testing.T) {
	// A status code grpc-go, C-core and grpc-java reject: lint fails what
	// encode refuses, for every client and for those three; grpc-js alone
	// accepts it.
	lower := `{"methodConfig":[{"name":[{}],"retryPolicy":{"maxAttempts":2,"initialBackoff":"1s","maxBackoff":"1s","backoffMultiplier":2,"retryableStatusCodes":["resource_exhausted"]}}]}`
	for _, clients := range []string{"all", "go", "c-core", "java"} {
		lintCode, out, _ := runStdin(t, lower, "lint", "--clients", clients, "--format", "json", "-")
		encCode, _, _ := runStdin(t, lower, "encode", "--clients", clients, "-")
		if lintCode != exitInvalid || encCode != exitInvalid || !strings.Contains(out, `"valid": false`) {
			t.Errorf("--clients %s: lint exit %d, encode exit %d; want both 1\n%s", clients, lintCode, encCode, out)
		}
	}
	if lintCode, _, _ := runStdin(t, lower, "lint", "--clients", "node", "-"); lintCode != exitOK {
		t.Errorf("--clients node: lint exit %d, want 0 (grpc-js accepts the code)", lintCode)
	}
	// The same record encoded with the old escape hatch, linted again.
	_, txt, _ := runStdin(t, lower, "encode", "--clients", "node", "-")
	if code, _, _ := runStdin(t, txt, "lint", "-"); code != exitInvalid {
		t.Errorf("lint of the TXT encoded for grpc-js alone: exit %d, want 1", code)
	}

	// "timout": one verdict and one code, whatever the input form.
	typo := `{"methodConfig":[{"name":[{}],"timout":"1s"}]}`
	pub := "zones:\n  - origin: example.test.\n    nameservers: [{name: ns1, addresses: [192.0.2.1]}]\n    services:\n      - name: a\n        addresses: [192.0.2.2]\n        serviceConfig: " + typo + "\n"
	for name, in := range map[string][]string{
		"lint config":    {"lint", "-"},
		"encode config":  {"encode", "-"},
		"lint publisher": {"lint", "-"},
	} {
		text := typo
		if name == "lint publisher" {
			text = pub
		}
		code, out, errs := runStdin(t, text, in...)
		if code != exitInvalid || !strings.Contains(out+errs, "[misspelled-field]") || strings.Contains(out+errs, "[unknown-field]") {
			t.Errorf("%s: exit %d, want 1 and misspelled-field alone:\n%s%s", name, code, out, errs)
		}
	}

	// grpc-go's own examples/features/retry config: one diagnostic per
	// capitalised key, saying what each client does.
	retry := `{"methodConfig":[{"name":[{"service":"grpc.examples.echo.Echo"}],"waitForReady":true,"retryPolicy":{"MaxAttempts":4,"InitialBackoff":".01s","MaxBackoff":".01s","BackoffMultiplier":1.0,"RetryableStatusCodes":["UNAVAILABLE"]}}]}`
	_, out, _ := runStdin(t, retry, "lint", "--format", "json", "-")
	var rep lintReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	var fieldCase int
	for _, d := range rep.Inputs[0].Diagnostics {
		switch d.Code {
		case "field-case":
			fieldCase++
			if d.Clients["go"] == "" || d.Clients["c-core"] != "ignores field" {
				t.Errorf("field-case without what each client does: %+v", d)
			}
		case "unknown-field":
			t.Errorf("a second diagnostic of a capitalised key: %+v", d)
		case "retry-policy":
			if !strings.Contains(d.Message, "grpc-go reads the fields written in another case") {
				t.Errorf("retry-policy says every client rejects it: %s", d.Message)
			}
		}
	}
	if fieldCase != 5 {
		t.Errorf("%d field-case diagnostics, want 5:\n%s", fieldCase, out)
	}
}
