//go:build faults && linux

package faults

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// raiseFileLimit lets the processes the test starts, which inherit its
// limit, open n files: the server, and the one holding connections.
func raiseFileLimit(t *testing.T, n uint64) {
	t.Helper()
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &rl); err != nil {
		t.Fatal(err)
	}
	if rl.Cur >= n {
		return
	}
	if rl.Max < n && os.Geteuid() == 0 {
		rl.Max = n
	}
	rl.Cur = min(n, rl.Max)
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &rl); err != nil || rl.Cur < n {
		msg := fmt.Sprintf("cannot open %d files (ulimit -n %d): %v", n, rl.Cur, err)
		if os.Getenv("FAULTS_REQUIRE") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
}

// TestProbesThroughHeldConnections: anyone who could reach --metrics (on
// 0.0.0.0 in the Kubernetes manifests) could keep /healthz from answering
// with 16 connections that sent nothing, and Kubernetes would restart the
// pod; 300 slow connections to the admin API made most administrators'
// requests fail. With 300 connections held on each, half sending nothing
// and half a header a byte at a time, each reopened as soon as the server
// closes it, /healthz on both listeners and an authenticated admin request
// answer within a second, every time, each on a new connection, and the
// server holds no more descriptors than its limits allow.
func TestProbesThroughHeldConnections(t *testing.T) {
	const held = 300
	raiseFileLimit(t, 4*held+256)
	dir := t.TempDir()
	const token = "faults-token-0123456789abcdef"
	tokens := filepath.Join(dir, "tokens")
	if err := os.WriteFile(tokens, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	addr, admin, metrics := freePort(t), freePort(t), freePort(t)
	s := serve(t, addr, "--store", filepath.Join(dir, "store"), "--admin", admin,
		"--admin-token-file", tokens, "--metrics", metrics)

	client := &http.Client{Timeout: time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	// get asks for url on a new connection, within a second; it returns
	// the body of a 200 answer.
	get := func(url string, auth bool) (string, error) {
		req, _ := http.NewRequest("GET", url, nil)
		if auth {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := client.Do(req)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			return "", err
		}
		if resp.StatusCode != 200 {
			return "", fmt.Errorf("%s: %s", resp.Status, b)
		}
		return string(b), nil
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err1 := get("http://"+admin+"/readyz", false)
		_, err2 := get("http://"+metrics+"/readyz", false)
		if err1 == nil && err2 == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not ready in 10s: %v, %v", err1, err2)
		}
		time.Sleep(20 * time.Millisecond)
	}
	req, _ := http.NewRequest("PUT", "http://"+admin+"/v1/zones/a.test", strings.NewReader(`{"metadata":{},"spec":`+storeZone+`}`))
	req.Header.Set("Authorization", "Bearer "+token)
	if resp, err := client.Do(req); err != nil || resp.StatusCode != 200 && resp.StatusCode != 201 {
		t.Fatalf("creating a zone: %v %v", resp, err)
	}

	stop := holdConnections(t, held, metrics, admin)
	time.Sleep(time.Second) // every slot taken, the rest in the backlog

	probes := []struct {
		name, url string
		auth      bool
		want      string
	}{
		{"/healthz on --metrics", "http://" + metrics + "/healthz", false, "ok"},
		{"/healthz on --admin", "http://" + admin + "/healthz", false, "ok"},
		{"an authenticated GET on --admin", "http://" + admin + "/v1/zones/a.test", true, `"a.test"`},
	}
	slowest := make([]time.Duration, len(probes))
	pid := s.cmd.Process.Pid
	maxFiles := 0
	for round := range 10 {
		for i, p := range probes {
			start := time.Now()
			body, err := get(p.url, p.auth)
			took := time.Since(start)
			slowest[i] = max(slowest[i], took)
			if err != nil {
				t.Errorf("round %d: %s did not answer within 1s: %v", round+1, p.name, err)
			} else if !strings.Contains(body, p.want) {
				t.Errorf("round %d: %s answered %q", round+1, p.name, body)
			}
		}
		maxFiles = max(maxFiles, openFiles(t, pid))
		time.Sleep(200 * time.Millisecond)
	}
	opened := stop()
	for i, p := range probes {
		t.Logf("%s: slowest %v", p.name, slowest[i].Round(time.Millisecond))
	}
	t.Logf("the flood opened %v connections to --metrics and --admin; the server had at most %d files open", opened, maxFiles)
	if len(opened) != 2 || opened[0] < held || opened[1] < held {
		t.Errorf("the held connections were not all opened: %v", opened)
	}
	// 16 + 256 connections, the listeners, the store, the DNS server's
	// sockets, the runtime's: not one per held connection.
	if maxFiles > 16+256+64 {
		t.Errorf("the server had %d files open, more than its connection limits allow", maxFiles)
	}
	if ok, _ := s.exited(0); ok {
		t.Fatal("the server exited")
	}
}
