package main

import (
	"bytes"
	"strings"
	"testing"
)

// runCLI runs the CLI in-process, as a user would from a shell.
func runCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(args, strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}
