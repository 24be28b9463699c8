package serviceconfig

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// everyRecord is every record of the corpus and of the peers' suites.
func everyRecord(t *testing.T) map[string][]byte {
	out := map[string][]byte{}
	for _, name := range corpusFiles(t) {
		text, err := os.ReadFile(filepath.Join("../testdata/corpus", name))
		if err != nil {
			t.Fatal(err)
		}
		out["corpus/"+name] = text
	}
	for _, f := range loadPeerFiles(t) {
		for _, v := range f.Vectors {
			out["peers/"+v.ID] = []byte(v.text())
		}
	}
	return out
}

// TestRefusalsDeclared: the clients a rule names as refusing or misreading
// are among those clientEffects declares for its code, so that the table
// docs/rules.md shows from it says all that the rules do.
func TestRefusalsDeclared(t *testing.T) {
	for name, text := range everyRecord(t) {
		_, ds := Lint(text, LintOptions{Clients: clientsDeclared, AsServed: true})
		for _, d := range ds {
			ce := clientEffects[d.code()]
			if d.refusedBy&^ce.rejects != 0 {
				t.Errorf("%s: %s names %s as refusing; clientEffects declares %s", name, d.Code, d.refusedBy, ce.rejects)
			}
			if d.misreadBy&^codeMisreads[d.code()] != 0 {
				t.Errorf("%s: %s names %s as misreading; clientEffects declares %s", name, d.Code, d.misreadBy, codeMisreads[d.code()])
			}
		}
	}
}

// TestOneDiagnosticPerProblem: no two diagnostics of one code at one place,
// and a name in another case than a field's is one diagnostic (field-case),
// not also unknown-field (issue: grpc-go's own retry example).
func TestOneDiagnosticPerProblem(t *testing.T) {
	for name, text := range everyRecord(t) {
		_, ds := Lint(text, LintOptions{})
		seen := map[string]bool{}
		for _, d := range ds {
			if d.Code == omittedCode {
				continue
			}
			k := fmt.Sprintf("%d:%d:%s", d.Line, d.Column, d.Path)
			if seen[k+d.Code+d.Message] {
				t.Errorf("%s: two %s at %s: %s", name, d.Code, k, d.Message)
			}
			seen[k+d.Code+d.Message], seen[k+d.Code] = true, true
		}
		for _, d := range ds {
			k := fmt.Sprintf("%d:%d:%s", d.Line, d.Column, d.Path)
			if d.Code == codeUnknownField.String() && seen[k+codeFieldCase.String()] {
				t.Errorf("%s: field-case and unknown-field at %s", name, k)
			}
		}
	}
	// grpc-go's examples/features/retry config: one field-case per key,
	// saying what each client does; the retryPolicy the other clients
	// see (no fields) is the error, naming them.
	const retry = `{"methodConfig":[{"name":[{"service":"grpc.examples.echo.Echo"}],"waitForReady":true,
"retryPolicy":{"MaxAttempts":4,"InitialBackoff":".01s","MaxBackoff":".01s","BackoffMultiplier":1.0,"RetryableStatusCodes":["UNAVAILABLE"]}}]}`
	_, ds := Lint([]byte(retry), LintOptions{})
	var fieldCase int
	for _, d := range ds {
		switch d.Code {
		case codeFieldCase.String():
			fieldCase++
			if m := ClientEffects(&d); m["go"] != "reads it as the field of that name" || m["java"] != "ignores field" {
				t.Errorf("field-case clients: %v", m)
			}
		case codeUnknownField.String():
			t.Errorf("unknown-field beside field-case: %v", d)
		case codeRetryPolicy.String():
			if !strings.Contains(d.Message, "grpc-go reads") {
				t.Errorf("retry-policy says all clients reject it, but grpc-go reads the fields: %s", d.Message)
			}
		}
	}
	if fieldCase != 5 {
		t.Errorf("%d field-case diagnostics, want one per key (5): %v", fieldCase, ds)
	}
}

// TestClientTable keeps docs/rules.md's table of what each client does
// per code current: go test ./serviceconfig -run ClientTable -update-rules
func TestClientTable(t *testing.T) {
	const begin, end = "<!-- clients:begin -->\n", "<!-- clients:end -->"
	var b strings.Builder
	b.WriteString("| code | grpc-go (`go`) | C-core (`c-core`) | grpc-java (`java`) | grpc-js (`node`) | our resolver (`dnsconfig`) |\n|---|---|---|---|---|---|\n")
	for c := diagCode(1); c < numCodes; c++ {
		ce := &clientEffects[c]
		if ce.rejects|codeMisreads[c]|ce.ignores == 0 {
			continue
		}
		fmt.Fprintf(&b, "| `%s` |", c)
		for i := range clientIDs {
			cl := Clients(1 << i)
			var e []string
			switch {
			case ce.rejects&cl != 0 && ce.fails:
				e = append(e, "**fails channel**")
			case ce.rejects&cl != 0:
				e = append(e, "**rejects config**")
			}
			if codeMisreads[c]&cl != 0 {
				e = append(e, "**"+clientTexts[c].reads+"**")
			}
			if ce.ignores&cl != 0 {
				e = append(e, effectIgnores.text(&clientTexts[c]))
			}
			if len(e) == 0 {
				e = append(e, "ok")
			} else if ce.some && (ce.rejects|codeMisreads[c])&cl != 0 {
				e[len(e)-1] += " (some values)"
			}
			fmt.Fprintf(&b, " %s |", strings.Join(e, "; "))
		}
		b.WriteString("\n")
	}
	syncDocSection(t, "../docs/rules.md", begin, end, b.String(), *updateRules, "go test ./serviceconfig -run ClientTable -update-rules")
}

// syncDocSection checks that the section of file between the markers begin
// and end holds want, a table generated from the code; with update it
// rewrites the section instead, how says how to.
func syncDocSection(t *testing.T, file, begin, end, want string, update bool, how string) {
	t.Helper()
	doc, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	i, j := bytes.Index(doc, []byte(begin)), bytes.Index(doc, []byte(end))
	if i < 0 || j < i {
		t.Fatalf("%s has no %q ... %q section", file, begin, end)
	}
	if string(doc[i+len(begin):j]) == want {
		return
	}
	if !update {
		t.Fatalf("%s's generated table is stale: %s\n%s", file, how, want)
	}
	out := append(append(append([]byte{}, doc[:i+len(begin)]...), want...), doc[j:]...)
	if err := os.WriteFile(file, out, 0o644); err != nil {
		t.Fatal(err)
	}
}

// FuzzParseClients: compat.clients and --clients are read by
// ParseClients, from a user's file: it never panics, and what it accepts
// is written back by ClientIDs and read again as the same set.
func FuzzParseClients(f *testing.F) {
	for _, s := range []string{"all", "go,java", " c-core , node ", "dnsconfig", "none", "", ",", "go,,java", "swift", "GO", "grpc-js,python"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := ParseClients(s)
		if err != nil {
			if c != 0 {
				t.Fatalf("ParseClients(%q) = %v with error %v", s, c, err)
			}
			return
		}
		ids := ClientIDs(c)
		if len(ids) == 0 {
			if c != clientsDeclared {
				t.Fatalf("ParseClients(%q) = %08b: no client, but not none", s, c)
			}
			return
		}
		back, err := ParseClients(strings.Join(ids, ","))
		if err != nil || back != c&AllClients {
			t.Fatalf("ParseClients(%q) = %v; its IDs %v read back as %v, %v", s, c, ids, back, err)
		}
	})
}

// The verdict's edge cases a review found: a refusal past the cap is not
// lost, and a choice's criteria count only for the clients that come to it.
func TestVerdictEdges(t *testing.T) {
	var many strings.Builder
	for i := range 120 {
		fmt.Fprintf(&many, `,{"name":[{"service":"s%d"}],"x%d":1}`, i, i)
	}
	for _, tc := range []struct {
		name, record string
		clients      Clients
		valid        bool
	}{
		// grpc-js rejects the methodConfig without a name, past 120
		// unknown fields; a rewritten "0.1s" named grpc-js before it.
		{"past the cap, after a rewritten value", `{"methodConfig":[{"name":[{}],"timeout":"0.1s"}` + many.String() + `,{"timeout":"1s"}]}`, ClientNode, false},
		{"past the cap", `{"methodConfig":[{"name":[{}],"timeout":"1s"}` + many.String() + `,{"timeout":"1s"}]}`, ClientNode, false},
		// grpc-go takes choice 0: choice 1's "go" and choice 2's empty
		// list are never read by it.
		{"a criterion of a choice grpc-go never reaches", `[{"clientLanguage":["GO"],"serviceConfig":{}},{"clientLanguage":["go","java"],"serviceConfig":{}},{"serviceConfig":{}}]`, ClientGo, true},
		{"an empty list after grpc-go's choice", `[{"clientLanguage":["GO"],"serviceConfig":{}},{"clientHostname":[],"serviceConfig":{}}]`, ClientGo, true},
		{"an empty list grpc-go comes to", `[{"clientHostname":[],"serviceConfig":{}},{"serviceConfig":{}}]`, ClientGo, false},
		// Constraints on a choice grpc-go never picks: nothing to misread.
		{"constraints on a java-only choice", `[{"clientLanguage":["GO"],"serviceConfig":{}},{"clientLanguage":["java"],"dynamicParameterConstraints":{"constraint":{"key":"env","value":"x"}},"serviceConfig":{}},{"serviceConfig":{}}]`, ClientGo, true},
		{"constraints grpc-java reads", `[{"clientLanguage":["GO"],"serviceConfig":{}},{"clientLanguage":["java"],"dynamicParameterConstraints":{"constraint":{"key":"env","value":"x"}},"serviceConfig":{}},{"serviceConfig":{}}]`, ClientJava, false},
	} {
		_, ds := Lint([]byte(tc.record), LintOptions{Clients: tc.clients})
		rec, pds := Publish(Source{Text: []byte(tc.record)}, PublishOptions{Clients: tc.clients, NineDigitDurations: true, OmitNulls: true})
		if !ds.HasErrors() != tc.valid || (rec != nil) != tc.valid {
			t.Errorf("%s: lint valid=%v, Publish published=%v, want %v\nlint: %v\nPublish: %v", tc.name, !ds.HasErrors(), rec != nil, tc.valid, ds, pds)
		}
	}
}
