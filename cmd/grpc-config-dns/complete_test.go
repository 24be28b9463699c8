package main

import (
	"net"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// completeCLI asks the CLI what completes args, as a shell's completion
// script does (grpc-config-dns __complete ARGS..., the last being the
// word being completed), and returns the completions, without their
// descriptions, and the directive line (":4" is NoFileComp).
func completeCLI(t *testing.T, args ...string) ([]string, string) {
	t.Helper()
	code, out, errs := runCLI(t, append([]string{"__complete"}, args...)...)
	if code != 0 {
		t.Fatalf("__complete %q: exit %d\n%s%s", args, code, out, errs)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	directive := lines[len(lines)-1]
	if !strings.HasPrefix(directive, ":") {
		t.Fatalf("__complete %q: no directive in\n%s", args, out)
	}
	var names []string
	for _, l := range lines[:len(lines)-1] {
		name, _, _ := strings.Cut(l, "\t")
		names = append(names, name)
	}
	return names, directive
}

// deadServer is an admin API URL where nothing listens.
const deadServer = "http://127.0.0.1:1"

// TestCompleteFlagValues: flags that take one of a few values complete
// to them, filtered by what is typed, and never to files.
func TestCompleteFlagValues(t *testing.T) {
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"lint", "--format", ""}, []string{"text", "json"}},
		{[]string{"inspect", "x", "--format", "j"}, []string{"json"}},
		{[]string{"serve", "--log-format", ""}, []string{"text", "json"}},
		{[]string{"serve", "--log-level", "w"}, []string{"warn"}},
		{[]string{"dnssec", "import", "--role", ""}, []string{"csk", "ksk", "zsk"}},
		{[]string{"list", "--match", "N"}, []string{"NotOlderThan"}},
		{[]string{"select", "--language", ""}, []string{"go", "java", "node", "c++"}},
		{[]string{"get", "-o", "y"}, []string{"yaml"}},
		{[]string{"watch", "--output", "na"}, []string{"name"}},
		{[]string{"apply", "--dry-run=s"}, []string{"server"}},
		{[]string{"serve", "--log-level", "x"}, nil},
	} {
		got, directive := completeCLI(t, c.args...)
		if !slices.Equal(got, c.want) || directive != ":4" {
			t.Errorf("complete %q: %q %s, want %q :4", c.args, got, directive, c.want)
		}
	}
	// jsonpath= goes on with a template: no space after it (NoSpace, 2).
	if got, directive := completeCLI(t, "list", "-o", "jsonp"); !slices.Equal(got, []string{"jsonpath="}) || directive != ":6" {
		t.Errorf("complete list -o jsonp: %q %s, want [jsonpath=] :6", got, directive)
	}
}

// TestCompletedValuesAccepted: each value a flag completes to is one its
// command accepts: run with it, the command does not refuse it, as it
// refuses another ("zzz") with its %q. (--match is the server's to
// check: TestCompleteNames; --language is open.)
func TestCompletedValuesAccepted(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing")
	// Arguments with which each command checks the flag, then stops.
	argsOf := map[string][]string{
		"lint":          {"lint", "-"},
		"inspect":       {"inspect", "echo.example.test", "--config", missing},
		"serve":         {"serve", "--config", missing},
		"dnssec import": {"dnssec", "import", "example.test", missing, "--dnssec-keys", missing},
		"publish":       {"publish", missing, "--server", deadServer},
		"apply":         {"apply", "-f", missing, "--server", deadServer},
		"get":           {"get", "example.test", "--server", deadServer},
		"delete":        {"delete", "example.test", "x", "--server", deadServer},
		"list":          {"list", "--server", deadServer},
		"watch":         {"watch", "--server", deadServer},
		"history":       {"history", "example.test", "--server", deadServer},
		"rollback":      {"rollback", "example.test", "x", "--to-revision", "1", "--server", deadServer},
		"diff":          {"diff", "-f", missing, "--server", deadServer},
	}
	check := func(command, flag string, values []string) {
		t.Helper()
		args, ok := argsOf[command]
		if !ok {
			t.Logf("%s %s: no arguments to check its values with", command, flag)
			return
		}
		// flag=value: --dry-run alone means --dry-run=client.
		with := func(v string) []string { return append(slices.Clone(args), flag+"="+v) }
		if _, _, errs := runCLI(t, with("zzz")...); !strings.Contains(errs, `"zzz"`) {
			t.Errorf("%q: not refused, so the check says nothing:\n%s", with("zzz"), errs)
			return
		}
		for _, v := range values {
			name, _, _ := strings.Cut(v, "\t")
			if _, _, errs := runCLI(t, with(name)...); strings.Contains(errs, `"`+name+`"`) {
				t.Errorf("%q: completed, but refused:\n%s", with(name), errs)
			}
		}
	}
	for _, v := range flagValues {
		if v.flag != "match" && v.flag != "language" {
			check(v.command, "--"+v.flag, v.values)
		}
	}
	// -o and --dry-run on every command that has them: what they
	// complete to.
	commands, _ := completeCLI(t, "")
	withOutput := 0
	for _, c := range commands {
		_, help, _ := runCLI(t, c, "--help")
		if strings.Contains(help, "--dry-run") {
			values, _ := completeCLI(t, c, "--dry-run=")
			if len(values) != 3 {
				t.Errorf("%s --dry-run= completes to %q", c, values)
			}
			check(c, "--dry-run", values)
		}
		if strings.Contains(help, "-o, --output") {
			withOutput++
			values, _ := completeCLI(t, c, "-o", "")
			switch {
			case strings.Contains(help, "--format"):
				// -o is --format: text or json (lint, inspect).
				if !slices.Equal(values, []string{"text", "json"}) {
					t.Errorf("%s -o completes to %q, want its --format's", c, values)
				}
			case !slices.Contains(values, "table") || !slices.Contains(values, "json") || !slices.Contains(values, "yaml"):
				t.Errorf("%s -o completes to %q", c, values)
			}
			var whole []string
			for _, v := range values {
				if strings.HasSuffix(v, "=") {
					v += "{.metadata.name}" // jsonpath=: a template follows
				}
				whole = append(whole, v)
			}
			check(c, "-o", whole)
		}
	}
	if withOutput < 5 {
		t.Errorf("-o completes on %d commands, want publish, get, delete, list and watch at least", withOutput)
	}
}

// TestCompleteNames: the names of zones, services and policies complete
// from the admin API, which the command's own --server and token flags
// reach; with no server, or one that refuses, nothing completes, at once.
func TestCompleteNames(t *testing.T) {
	const token = "0123456789abcdef0123456789abcdef"
	tokens := writeFile(t, "tokens", token+"\n")
	tokenFile := writeFile(t, "token", token+"\n")
	s := startStoreServe(t, t.TempDir(), "--admin-token-file", tokens)
	defer stopAll(t, s)
	cfg := writeFile(t, "p.yaml", `zones:
  - origin: example.test.
    nameservers: [ns1.example.net.]
    policies:
      - name: retries
        targetRef: {kind: Zone}
        default: {methodConfig: [{name: [{service: echo.Echo}], timeout: 2s}]}
      - name: edge-fast
        targetRef: {kind: Service, name: edge}
        default: {methodConfig: [{name: [{service: echo.Echo}], timeout: 1s}]}
    services:
      - name: echo
        serviceConfig: {}
      - name: edge
        serviceConfig: {}
      - name: www
        addresses: [192.0.2.1]
  - origin: other.test.
    nameservers: [ns1.example.net.]
`)
	if code, out, errs := s.cli("import", "--config", cfg, "--token", token); code != 0 {
		t.Fatalf("import: exit %d\n%s%s", code, out, errs)
	}
	auth := []string{"--server", s.url(), "--token", token}
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"get", ""}, []string{"example.test", "other.test"}},
		{[]string{"get", "o"}, []string{"other.test"}},
		{[]string{"get", "example.test", ""}, []string{"echo", "edge", "www", "policy/edge-fast", "policy/retries"}},
		{[]string{"get", "example.test", "e"}, []string{"echo", "edge"}},
		{[]string{"delete", "example.test", "po"}, []string{"policy/edge-fast", "policy/retries"}},
		{[]string{"delete", "example.test", "policy/r"}, []string{"policy/retries"}},
		{[]string{"get", "example.test", "www", ""}, nil},
		{[]string{"list", ""}, []string{"example.test", "other.test"}},
		{[]string{"watch", "ex"}, []string{"example.test"}},
		{[]string{"list", "example.test", ""}, nil},
		{[]string{"get", "nowhere.test", ""}, nil},
	} {
		// The flags before the arguments, as a user may type them.
		got, directive := completeCLI(t, append(slices.Clone(auth), c.args...)...)
		if !slices.Equal(got, c.want) || directive != ":4" {
			t.Errorf("complete %q: %q %s, want %q :4", c.args, got, directive, c.want)
		}
	}
	// The token from --token-file, and from the environment, as the
	// commands read it.
	if got, _ := completeCLI(t, "get", "--server", s.url(), "--token-file", tokenFile, ""); len(got) != 2 {
		t.Errorf("complete with --token-file: %q", got)
	}
	t.Setenv(envServer, s.url())
	t.Setenv(envToken, token)
	if got, _ := completeCLI(t, "list", ""); len(got) != 2 {
		t.Errorf("complete with $%s and $%s: %q", envServer, envToken, got)
	}
	// Refused, or no server: nothing, and no file names, within the
	// timeout.
	for _, args := range [][]string{
		{"get", "--server", s.url(), "--token", "wrong", ""},
		{"get", "--server", deadServer, ""},
		{"get", "--server", "ftp://x", ""},
	} {
		start := time.Now()
		got, directive := completeCLI(t, args...)
		if len(got) != 0 || directive != ":4" || time.Since(start) > completionTimeout+time.Second {
			t.Errorf("complete %q: %q %s after %v", args, got, directive, time.Since(start))
		}
	}
	// list --match's values are those the server takes.
	for _, v := range []string{"Exact", "NotOlderThan"} {
		_, out, _ := s.cli("list", "--token", token, "-o", "json")
		rv := strings.Split(strings.Split(out, `"resourceVersion": "`)[1], `"`)[0]
		if code, _, errs := s.cli("list", "--token", token, "--match", v, "--resource-version", rv); code != 0 {
			t.Errorf("list --match %s --resource-version %s: exit %d\n%s", v, rv, code, errs)
		}
	}
}

// TestCompleteNamesGivesUp: a server that does not answer in time gets
// no completions, after completionTimeout.
func TestCompleteNamesGivesUp(t *testing.T) {
	l := listenSilently(t)
	start := time.Now()
	got, directive := completeCLI(t, "get", "--server", "http://"+l, "")
	if took := time.Since(start); len(got) != 0 || directive != ":4" || took < completionTimeout/2 || took > completionTimeout+time.Second {
		t.Errorf("complete against a silent server: %q %s after %v", got, directive, took)
	}
}

// listenSilently returns the address of a TCP listener that never
// answers: connections wait in its backlog.
func listenSilently(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l.Addr().String()
}
