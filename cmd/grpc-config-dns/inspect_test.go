package main

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
)

const policiesExample = "../../testdata/publisher/policies.yaml"

func TestInspectText(t *testing.T) {
	code, out, errs := runCLI(t, "inspect", "--config", policiesExample, "echo.policies.test")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{
		"service echo.policies.test. (zone policies.test.)",
		"labels: team=payments",
		"1.  retries ", "2.  payments-round-robin ", "3.  echo-fast ",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// The value, then who set it, then whom it overrode, on one line.
	if !regexp.MustCompile(`/0/serviceConfig/methodConfig/0/timeout +"3s" +policy echo-fast \(Service by name\) /methodConfig/0/timeout; over policy retries \(Zone\)`).MatchString(out) {
		t.Errorf("no timeout line with its origins:\n%s", out)
	}
	if !regexp.MustCompile(`/0/serviceConfig/methodConfig/0/waitForReady +true +service /0/serviceConfig/methodConfig/0/waitForReady`).MatchString(out) {
		t.Errorf("no waitForReady line from the service:\n%s", out)
	}
}

func TestInspectJSON(t *testing.T) {
	code, out, errs := runCLI(t, "inspect", "--format", "json", "--config", policiesExample, "billing.policies.test.")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var in struct {
		Service  string
		Policies []struct{ Name, Kind string }
		Config   json.RawMessage
		Fields   []struct {
			Path    string
			Value   json.RawMessage
			Origins []struct{ Policy, Kind, Path string }
		}
	}
	if err := json.Unmarshal([]byte(out), &in); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	if in.Service != "billing.policies.test." || len(in.Policies) != 2 || in.Policies[1].Kind != "ServiceByLabels" {
		t.Errorf("service %q, policies %+v", in.Service, in.Policies)
	}
	found := false
	for _, f := range in.Fields {
		if f.Path == "/0/serviceConfig/loadBalancingConfig/0/round_robin" {
			found = len(f.Origins) == 1 && f.Origins[0].Policy == "payments-round-robin" && f.Origins[0].Path == "/loadBalancingConfig/0/round_robin"
		}
	}
	if !found {
		t.Errorf("round_robin is not from payments-round-robin:\n%s", out)
	}
}

func TestInspectErrors(t *testing.T) {
	bad := writeFile(t, "bad.yaml", strings.Replace(mustReadFile(t, policiesExample), "timeout: 3s}", "timeout: 5m}", 1))
	for _, c := range []struct {
		args []string
		code int
		says string
	}{
		{[]string{"inspect", "echo.policies.test"}, 2, "needs --config"},
		{[]string{"inspect", "--config", policiesExample, "ecoh.policies.test"}, 2, "did you mean echo.policies.test."},
		{[]string{"inspect", "--config", policiesExample, "--format", "yaml", "echo.policies.test"}, 2, "--format"},
		{[]string{"inspect", "--config", "/nonexistent.yaml", "echo.policies.test"}, 2, "nonexistent"},
		{[]string{"inspect", "--config", bad, "echo.policies.test"}, 1, "policy echo-fast, applied to service echo.policies.test."},
	} {
		code, _, errs := runCLI(t, c.args...)
		if code != c.code || !strings.Contains(errs, c.says) {
			t.Errorf("%v: exit %d, stderr %q; want %d saying %q", c.args, code, errs, c.code, c.says)
		}
	}
}

func mustReadFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestPoliciesDocOutputs: the outputs docs/policies.md shows without a
// "$ grpc-config-dns" line (TestDocsExamples runs those) are what the
// tool prints: lint's error for a policy that breaks a service, and the
// JSON of inspect, abridged there.
func TestPoliciesDocOutputs(t *testing.T) {
	doc := mustReadFile(t, "../../docs/policies.md")

	// The lint example: echo-fast's timeout written 5m.
	dir := t.TempDir()
	bad := strings.Replace(mustReadFile(t, policiesExample), "timeout: 3s}", "timeout: 5m}", 1)
	if err := os.WriteFile(dir+"/publisher.yaml", []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runCLI(t, "lint", dir+"/publisher.yaml")
	got := strings.ReplaceAll(out+errs, dir+"/", "")
	if code != exitInvalid || !strings.Contains(doc, "```\n"+got+"```\n") {
		t.Errorf("lint publisher.yaml exits %d and prints\n%s\nwhich docs/policies.md does not show", code, got)
	}

	// The JSON example: its timeout field, value and origins in order.
	code, out, errs = runCLI(t, "inspect", "--format", "json", "--config", policiesExample, "echo.policies.test")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var in struct {
		Fields []struct {
			Path    string
			Value   json.RawMessage
			Origins []struct{ Policy, Kind, Path string }
		}
	}
	if err := json.Unmarshal([]byte(out), &in); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	const timeout = "/0/serviceConfig/methodConfig/0/timeout"
	var want []string
	for _, f := range in.Fields {
		if f.Path == timeout {
			want = append(want, fmt.Sprintf(`"fields": [{"path": %q, "value": %s,`, f.Path, f.Value))
			for _, o := range f.Origins {
				want = append(want, fmt.Sprintf(`{"policy": %q, "kind": %q, "path": %q}`, o.Policy, o.Kind, o.Path))
			}
		}
	}
	if len(want) < 3 {
		t.Fatalf("inspect --format json: no %s with two origins:\n%s", timeout, out)
	}
	rest := doc
	for _, w := range want {
		i := strings.Index(rest, w)
		if i < 0 {
			t.Errorf("docs/policies.md's JSON example lacks, in this order:\n%s", strings.Join(want, "\n"))
			break
		}
		rest = rest[i+len(w):]
	}
}
