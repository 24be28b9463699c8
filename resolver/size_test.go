package resolver

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// maxClientGrowth bounds what the resolver adds to a gRPC client: what
// selection and validation need, not the linter (issue 18: it was 4.5 MB,
// with the JSON Schema layer, x/text and miekg/dns). It is the issue's
// "1 MB" in decimal, 1 000 000 bytes, not a MiB.
const maxClientGrowth = 1_000_000

// TestClientSize builds the same health-check client twice, with
// grpc-go's dns resolver (testdata/clientsize/plain) and with ours
// (testdata/clientsize/dnsconfig), with the default flags of go build, and
// bounds the difference. It takes seconds (two builds), most of this
// package's test time, so it runs only with GRPC_CONFIG_DNS_SIZE_TEST=1,
// which .ci/run sets.
func TestClientSize(t *testing.T) {
	if os.Getenv("GRPC_CONFIG_DNS_SIZE_TEST") != "1" {
		t.Skip("builds two programs (seconds): set GRPC_CONFIG_DNS_SIZE_TEST=1 to run it (.ci/run does)")
	}
	if testing.Short() {
		t.Skip("builds two programs")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	dir := t.TempDir()
	size := func(pkg string) int64 {
		out := filepath.Join(dir, filepath.Base(pkg))
		cmd := exec.Command(goTool, "build", "-o", out, "./"+pkg)
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", pkg, err, b)
		}
		fi, err := os.Stat(out)
		if err != nil {
			t.Fatal(err)
		}
		return fi.Size()
	}
	plain := size("testdata/clientsize/plain")
	ours := size("testdata/clientsize/dnsconfig")
	growth := ours - plain
	t.Logf("plain grpc-go client %d bytes, with the dnsconfig resolver %d bytes: %+d bytes (%.2f MiB)", plain, ours, growth, float64(growth)/(1<<20))
	if growth > maxClientGrowth {
		t.Errorf("the resolver adds %d bytes to a client, more than %d: check what it links (go list -deps ./resolver)", growth, maxClientGrowth)
	}
}
