//go:build faults

package faults

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// waitLog waits until the server's log holds text.
func waitLog(t *testing.T, s *server, text string) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(s.logs.String(), text); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the log never said %q", text)
		}
	}
}

// bigConfig is zoneConfig's zone a.test. at version n, with enough other
// services to pass the size from which serve keeps its answers (1 MiB).
func bigConfig(n int) string {
	var b strings.Builder
	b.WriteString(zoneConfig(map[string]int{"a.test.": n}))
	for i := 0; b.Len() < 1<<20+4096; i++ {
		fmt.Fprintf(&b, `      - name: filler%d
        addresses: [10.1.%d.%d]
        serviceConfig: {methodConfig: [{name: [{service: filler.F%d}], timeout: 2s, retryPolicy: {maxAttempts: 3, initialBackoff: 0.1s, maxBackoff: 1s, backoffMultiplier: 2, retryableStatusCodes: [UNAVAILABLE]}}]}
`, i, i>>8&0xff, i&0xff, i)
	}
	return b.String()
}

// TestKill9WhileKeepingAnswers: the server is killed at random moments
// around the write of the answers it keeps for a warm start (2 s after a
// change), and restarted. Every restart, warm or cold, serves the config
// on disk, never the answers of an older one, with a serial at least as
// high as any served before.
func TestKill9WhileKeepingAnswers(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "publisher.yaml")
	addr := freePort(t)
	writeAtomic(t, cfg, bigConfig(0))
	rng := rand.New(rand.NewPCG(3, 4))
	// When to kill, after the reload: before the answers are written (2 s
	// after it), about when, and after.
	delays := []time.Duration{1000, 2500, 1900, 2000, 2030, 2060, 2100, 3000, 1500}
	var highest uint32
	warm, cold := 0, 0
	for v := 0; v <= len(delays); v++ {
		s := serve(t, addr, "--config", cfg)
		soa := answering(t, addr, "a.test.")
		if got := version(t, addr, "a.test."); got != v {
			t.Fatalf("after restart %d: serving version %d, the file has %d", v, got, v)
		}
		if v > 0 && !serialGE(soa.Serial, highest) {
			t.Fatalf("after restart %d: serial %d, but %d was served before", v, soa.Serial, highest)
		}
		highest = soa.Serial
		if strings.Contains(s.logs.String(), "answering from the answers kept") {
			warm++
		} else if v > 0 {
			cold++
		}
		if v == len(delays) {
			break
		}
		// Let the start's read end, so that the change is a reload.
		waitLog(t, s, `msg="config loaded"`)
		writeAtomic(t, cfg, bigConfig(v+1))
		s.signal(syscall.SIGHUP)
		waitLog(t, s, `why=reload`)
		highest = answering(t, addr, "a.test.").Serial
		// The answers are written 2 s after the change: kill before,
		// during or after that.
		wait := delays[v]*time.Millisecond + time.Duration(rng.IntN(20))*time.Millisecond
		time.Sleep(wait)
		s.kill()
		kept := strings.Contains(s.logs.String(), "answers kept for a warm start")
		t.Logf("restart %d: killed %v after the reload, answers of the reload kept: %v", v+1, wait, kept)
		if tmps, _ := filepath.Glob(cfg + ".answers.tmp*"); len(tmps) > 0 {
			t.Logf("restart %d: killed while writing the answers", v+1)
		}
	}
	t.Logf("%d warm restarts, %d cold", warm, cold)
	if warm == 0 || cold == 0 {
		t.Errorf("%d warm and %d cold restarts: the kills do not fall on both sides of the write", warm, cold)
	}
}

// TestAnswersOnFullDisk: answers that do not fit on the state disk are not
// kept (logged), nothing served changes, no partial file is left, and the
// next start reads the config.
func TestAnswersOnFullDisk(t *testing.T) {
	stateDir := tmpfs(t) // 256 KiB: the serial state fits, the answers do not
	dir := t.TempDir()
	cfg := filepath.Join(dir, "publisher.yaml")
	state := filepath.Join(stateDir, "serials.json")
	addr := freePort(t)
	writeAtomic(t, cfg, bigConfig(1))
	s := serve(t, addr, "--config", cfg, "--state", state)
	waitLog(t, s, "cannot keep the answers for a warm start")
	if got := version(t, addr, "a.test."); got != 1 {
		t.Fatalf("serving version %d after the answers could not be kept", got)
	}
	if left, _ := filepath.Glob(filepath.Join(stateDir, "serials.json.answers*")); len(left) > 0 {
		t.Fatalf("left on the full disk: %v", left)
	}
	s.kill()
	s = serve(t, addr, "--config", cfg, "--state", state)
	answering(t, addr, "a.test.")
	if got := version(t, addr, "a.test."); got != 1 {
		t.Fatalf("serving version %d after a restart", got)
	}
	if strings.Contains(s.logs.String(), "answering from the answers kept") {
		t.Fatal("a warm start from answers that were never written")
	}
}
