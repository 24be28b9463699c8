package config

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// FuzzParse: no input makes Parse panic or hang (YAML aliases and merge
// keys can refer to themselves), and every result is either a config or
// an error diagnostic.
func FuzzParse(f *testing.F) {
	f.Add(Example)
	for _, name := range []string{"example.json", "production.yaml", "invalid.yaml"} {
		if b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "publisher", name)); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte("a: &x\n  <<: *x\nzones: [*x]\n"))
	f.Add([]byte("zones:\n - &z {origin: a., nameservers: [ns.b.], services: [{name: s, serviceConfig: &c {x: *c}}]}\n"))
	f.Add([]byte("zones: [{origin: a., nameservers: [ns.b.], services: [{name: s, choices: [{percentage: 0x10, serviceConfig: {}}]}]}]\n"))
	f.Fuzz(func(t *testing.T, text []byte) {
		// A watchdog: an input that makes Parse loop crashes the worker,
		// and the fuzzer keeps the input.
		watchdog := time.AfterFunc(5*time.Second, func() { panic("Parse is still running after 5s") })
		cfg, ds := Parse(text)
		watchdog.Stop()
		if cfg == nil && !ds.HasErrors() {
			t.Fatalf("no config and no error")
		}
		if cfg != nil && ds.HasErrors() {
			t.Fatalf("a config with errors")
		}
		for _, d := range ds {
			if d.Code == "" || d.Message == "" {
				t.Fatalf("empty diagnostic %+v", d)
			}
		}
	})
}
