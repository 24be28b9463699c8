package main

import (
	"encoding/json"
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
