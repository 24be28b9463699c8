package serviceconfig

import (
	"bytes"
	"testing"
)

// choicesFromText and Validate place diagnostics in the text the user
// wrote, whatever its kind, as Lint does.
func TestChoicesFromTextPlacesDiagnostics(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		line, col  int
		path       string
	}{
		{"bare config", "\n  {\"methodConfig\": [{\"name\": [{}], \"timeout\": \"1m\"}]}", 2, 47, "/methodConfig/0/timeout"},
		{"choice list", "[{\"serviceConfig\": {\"methodConfig\": [{\"name\": [{}], \"timeout\": \"1m\"}]}}]", 1, 64, "/0/serviceConfig/methodConfig/0/timeout"},
		{"raw TXT", ` grpc_config=[{"serviceConfig":{"methodConfig":[{"name":[{}],"timeout":"1m"}]}}]`, 1, 72, "/0/serviceConfig/methodConfig/0/timeout"},
		{"dig TXT", `"grpc_config=[{\"serviceConfig\":" "{\"methodConfig\":[{\"name\":[{}],\"timeout\":\"1m\"}]}}]"`, 1, 83, "/0/serviceConfig/methodConfig/0/timeout"},
	} {
		ch, ds := choicesFromText([]byte(tc.text))
		if ch == nil {
			t.Fatalf("%s: %v", tc.name, ds)
		}
		got := ch.Validate(0)
		_, lint := Lint([]byte(tc.text), LintOptions{})
		if len(got) != 1 || got[0].Line != tc.line || got[0].Column != tc.col || got[0].Path != tc.path {
			t.Errorf("%s: Validate = %+v, want %d:%d at %s", tc.name, got, tc.line, tc.col, tc.path)
			continue
		}
		found := false
		for _, d := range lint {
			found = found || (d.Code == got[0].Code && d.Line == got[0].Line && d.Column == got[0].Column && d.Path == got[0].Path)
		}
		if !found {
			t.Errorf("%s: Lint places it elsewhere: %+v", tc.name, lint)
		}
	}
	// A syntax error in a bare config is placed in its text, not in the
	// choice list it is wrapped in.
	_, ds := choicesFromText([]byte("{\"methodConfig\": [}"))
	if len(ds) != 1 || ds[0].Line != 1 || ds[0].Column != 19 {
		t.Errorf("syntax error placed at %+v, want 1:19", ds)
	}
}

// FuzzChoicesFromText: what select does with any input. No panic, and
// every diagnostic, of the parse or of Validate on any choice, is a
// registered code placed inside the input.
func FuzzChoicesFromText(f *testing.F) {
	f.Add([]byte(canary))
	f.Add([]byte("\n  {\"methodConfig\": [{\"name\": [{}], \"timeout\": \"1m\"}]}"))
	f.Add([]byte(` grpc_config=[{"serviceConfig":{"methodConfig":[{"name":[{}],"timeout":"1m"}]}}]`))
	f.Add([]byte(`_grpc_config.x 60 IN TXT "grpc_config=[{\"serviceConfig\":" "{\"methodConfig\":[{\"name\":[{}],\"timeout\":\"1m\"}]}}]" ; c`))
	f.Add([]byte(`"v=spf1 -all"` + "\n" + `"grpc_config=[{\"serviceConfig\":{}}]"`))
	f.Fuzz(func(t *testing.T, text []byte) {
		lines := bytes.Count(text, []byte("\n")) + 1
		check := func(ds Diagnostics) {
			for _, d := range ds {
				if _, ok := lookupCode(d.Code); !ok || d.Message == "" {
					t.Fatalf("bad diagnostic %+v", d)
				}
				if d.Line > lines || d.Line < 0 || d.Column < 0 {
					t.Fatalf("diagnostic placed at %d:%d, outside the input's %d lines: %+v", d.Line, d.Column, lines, d)
				}
			}
		}
		ch, ds := choicesFromText(text)
		check(ds)
		if ch == nil {
			return
		}
		for i := range ch.List {
			check(ch.Validate(i))
		}
	})
}
