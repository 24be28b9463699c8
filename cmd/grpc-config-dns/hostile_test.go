package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	sc "github.com/grpc-config-dns/grpc-config-dns/serviceconfig"
)

// endless is a reader of n bytes of c, without holding them.
type endless struct {
	n int
	c byte
}

func (r *endless) Read(p []byte) (int, error) {
	if r.n == 0 {
		return 0, io.EOF
	}
	k := min(len(p), r.n)
	for i := range p[:k] {
		p[i] = r.c
	}
	r.n -= k
	return k, nil
}

// Inputs beyond the limits are invalid inputs (exit 1) with one
// input-too-large diagnostic that names the input, the limit and the fix,
// in text and in JSON, for every command; a file is refused before it is
// read.
func TestInputTooLarge(t *testing.T) {
	dir := t.TempDir()
	huge := filepath.Join(dir, "huge.yaml")
	f, err := os.Create(huge)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := os.Truncate(huge, sc.MaxInputSize+1); err != nil { // sparse: no disk used
		t.Fatal(err)
	}
	record := filepath.Join(dir, "record.json")
	var b strings.Builder
	b.WriteString("[")
	for i := 0; b.Len() <= sc.MaxRecordText; i++ {
		fmt.Fprintf(&b, `{"clientHostname":["host-%d"],"serviceConfig":{}},`, i)
	}
	b.WriteString(`{"serviceConfig":{}}]`)
	if err := os.WriteFile(record, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		args  []string
		stdin io.Reader
		want  string // in the message
	}{
		{[]string{"lint", huge}, nil, "huge.yaml: error: the input is 67108865 bytes, more than 67108864 bytes (64 MiB)"},
		{[]string{"lint", "-"}, &endless{sc.MaxInputSize + 1, ' '}, "<stdin>: error: the input is more than 67108864 bytes"},
		{[]string{"select", huge}, nil, "input-too-large"},
		{[]string{"encode", huge}, nil, "input-too-large"},
		{[]string{"zone", "--config", huge}, nil, "input-too-large"},
		{[]string{"lint", record}, nil, "record.json:1:1: error: the input is"},
		{[]string{"select", "--bucket", "1", "--hostname", "x", record}, nil, "any record can be written in"},
		{[]string{"encode", record}, nil, "any record can be written in"},
	} {
		start := time.Now()
		var out, errb bytes.Buffer
		stdin := tc.stdin
		if stdin == nil {
			stdin = strings.NewReader("")
		}
		code := run(tc.args, stdin, &out, &errb)
		both := out.String() + errb.String()
		if code != exitInvalid || !strings.Contains(both, tc.want) || !strings.Contains(both, "input-too-large") {
			t.Errorf("%v: exit %d, output\n%s\nwant exit 1 and %q", tc.args, code, both, tc.want)
		}
		// Bounded cost, not a benchmark: reading 64 MiB from stdin takes
		// seconds under the race detector on a busy machine.
		limit := 5 * time.Second
		if raceEnabled {
			limit = 20 * time.Second
		}
		if took := time.Since(start); took > limit {
			t.Errorf("%v: took %v", tc.args, took)
		}
	}

	code, out, _ := runCLI(t, "lint", "--format", "json", huge, record)
	var r lintReport
	if err := json.Unmarshal([]byte(out), &r); err != nil || code != exitInvalid || len(r.Inputs) != 2 {
		t.Fatalf("exit %d, %v:\n%s", code, err, out)
	}
	for _, in := range r.Inputs {
		if in.Valid || len(in.Diagnostics) != 1 || in.Diagnostics[0].Code != "input-too-large" {
			t.Errorf("%+v", in)
		}
	}
}

// Lint of an input with thousands of mistakes prints 100 and a count,
// in text and in JSON.
func TestLintListsAtMost100(t *testing.T) {
	var b strings.Builder
	b.WriteString("[")
	for i := range 5000 {
		fmt.Fprintf(&b, `{"clientHostnam":["h%d"],"serviceConfig":{"timeout":"1m"}},`, i)
	}
	b.WriteString(`{"serviceConfig":{}}]`)
	p := filepath.Join(t.TempDir(), "bad.json")
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, _ := runCLI(t, "lint", p)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != exitInvalid || len(lines) != sc.MaxDiagnostics+1 || !strings.Contains(lines[len(lines)-1], "more error(s)") || !strings.HasSuffix(lines[len(lines)-1], "[diagnostics-omitted]") {
		t.Errorf("exit %d, %d lines, last %q", code, len(lines), lines[len(lines)-1])
	}
	code, out, _ = runCLI(t, "lint", "--format", "json", p)
	var r lintReport
	if err := json.Unmarshal([]byte(out), &r); err != nil || code != exitInvalid || len(r.Inputs[0].Diagnostics) != sc.MaxDiagnostics+1 {
		t.Errorf("exit %d, %v", code, err)
	}
}

// The hostile inputs of the attack run, through the CLI's own path: each
// within seconds and a bounded amount of memory (all with 10x slack and
// more; they took 7-54 s, or GBs, before).
func TestHostileInputsBounded(t *testing.T) {
	if raceEnabled {
		t.Skip("costs are measured without the race detector")
	}
	dir := t.TempDir()
	write := func(name string, f func(b *strings.Builder)) string {
		var b strings.Builder
		f(&b)
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	inputs := []string{
		write("choices.json", func(b *strings.Builder) {
			b.WriteString("[")
			for i := range 20_000 {
				fmt.Fprintf(b, `{"clientHostname":["h%d"],"serviceConfig":{}},`, i)
			}
			b.WriteString(`{"serviceConfig":{}}]`)
		}),
		write("number.json", func(b *strings.Builder) {
			b.WriteString(`[{"serviceConfig":{"methodConfig":[{"name":[{}],"maxRequestMessageBytes":` + strings.Repeat("9", 1_000_000) + `}]}}]`)
		}),
		write("zones.yaml", func(b *strings.Builder) {
			b.WriteString("zones: [")
			b.WriteString(strings.Repeat("a,", 1_000_000))
			b.WriteString("a]\n")
		}),
		write("services.yaml", func(b *strings.Builder) {
			b.WriteString("zones:\n  - origin: example.test.\n    nameservers: [ns.other.]\n    services:\n")
			for i := range 5000 {
				fmt.Fprintf(b, "      - {name: s%d, choices: [{clientHostnam: [x], serviceConfig: {timeout: 1m}}]}\n", i)
			}
		}),
	}
	for _, p := range inputs {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		start := time.Now()
		code, out, errs := runCLI(t, "lint", p)
		took := time.Since(start)
		runtime.ReadMemStats(&after)
		st, _ := os.Stat(p)
		alloc := after.TotalAlloc - before.TotalAlloc
		t.Logf("%s (%d bytes): exit %d, %d lines, %v, %.1f MB allocated", filepath.Base(p), st.Size(), code, strings.Count(out, "\n"), took, float64(alloc)/1e6)
		if code == exitUsage || strings.Count(out, "\n") > sc.MaxDiagnostics+1 {
			t.Errorf("%s: exit %d\n%s%s", p, code, out, errs)
		}
		if took > 10*time.Second || alloc > 400*uint64(st.Size())+64<<20 {
			t.Errorf("%s: %v and %d bytes allocated for %d bytes of input", p, took, alloc, st.Size())
		}
	}
}
