package model

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const secret32 = "c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0MTI="

func keyConfig(key string) []byte {
	return []byte("tsigKeys:\n  - {name: xfr, " + key + "}\nzones:\n  - origin: example.test.\n    nameservers: [ns.example.net.]\n    transfer: {allow: [127.0.0.1], key: xfr}\n")
}

// A TSIG secret can stay out of the config (issue 18): in a file, as a
// Kubernetes Secret is mounted, or in an environment variable.
func TestTSIGSecretFromFileAndEnv(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "xfr.key")
	if err := os.WriteFile(file, []byte(secret32+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GCD_TEST_TSIG", secret32)
	for _, key := range []string{"secretFile: " + file, "secretEnv: GCD_TEST_TSIG", "secret: " + secret32} {
		cfg, ds := Parse(keyConfig(key))
		if ds.HasErrors() || len(cfg.Keys) != 1 || cfg.Keys[0].Secret != secret32 {
			t.Errorf("%s: keys %+v, diagnostics %v", key, cfg, ds)
		}
	}
	for _, tc := range []struct{ key, want string }{
		{"secretFile: " + filepath.Join(dir, "missing"), "cannot read the secret file"},
		{"secretEnv: GCD_TEST_UNSET", "GCD_TEST_UNSET is not set"},
		{"secretEnv: GCD_TEST_TSIG, secret: " + secret32, "more than one of secret, secretFile and secretEnv"},
	} {
		_, ds := Parse(keyConfig(tc.key))
		if !ds.HasErrors() || !strings.Contains(ds.Err().Error(), tc.want) {
			t.Errorf("%s: %v, want an error saying %q", tc.key, ds, tc.want)
		}
	}
}
