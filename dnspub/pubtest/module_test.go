package pubtest

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// maxGained and maxGrowth bound what a user's module takes on to test
// with this package and the resolver (issue 32): at most 5 requirements
// beyond grpc's own, miekg/dns and this module, and a test binary at most
// 1.5 times a plain grpc-go test's.
const (
	maxGained = 5
	maxGrowth = 1.5
)

// userTest is the test of the user's module: it publishes a config,
// dials through dnsconfig://, changes the config and sees the change.
const userTest = `package user

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/grpc-config-dns/grpc-config-dns/dnspub/pubtest"
	"github.com/grpc-config-dns/grpc-config-dns/resolver"
)

func TestConfigChange(t *testing.T) {
	s := pubtest.Start(t, "zones:\n  - origin: example.test.\n    ttl: 1\n    nameservers: [ns1.example.test.]\n    services:\n      - {name: echo, addresses: [127.0.0.1], serviceConfig: {methodConfig: [{name: [{}], timeout: 2s}]}}\n")
	b := resolver.NewBuilder(resolver.Options{MinRefresh: 100 * time.Millisecond})
	target := "dnsconfig://" + s.Addr() + "/echo.example.test:50051"
	conn, err := grpc.NewClient(target, append(b.DialOptions(), grpc.WithTransportCredentials(insecure.NewCredentials()))...)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.Connect()
	wait := func(want string) {
		for range 500 {
			if st, ok := b.State(target); ok && strings.Contains(st.ServiceConfig, want) {
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
		t.Fatalf("the channel never got %s", want)
	}
	wait("\"2s\"")
	if err := s.SetService("example.test", "echo", "{addresses: [127.0.0.1], serviceConfig: {methodConfig: [{name: [{}], timeout: 5s}]}}"); err != nil {
		t.Fatal(err)
	}
	wait("\"5s\"")
}
`

// plainTest is a test of a module that uses grpc-go alone.
const plainTest = `package user

import (
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

func TestDial(t *testing.T) {
	conn, err := grpc.NewClient("dns:///echo.example.test:50051", grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	conn.Close()
}
`

// TestUserModule makes two modules outside this one, as a user would: one
// whose test uses this package and the resolver, one whose test uses
// grpc-go alone. It runs the first's test, and bounds the requirements it
// gains and its test binary's size against the second's. It runs go mod
// tidy and builds two test binaries (tens of seconds), so it runs only
// with GRPC_CONFIG_DNS_SIZE_TEST=1, which .ci/run sets.
func TestUserModule(t *testing.T) {
	if os.Getenv("GRPC_CONFIG_DNS_SIZE_TEST") != "1" {
		t.Skip("makes two modules and builds their tests (tens of seconds): set GRPC_CONFIG_DNS_SIZE_TEST=1 to run it (.ci/run does)")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	_, file, _, _ := runtime.Caller(0)
	repo := filepath.Join(filepath.Dir(file), "..", "..")
	goCmd := func(dir string, args ...string) string {
		t.Helper()
		cmd := exec.Command(goTool, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("go %s in %s: %v\n%s", strings.Join(args, " "), dir, err, out)
		}
		return string(out)
	}
	grpcVersion := strings.TrimSpace(goCmd(repo, "list", "-m", "-f", "{{.Version}}", "google.golang.org/grpc"))

	// module writes a module holding test, tidies it, and returns its
	// directory and the requirements of its go.mod.
	module := func(name, test string, ours bool) (string, []string) {
		dir := filepath.Join(t.TempDir(), name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		mod := "module example.com/" + name + "\n\ngo 1.25\n\nrequire google.golang.org/grpc " + grpcVersion + "\n"
		if ours {
			mod += "require github.com/grpc-config-dns/grpc-config-dns v0.0.0\n\nreplace github.com/grpc-config-dns/grpc-config-dns => " + repo + "\n"
		}
		for f, text := range map[string]string{"go.mod": mod, "user_test.go": test} {
			if err := os.WriteFile(filepath.Join(dir, f), []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		goCmd(dir, "mod", "tidy")
		var gomod struct{ Require []struct{ Path string } }
		if err := json.Unmarshal([]byte(goCmd(dir, "mod", "edit", "-json")), &gomod); err != nil {
			t.Fatal(err)
		}
		var reqs []string
		for _, r := range gomod.Require {
			reqs = append(reqs, r.Path)
		}
		return dir, reqs
	}
	size := func(dir string) int64 {
		out := filepath.Join(dir, "user.test")
		goCmd(dir, "test", "-c", "-o", out, ".")
		fi, err := os.Stat(out)
		if err != nil {
			t.Fatal(err)
		}
		return fi.Size()
	}

	ourDir, ourReqs := module("ours", userTest, true)
	plainDir, plainReqs := module("plain", plainTest, false)
	goCmd(ourDir, "test", "-count=1", ".")

	var gained []string
	for _, r := range ourReqs {
		if !slices.Contains(plainReqs, r) && r != "github.com/grpc-config-dns/grpc-config-dns" && r != "github.com/miekg/dns" {
			gained = append(gained, r)
		}
	}
	for _, heavy := range []string{"go.etcd.io/", "go.etcd.io/bbolt", "github.com/prometheus/", "go.uber.org/zap"} {
		for _, r := range ourReqs {
			if strings.HasPrefix(r, heavy) {
				t.Errorf("the user's module needs %s", r)
			}
		}
	}
	ours, plain := size(ourDir), size(plainDir)
	t.Logf("requirements gained beyond grpc, miekg/dns and this module: %d %v; test binary %d bytes against %d with grpc-go alone (%.2f×)",
		len(gained), gained, ours, plain, float64(ours)/float64(plain))
	if len(gained) > maxGained {
		t.Errorf("the user's module gains %d requirements, more than %d: %v", len(gained), maxGained, gained)
	}
	if float64(ours) > maxGrowth*float64(plain) {
		t.Errorf("the user's test binary is %.2f× a plain grpc-go test's, more than %.1f×", float64(ours)/float64(plain), maxGrowth)
	}
}
