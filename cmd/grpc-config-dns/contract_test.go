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
	code, out, errs := runStdin(t, in, "encode", "-")
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
	code, out, errs = runStdin(t, in, "encode", "--nine-digit-durations=false", "-")
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
	code, out, errs = runStdin(t, withNull, "encode", "--omit-nulls=false", "-")
	if code != exitOK || !strings.Contains(out, `\"method\":null`) || !strings.Contains(errs, "[null-value]") {
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
	// "go" in clientLanguage is a warning (grpc-go matches only "GO").
	p := writeFile(t, "warn.json", `[{"clientLanguage":["go"],"serviceConfig":{}},{"serviceConfig":{}}]`)
	code, out, _ := runCLI(t, "lint", "--strict", "--format", "json", p)
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
