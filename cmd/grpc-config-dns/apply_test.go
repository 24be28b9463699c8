package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestKubectlHabits is a kubectl user's script run as written against
// serve --store: apply twice (the second changes nothing), get -o yaml
// edited and diffed (exit 1, with the TXT record and who gets what
// before and after; exit 0 for the unedited file), dry runs on the
// server and the client that store nothing, apply of the edit reaching
// DNS, -o name and -o jsonpath, delete --dry-run.
func TestKubectlHabits(t *testing.T) {
	s := startStoreServe(t, t.TempDir())
	defer stopAll(t, s)
	revision := func() string {
		t.Helper()
		code, out, errs := s.cli("list", "-o", "jsonpath={.metadata.resourceVersion}")
		if code != 0 {
			t.Fatalf("list -o jsonpath: %d %s", code, errs)
		}
		return strings.TrimSpace(out)
	}
	code, out, errs := s.cli("apply", "-f", "../../testdata/publisher/example.yaml")
	if code != 0 || !strings.Contains(out, "zone/example.test created") || !strings.Contains(out, "3 created") {
		t.Fatalf("apply: %d\n%s%s", code, out, errs)
	}
	s.waitTXT("_grpc_config.greeter.example.test.", `\"3s\"`, 2*time.Second)
	rev := revision()
	code, out, errs = s.cli("apply", "-f", "../../testdata/publisher/example.yaml")
	if code != 0 || !strings.Contains(out, "zone/example.test unchanged") || !strings.Contains(out, "0 created, 0 configured, 3 unchanged") {
		t.Errorf("apply again: %d\n%s%s", code, out, errs)
	}
	if now := revision(); now != rev {
		t.Errorf("a second apply moved the store from %s to %s", rev, now)
	}

	// get -o yaml, as a file: unchanged, diff says nothing and exits 0.
	_, yml, _ := s.cli("get", "example.test", "greeter", "-o", "yaml")
	if !strings.Contains(yml, "apiVersion: grpc-config-dns/v1") || !strings.Contains(yml, "kind: Service") {
		t.Fatalf("get -o yaml:\n%s", yml)
	}
	dir := t.TempDir()
	same := filepath.Join(dir, "greeter.yaml")
	os.WriteFile(same, []byte(yml), 0o644)
	if code, out, errs := s.cli("diff", "-f", same); code != 0 || out != "" {
		t.Errorf("diff of the object as stored: %d\n%s%s", code, out, errs)
	}
	if code, out, _ := s.cli("apply", "-f", same); code != 0 || !strings.Contains(out, "unchanged") {
		t.Errorf("apply of get -o yaml: %d\n%s", code, out)
	}
	// Edited: a longer timeout.
	edited := filepath.Join(t.TempDir(), "greeter.yaml")
	os.WriteFile(edited, []byte(strings.Replace(yml, "timeout: 3s", "timeout: 7s", 1)), 0o644)
	code, out, errs = s.cli("diff", "-f", edited)
	for _, want := range []string{"--- a/service/example.test/greeter", "+++ b/service/example.test/greeter", "-        timeout: 3s\n+        timeout: 7s",
		"TXT _grpc_config.greeter.example.test.", "who gets what", `"timeout":"3s"`, `"timeout":"7s"`, "buckets 1–100 (100%)"} {
		if !strings.Contains(out, want) {
			t.Errorf("diff of the edit lacks %q (exit %d):\n%s%s", want, code, out, errs)
			break
		}
	}
	if code != exitInvalid {
		t.Errorf("diff with differences: exit %d, want 1", code)
	}
	// Dry runs store nothing (DNS serves the same record under the same
	// serial); the server's shows what would change.
	txtBefore, serialBefore, err := s.txt("_grpc_config.greeter.example.test.")
	if err != nil {
		t.Fatal(err)
	}
	for _, mode := range []string{"server", "client"} {
		code, out, errs := s.cli("apply", "-f", edited, "--dry-run="+mode)
		if code != 0 || !strings.Contains(out, "service/example.test/greeter configured") || !strings.Contains(out, "dry run") {
			t.Errorf("apply --dry-run=%s: %d\n%s%s", mode, code, out, errs)
		}
		if mode == "server" && (!strings.Contains(out, "+        timeout: 7s") || !strings.Contains(out, "who gets what")) {
			t.Errorf("apply --dry-run=server does not show what changes:\n%s", out)
		}
	}
	if code, out, _ := s.cli("delete", "example.test", "www", "--dry-run=server"); code != 0 || !strings.Contains(out, "deleted") || !strings.Contains(out, "server dry run") {
		t.Errorf("delete --dry-run=server: %d\n%s", code, out)
	}
	if now := revision(); now != rev {
		t.Errorf("dry runs moved the store from %s to %s", rev, now)
	}
	if code, _, _ := s.cli("get", "example.test", "www"); code != 0 {
		t.Error("a dry-run delete deleted")
	}
	time.Sleep(50 * time.Millisecond) // what a write would have published by now
	if txt, serial, _ := s.txt("_grpc_config.greeter.example.test."); txt != txtBefore || serial != serialBefore {
		t.Errorf("after dry runs DNS serves %q at serial %d; before %q at %d", txt, serial, txtBefore, serialBefore)
	}
	// The edit applied reaches DNS.
	if code, out, errs := s.cli("apply", "-f", edited); code != 0 || !strings.Contains(out, "configured") {
		t.Fatalf("apply the edit: %d\n%s%s", code, out, errs)
	}
	s.waitTXT("_grpc_config.greeter.example.test.", `\"7s\"`, 2*time.Second)
	// A policy's diff names the services it changes, and how.
	pol := filepath.Join(t.TempDir(), "policy.yaml")
	os.WriteFile(pol, []byte(`kind: Policy
metadata: {zone: example.test, name: timeouts}
spec:
  targetRef: {kind: Zone}
  default:
    methodConfig: [{name: [{service: helloworld.Greeter}], timeout: 1s, waitForReady: true}]
`), 0o644)
	code, out, errs = s.cli("diff", "-f", pol)
	if code != exitInvalid || !strings.Contains(out, "--- /dev/null") || !strings.Contains(out, "services whose records change: 2") || !strings.Contains(out, "service/example.test/echo:") ||
		!strings.Contains(out, "service/example.test/greeter:") || !strings.Contains(out, `"waitForReady":true`) {
		t.Errorf("diff of a new policy: %d\n%s%s", code, out, errs)
	}
	// -o name and -o jsonpath.
	if _, out, _ := s.cli("list", "example.test", "-o", "name"); out != "service/example.test/echo\nservice/example.test/greeter\nservice/example.test/www\n" {
		t.Errorf("list -o name:\n%s", out)
	}
	if _, out, _ := s.cli("get", "example.test", "echo", "-o", "jsonpath={.spec.port}"); out != "50051\n" {
		t.Errorf("get -o jsonpath={.spec.port}: %q", out)
	}
	if _, out, _ := s.cli("list", "example.test", "-o", `jsonpath={range .items[*]}{.metadata.name}:{.kind} {end}`); strings.TrimSpace(out) != "echo:Service greeter:Service www:Service" {
		t.Errorf("list -o jsonpath with range: %q", out)
	}
	if code, _, errs := s.cli("list", "-o", "jsonpath={.items[}"); code != exitUsage || !strings.Contains(errs, "jsonpath") {
		t.Errorf("a bad template: %d %s", code, errs)
	}
	if _, out, _ := s.cli("list", "example.test", "-o", "wide"); !strings.Contains(out, "LABELS") || !strings.Contains(out, "50051") {
		t.Errorf("list -o wide:\n%s", out)
	}
}

// TestHistoryRollback: history lists an object's versions and what each
// changed; rollback writes an earlier one again, which DNS serves byte
// for byte as before, under a higher serial.
func TestHistoryRollback(t *testing.T) {
	s := startStoreServe(t, t.TempDir())
	defer stopAll(t, s)
	if code, out, errs := s.cli("apply", "-f", "../../testdata/publisher/example.yaml"); code != 0 {
		t.Fatalf("apply: %d\n%s%s", code, out, errs)
	}
	s.waitTXT("_grpc_config.greeter.example.test.", `\"3s\"`, 2*time.Second)
	original, serial0, err := s.txt("_grpc_config.greeter.example.test.")
	if err != nil {
		t.Fatal(err)
	}
	_, yml, _ := s.cli("get", "example.test", "greeter", "-o", "yaml")
	first := strings.Trim(strings.SplitN(strings.SplitN(yml, "resourceVersion: ", 2)[1], "\n", 2)[0], "\" ")
	// The edits leave resourceVersion out (with it, the second would be
	// refused as a stale write, as kubectl apply's).
	yml = regexp.MustCompile(`(?m)^\s*resourceVersion: .*\n`).ReplaceAllString(yml, "")
	for _, timeout := range []string{"7s", "9s"} {
		f := filepath.Join(t.TempDir(), "greeter.yaml")
		os.WriteFile(f, []byte(strings.Replace(yml, "timeout: 3s", "timeout: "+timeout, 1)), 0o644)
		if code, out, errs := s.cli("apply", "-f", f); code != 0 {
			t.Fatalf("apply %s: %d\n%s%s", timeout, code, out, errs)
		}
	}
	s.waitTXT("_grpc_config.greeter.example.test.", `\"9s\"`, 2*time.Second)
	code, out, errs := s.cli("history", "example.test", "greeter")
	if code != 0 || strings.Count(out, "spec.serviceConfig") != 2 || !strings.Contains(out, first+"  ") || !strings.Contains(out, "created") || !strings.Contains(out, time.Now().UTC().Format("2006-01-02T")) {
		t.Fatalf("history: %d\n%s%s", code, out, errs)
	}
	if code, _, errs := s.cli("rollback", "example.test", "greeter", "--to-revision", "999"); code != exitInvalid || !strings.Contains(errs, "no version 999") {
		t.Errorf("rollback to a version it never had: %d %s", code, errs)
	}
	if code, out, errs := s.cli("rollback", "example.test", "greeter", "--to-revision", first, "--dry-run=server"); code != 0 || !strings.Contains(out, "server dry run") {
		t.Errorf("rollback --dry-run=server: %d\n%s%s", code, out, errs)
	}
	code, out, errs = s.cli("rollback", "example.test", "greeter", "--to-revision", first)
	if code != 0 || !strings.Contains(out, "service/example.test/greeter rolled back to revision "+first) {
		t.Fatalf("rollback: %d\n%s%s", code, out, errs)
	}
	serial := s.waitTXT("_grpc_config.greeter.example.test.", `\"3s\"`, 2*time.Second)
	if now, _, _ := s.txt("_grpc_config.greeter.example.test."); now != original || serial <= serial0 {
		t.Errorf("after the rollback: %q at serial %d; before: %q at serial %d", now, serial, original, serial0)
	}
	if _, out, _ := s.cli("history", "example.test", "greeter", "-o", "name"); strings.Count(out, "service/example.test/greeter") != 4 {
		t.Errorf("history -o name after the rollback:\n%s", out)
	}
}

// TestApplyKeepsKeyOrder: an object as get -o yaml prints it applies back
// unchanged even when its keys are not in alphabetical order (a policy's
// targetRef before its default): the spec is read in the order written,
// as the store keeps it. A key written twice is refused with its line.
func TestApplyKeepsKeyOrder(t *testing.T) {
	s := startStoreServe(t, t.TempDir())
	defer stopAll(t, s)
	if code, out, errs := s.cli("apply", "-f", "../../testdata/publisher/policies.yaml"); code != 0 {
		t.Fatalf("apply: %d\n%s%s", code, out, errs)
	}
	_, yml, _ := s.cli("get", "policies.test", "policy/retries", "-o", "yaml")
	if strings.Index(yml, "targetRef") > strings.Index(yml, "default") {
		t.Fatalf("the policy's keys are in alphabetical order: the test would prove nothing\n%s", yml)
	}
	f := filepath.Join(t.TempDir(), "retries.yaml")
	os.WriteFile(f, []byte(yml), 0o644)
	_, rev, _ := s.cli("list", "-o", "jsonpath={.metadata.resourceVersion}")
	if code, out, errs := s.cli("diff", "-f", f); code != 0 || out != "" {
		t.Errorf("diff of the policy as stored: %d\n%s%s", code, out, errs)
	}
	if code, out, errs := s.cli("apply", "-f", f); code != 0 || !strings.Contains(out, "unchanged") {
		t.Errorf("apply of the policy as stored: %d\n%s%s", code, out, errs)
	}
	if _, now, _ := s.cli("list", "-o", "jsonpath={.metadata.resourceVersion}"); now != rev {
		t.Errorf("applying the policy as stored moved the store from %s to %s", rev, now)
	}
	dup := filepath.Join(t.TempDir(), "dup.yaml")
	os.WriteFile(dup, []byte("metadata: {zone: policies.test, name: echo}\nspec:\n  port: 1\n  port: 2\n"), 0o644)
	if code, _, errs := s.cli("apply", "-f", dup); code != exitInvalid || !strings.Contains(errs, "line 4") {
		t.Errorf("a key twice: %d %s", code, errs)
	}
}
