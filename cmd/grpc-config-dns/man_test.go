package main

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestManPages: man DIR writes a page for every command that help lists,
// nested ones too, each with the command's synopsis as --help prints it,
// and the help's text whole (<names> and indented examples included).
func TestManPages(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "man1")
	if code, out, errs := runCLI(t, "man", dir); code != 0 || out != "" {
		t.Fatalf("man: exit %d\n%s%s", code, out, errs)
	}
	// The commands, as the shell's completion finds them.
	var commands [][]string
	var walk func(path []string)
	walk = func(path []string) {
		names, _ := completeCLI(t, append(slices.Clone(path), "")...)
		for _, n := range names {
			if n == "help" || strings.HasPrefix(n, "-") {
				continue
			}
			sub := append(slices.Clone(path), n)
			commands = append(commands, sub)
			if _, help, _ := runCLI(t, append(sub, "--help")...); strings.Contains(help, "Available Commands:") {
				walk(sub)
			}
		}
	}
	walk(nil)
	if len(commands) < 20 {
		t.Fatalf("found %d commands: %q", len(commands), commands)
	}
	usage := regexp.MustCompile(`(?m)^Usage:\n  (.*)$`)
	pages := map[string]bool{}
	for _, c := range append(commands, nil) {
		name := strings.Join(append([]string{"grpc-config-dns"}, c...), "-") + ".1"
		pages[name] = true
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Errorf("%v: no page: %v", c, err)
			continue
		}
		page := roffText(string(b))
		// The synopsis is the usage line of --help; a command that only
		// holds others (completion) has "CMD [command]" there, and
		// "CMD [flags]" on its page.
		_, help, _ := runCLI(t, append(slices.Clone(c), "--help")...)
		m := usage.FindStringSubmatch(help)
		if m == nil {
			t.Fatalf("%v --help: no usage line in\n%s", c, help)
		}
		want := m[1]
		if path, ok := strings.CutSuffix(want, " [command]"); ok {
			want = path + " [flags]"
		}
		if !strings.Contains(page, "SYNOPSIS\n"+want+"\n") {
			t.Errorf("%s: no synopsis %q in\n%s", name, want, page)
		}
	}
	// No page for what help does not list (man itself is hidden).
	files, _ := os.ReadDir(dir)
	for _, f := range files {
		if !pages[f.Name()] {
			t.Errorf("a page for no command: %s", f.Name())
		}
	}
	b, _ := os.ReadFile(filepath.Join(dir, "grpc-config-dns-dnssec.1"))
	for _, want := range []string{
		"<kasp-db>/keys/<key id>.pem",
		// An example stays one line, and apart.
		".EX\n  grpc-config-dns dnssec ds example.test --dnssec-keys DIR\n.EE\n",
	} {
		if page := roffText(string(b)); !strings.Contains(page, want) {
			t.Errorf("grpc-config-dns-dnssec.1: no %q in\n%s", want, page)
		}
	}
	if !strings.Contains(string(b), `.TH "GRPC-CONFIG-DNS-DNSSEC" "1"`) || strings.Contains(string(b), "Auto generated") {
		t.Errorf("grpc-config-dns-dnssec.1: header:\n%s", b)
	}
}

// roffText is a page as text: roff's font changes and escapes undone,
// requests (.SH NAME, .PP) kept on their lines without their dot.
func roffText(page string) string {
	r := strings.NewReplacer(`\fB`, "", `\fP`, "", `\fI`, "", `\fR`, "", `\-`, "-", `\\`, `\`, `\&`, "", `\(en`, "-", `\(em`, "-")
	page = r.Replace(page)
	page = regexp.MustCompile(`(?m)^\.SH `).ReplaceAllString(page, "")
	return regexp.MustCompile(`\n\n+`).ReplaceAllString(page, "\n")
}
