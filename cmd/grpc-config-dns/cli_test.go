package main

import (
	"bytes"
	"runtime"
	"strings"
	"testing"
	"time"
)

// runCLI runs the CLI in-process, as a user would from a shell.
func runCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(args, strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

// version and --version print the build's version, from the Go build
// information (issue 18).
func TestVersion(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"--version"}} {
		code, out, _ := runCLI(t, args...)
		if code != 0 || !strings.HasPrefix(out, "grpc-config-dns ") || !strings.Contains(out, runtime.Version()) {
			t.Errorf("%v: exit %d, %q", args, code, out)
		}
	}
}

// --state belongs to config files: with a store, serials follow its
// revisions.
func TestServeStoreRefusesFileFlags(t *testing.T) {
	for _, flag := range []string{"--state"} {
		code, _, errs := runCLI(t, "serve", "--store", t.TempDir(), flag, "x")
		if code != exitUsage || !strings.Contains(errs, flag+" is for --config files") {
			t.Errorf("serve --store %s x: exit %d\n%s", flag, code, errs)
		}
	}
}

// TestJSONLogDurations: a JSON log record gives a duration in seconds,
// with the unit in its key (issue 32: "took":4059000 was nanoseconds that
// a reader had to know); the text format keeps Go's form.
func TestJSONLogDurations(t *testing.T) {
	for format, want := range map[string]string{
		"json": `"msg":"config loaded","took_seconds":0.004059,"zones":1}`,
		"text": `msg="config loaded" took=4.059ms zones=1`,
	} {
		var b bytes.Buffer
		log, err := newLogger(&env{stderr: &b}, format, "info")
		if err != nil {
			t.Fatal(err)
		}
		log.Info("config loaded", "took", 4059*time.Microsecond, "zones", 1)
		if !strings.Contains(b.String(), want) {
			t.Errorf("%s: %s, want %s", format, b.String(), want)
		}
	}
}

// TestUnknownCommandSuggests: a misspelt command exits 2 naming the
// command probably meant (issue 31: `pubish` got no "did you mean").
func TestUnknownCommandSuggests(t *testing.T) {
	code, _, errs := runCLI(t, "pubish")
	if code != exitUsage || !strings.Contains(errs, `unknown command "pubish"`) || !strings.Contains(errs, "did you mean publish?") {
		t.Errorf("pubish: exit %d\n%s", code, errs)
	}
	// With flags of the command meant: still the command is what is wrong.
	code, _, errs = runCLI(t, "aply", "-f", "x.yaml")
	if code != exitUsage || !strings.Contains(errs, `unknown command "aply"`) || !strings.Contains(errs, "did you mean apply?") {
		t.Errorf("aply -f x.yaml: exit %d\n%s", code, errs)
	}
	code, _, errs = runCLI(t)
	if code != exitUsage || !strings.Contains(errs, "no command given: use one of") || !strings.Contains(errs, "publish") {
		t.Errorf("no command: exit %d\n%s", code, errs)
	}
}
