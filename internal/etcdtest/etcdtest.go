// Package etcdtest starts a real etcd (Debian's etcd-server package) on
// 127.0.0.1 for tests, with its data in a temporary directory.
//
// Tests that need etcd run only when GRPC_CONFIG_DNS_ETCD=1 (set by
// store/etcdtest.sh, which .ci/run calls and which installs etcd-server);
// under plain `go test ./...` they skip, saying so.
package etcdtest

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"
)

// EnvVar enables the tests that need etcd.
const EnvVar = "GRPC_CONFIG_DNS_ETCD"

// Etcd is a running etcd.
type Etcd struct {
	// Endpoint is HOST:PORT of its client URL.
	Endpoint string
	dir      string
	peer     string
	bin      string
	t        testing.TB

	mu  sync.Mutex
	cmd *exec.Cmd
}

// Start starts etcd, or skips the test when etcd tests are not enabled.
// It is stopped when the test ends.
func Start(t testing.TB) *Etcd {
	t.Helper()
	if os.Getenv(EnvVar) != "1" {
		t.Skipf("needs etcd: run store/etcdtest.sh (or set %s=1 with etcd from Debian's etcd-server package in PATH)", EnvVar)
	}
	bin, err := exec.LookPath("etcd")
	if err != nil {
		t.Fatalf("%s=1 but etcd is not in PATH: apt-get install etcd-server (store/etcdtest.sh does)", EnvVar)
	}
	e := &Etcd{Endpoint: freeAddr(t), peer: freeAddr(t), dir: t.TempDir(), bin: bin, t: t}
	e.Start()
	t.Cleanup(e.Stop)
	return e
}

func freeAddr(t testing.TB) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// Start starts etcd again after Stop, with the same data and address.
func (e *Etcd) Start() {
	e.t.Helper()
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.cmd != nil {
		return
	}
	log, err := os.OpenFile(filepath.Join(e.dir, "etcd.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		e.t.Fatal(err)
	}
	cmd := exec.Command(e.bin, "--data-dir", filepath.Join(e.dir, "data"), "--name", "test",
		"--listen-client-urls", "http://"+e.Endpoint, "--advertise-client-urls", "http://"+e.Endpoint,
		"--listen-peer-urls", "http://"+e.peer, "--initial-advertise-peer-urls", "http://"+e.peer,
		"--initial-cluster", "test=http://"+e.peer, "--log-level", "warn")
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		e.t.Fatalf("starting etcd: %v", err)
	}
	e.cmd = cmd
	deadline := time.Now().Add(20 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", e.Endpoint, 200*time.Millisecond)
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(filepath.Join(e.dir, "etcd.log"))
			e.t.Fatalf("etcd did not start listening on %s in 20s:\n%s", e.Endpoint, b)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Stop stops etcd (SIGTERM, then SIGKILL after 5s).
func (e *Etcd) Stop() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.cmd == nil {
		return
	}
	e.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { e.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		e.cmd.Process.Kill()
		<-done
	}
	e.cmd = nil
}

// Location returns a store location for a fresh prefix.
func (e *Etcd) Location(prefix string) string {
	return fmt.Sprintf("etcd://%s/%s", e.Endpoint, prefix)
}
