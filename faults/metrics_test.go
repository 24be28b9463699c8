//go:build faults && linux

package faults

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// getMetrics fetches /metrics on a fresh connection.
func getMetrics(addr string) (string, error) {
	c := &http.Client{Timeout: time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Get("http://" + addr + "/metrics")
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("status %s", resp.Status)
	}
	return string(b), nil
}

// keepAlive opens a connection to addr and makes one keep-alive request
// on it, which it leaves open; nil when the server closed it.
func keepAlive(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		return nil
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return nil
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	c.SetDeadline(time.Time{})
	return c
}

// openFiles counts the descriptors process pid has open.
func openFiles(t *testing.T, pid int) int {
	t.Helper()
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	return len(fds)
}

// TestHeldMetricsConnectionsDoNotBlockReload: clients that hold keep-alive
// connections to --metrics, and others that hold it mid-request, once
// used up the server's file descriptors, and the next config reload could
// not open the config file. With the descriptors of the server limited to
// what it uses plus a few more than the metrics endpoint's 16 connections,
// 16 idle keep-alive connections, 16 half-sent requests and 100 more
// clients are held while the config is replaced and SIGHUP sent: the
// reload loads the new config, DNS answers it, and /metrics answers all
// along (the half-sent requests used to lock it out until they timed out;
// they give way to new clients now: see TestProbesThroughHeldConnections).
func TestHeldMetricsConnectionsDoNotBlockReload(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "publisher.yaml")
	addr, maddr := freePort(t), freePort(t)
	writeAtomic(t, cfg, zoneConfig(map[string]int{"a.test.": 1, "b.test.": 1}))
	s := serve(t, addr, "--config", cfg, "--metrics", maddr)
	answering(t, addr, "a.test.")
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := getMetrics(maddr); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("/metrics does not answer")
		}
		time.Sleep(20 * time.Millisecond)
	}

	// Room for the 16 metrics connections, one being refused, the config
	// file, the state file and its temporary copy, a DNS client: no more.
	pid := s.cmd.Process.Pid
	limit := uint64(openFiles(t, pid) + 16 + 8)
	if err := unix.Prlimit(pid, unix.RLIMIT_NOFILE, &unix.Rlimit{Cur: limit, Max: limit}, nil); err != nil {
		t.Skipf("cannot limit the server's descriptors: %v", err)
	}

	held := 0
	for range 16 {
		if keepAlive(t, maddr) != nil {
			held++
		}
	}
	if held < 16 {
		t.Fatalf("only %d of 16 keep-alive connections were served", held)
	}
	time.Sleep(100 * time.Millisecond) // all idle on the server's side
	// Half-sent requests.
	for range 16 {
		c, err := net.Dial("tcp", maddr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		io.WriteString(c, "GET /metrics HTTP/1.1\r\nHost: x\r\n")
	}
	time.Sleep(100 * time.Millisecond)
	for range 100 {
		c, err := net.Dial("tcp", maddr)
		if err != nil {
			continue // refused in the backlog: fine
		}
		t.Cleanup(func() { c.Close() })
		io.WriteString(c, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
	}
	t.Logf("the server has %d descriptors open, its limit is %d", openFiles(t, pid), limit)
	if _, err := getMetrics(maddr); err != nil {
		t.Fatalf("/metrics did not answer a new client while the half-sent requests were held: %v", err)
	}

	reloads := func() int { return strings.Count(s.logs.String(), "SIGHUP: reloading") }
	writeAtomic(t, cfg, zoneConfig(map[string]int{"a.test.": 2, "b.test.": 2}))
	s.signal(syscall.SIGHUP)
	deadline = time.Now().Add(10 * time.Second)
	for version(t, addr, "a.test.") != 2 || version(t, addr, "b.test.") != 2 {
		if time.Now().After(deadline) {
			t.Fatal("the new config was not loaded while connections to --metrics were held")
		}
		time.Sleep(20 * time.Millisecond)
	}
	// One more SIGHUP, now that the file is loaded: the reload must read
	// it (and find nothing changed), not fail to open it.
	before := len(s.logs.String())
	n := reloads()
	s.signal(syscall.SIGHUP)
	deadline = time.Now().Add(5 * time.Second)
	for !strings.Contains(s.logs.String()[before:], "config reloaded; no zone changed") {
		if strings.Contains(s.logs.String()[before:], "reload failed") || time.Now().After(deadline) {
			t.Fatalf("SIGHUP with connections held did not reload:\n%s", s.logs.String()[before:])
		}
		time.Sleep(20 * time.Millisecond)
	}
	if reloads() != n+1 {
		t.Errorf("SIGHUP not logged")
	}
	for _, bad := range []string{"reload failed", "too many open files", "config rejected"} {
		if strings.Contains(s.logs.String(), bad) {
			t.Errorf("the log says %q:\n%s", bad, s.logs.String())
		}
	}

	// And /metrics still answers.
	start := time.Now()
	deadline = start.Add(15 * time.Second)
	for {
		body, err := getMetrics(maddr)
		if err == nil {
			if !strings.Contains(body, "grpc_config_dns_reloads_total") {
				t.Errorf("/metrics answered without the server's metrics")
			}
			t.Logf("/metrics answered %v after the reloads", time.Since(start).Round(100*time.Millisecond))
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/metrics does not answer after the reloads: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if ok, _ := s.exited(0); ok {
		t.Fatal("the server exited")
	}
}
