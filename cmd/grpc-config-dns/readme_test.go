package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The examples of the README and of docs/cli.md are run as written, so
// they stay true: every YAML block is a publisher config that lints
// clean, and every "$ grpc-config-dns ..." prints what they say.
func TestREADMEExamples(t *testing.T) {
	yamlBlocks := 0
	for _, name := range []string{"README.md", "docs/cli.md"} {
		b, err := os.ReadFile("../../" + name)
		if err != nil {
			t.Fatal(err)
		}
		for i, m := range regexp.MustCompile("(?s)```yaml\n(.*?)```").FindAllStringSubmatch(string(b), -1) {
			yamlBlocks++
			p := filepath.Join(t.TempDir(), "example.yaml")
			if err := os.WriteFile(p, []byte(m[1]), 0o644); err != nil {
				t.Fatal(err)
			}
			if code, out, errs := runCLI(t, "lint", "--strict", p); code != 0 {
				t.Errorf("%s: YAML example %d does not lint clean (exit %d):\n%s%s", name, i, code, out, errs)
			}
		}
		if name == "README.md" {
			cliExamples(t, name, string(b))
		}
	}
	if yamlBlocks < 2 {
		t.Errorf("found %d YAML examples in the README and docs/cli.md", yamlBlocks)
	}
}

// TestDocsExamples: the "$ grpc-config-dns ..." examples of docs/*.md
// print what the docs say, as the README's do.
func TestDocsExamples(t *testing.T) {
	docs, err := filepath.Glob("../../docs/*.md")
	if err != nil || len(docs) == 0 {
		t.Fatalf("no docs: %v", err)
	}
	count := map[string]int{}
	for _, p := range docs {
		text, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		name := strings.TrimPrefix(p, "../../")
		count[name] = cliExamples(t, name, string(text))
	}
	if count["docs/policies.md"] < 1 || count["docs/cli.md"] < 4 {
		t.Errorf("too few CLI examples in docs/policies.md (want 1) or docs/cli.md (want 4): %v", count)
	}
}

// cliExamples runs every "$ grpc-config-dns ..." example of a Markdown
// file, the lines after it up to a line starting with "$" or "`" being
// what it prints, and reports those that print otherwise. (Commands
// reading stdin are given it from the echo before the pipe.) It returns
// how many it ran.
func cliExamples(t *testing.T, name, text string) int {
	t.Helper()
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
			t.Errorf("%s: grpc-config-dns %s: exit %d: %s", name, m[2], code, got)
			continue
		}
		if got != want {
			t.Errorf("grpc-config-dns %s prints\n%s\nbut %s says\n%s", m[2], got, name, want)
		}
		n++
	}
	return n
}

// TestDocsAvoidMDNSPort: no Markdown file of the repository tells users to
// use port 5353, the mDNS port that an mDNS daemon holds on most desktops
// (the default is 127.0.0.1:1053, issue 18). The one sentence that says
// why the default is not 5353 may name it, if it says "mDNS".
func TestDocsAvoidMDNSPort(t *testing.T) {
	port := regexp.MustCompile(`\b5353\b`)
	var files []string
	err := filepath.WalkDir("../..", func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); p != "../.." && (strings.HasPrefix(n, ".") || n == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".md") {
			return nil
		}
		files = append(files, p)
		text, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, loc := range port.FindAllIndex(text, -1) {
			if !strings.Contains(sentenceAt(string(text), loc[0]), "mDNS") {
				bol := bytes.LastIndexByte(text[:loc[0]], '\n') + 1
				eol, _, _ := bytes.Cut(text[bol:], []byte("\n"))
				t.Errorf("%s:%d mentions port 5353, the mDNS port: use 1053 (serve's default is 127.0.0.1:1053):\n\t%s",
					strings.TrimPrefix(p, "../../"), 1+bytes.Count(text[:loc[0]], []byte("\n")), eol)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 5 {
		t.Errorf("found only %d Markdown files: %v", len(files), files)
	}
}

// sentenceAt is the sentence of text around offset i: from the end of the
// previous sentence (". ", "! ", "? " or a blank line) to the end of this.
func sentenceAt(text string, i int) string {
	isEnd := func(j int) bool {
		if j+1 >= len(text) {
			return j+1 == len(text)
		}
		switch {
		case strings.ContainsRune(".!?", rune(text[j])) && (text[j+1] == ' ' || text[j+1] == '\n'):
			return true
		case text[j] == '\n' && text[j+1] == '\n':
			return true
		}
		return false
	}
	start := i
	for start > 0 && !isEnd(start-1) {
		start--
	}
	end := i
	for end < len(text) && !isEnd(end) {
		end++
	}
	if end < len(text) {
		end++
	}
	return strings.Join(strings.Fields(text[start:end]), " ")
}
