package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The README's examples are run as written, so they stay true.
func TestREADMEExamples(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(readme)

	// Every YAML block is a publisher config that lints clean.
	for i, m := range regexp.MustCompile("(?s)```yaml\n(.*?)```").FindAllStringSubmatch(text, -1) {
		p := filepath.Join(t.TempDir(), "example.yaml")
		if err := os.WriteFile(p, []byte(m[1]), 0o644); err != nil {
			t.Fatal(err)
		}
		if code, out, errs := runCLI(t, "lint", "--strict", p); code != 0 {
			t.Errorf("YAML example %d does not lint clean (exit %d):\n%s%s", i, code, out, errs)
		}
	}

	// Every "$ grpc-config-dns ..." example prints what the README says.
	// (Commands reading stdin are given it from the echo before the pipe.)
	re := regexp.MustCompile("(?m)^\\$ (?:echo '([^']*)' \\| )?grpc-config-dns (.*)\n((?:[^$`].*\n)*)")
	n := 0
	for _, m := range re.FindAllStringSubmatch(text, -1) {
		stdin, args, want := m[1], strings.Fields(m[2]), m[3]
		for i, a := range args {
			if strings.HasPrefix(a, "testdata/") {
				args[i] = "../../" + a
			}
		}
		// One buffer for stdout and stderr, in the order a terminal shows.
		var both bytes.Buffer
		code := run(args, strings.NewReader(stdin+"\n"), &both, &both)
		got := strings.ReplaceAll(both.String(), "../../testdata/", "testdata/")
		if code != 0 && code != exitInvalid {
			t.Errorf("grpc-config-dns %s: exit %d: %s", m[2], code, got)
			continue
		}
		if got != want {
			t.Errorf("grpc-config-dns %s prints\n%s\nbut the README says\n%s", m[2], got, want)
		}
		n++
	}
	if n < 4 {
		t.Errorf("found %d CLI examples in the README", n)
	}
}
