package dnspub

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
)

// warmQuestions are asked of a server before and after a warm start.
var warmQuestions = []struct {
	name  string
	qtype uint16
	edns  int
}{
	{"echo.example.test.", dns.TypeA, 0},
	{"ECHO.example.test.", dns.TypeAAAA, 1232},
	{"_grpc_config.echo.example.test.", dns.TypeTXT, 1232},
	{"_grpc_config.big.example.test.", dns.TypeTXT, 0}, // truncated
	{"_grpc_config.big.example.test.", dns.TypeTXT, 4096},
	{"example.test.", dns.TypeSOA, 0},
	{"example.test.", dns.TypeNS, 1232},
	{"b.example.test.", dns.TypeA, 0},    // empty non-terminal
	{"nope.example.test.", dns.TypeA, 0}, // NXDOMAIN
	{"example.org.", dns.TypeA, 0},       // REFUSED
}

// answersOf asks every warm question over UDP and TCP; each answer's
// bytes, with the ID cleared.
func answersOf(ts *testServer) []string {
	var out []string
	for _, q := range warmQuestions {
		for _, proto := range []string{"udp", "tcp"} {
			out = append(out, answerBytes(ts, proto, q.name, q.qtype, q.edns))
		}
	}
	return out
}

// answerBytes is the answer to a question, packed with its ID cleared.
func answerBytes(ts *testServer, proto, name string, qtype uint16, edns int) string {
	r := ts.ask(proto, name, qtype, edns)
	r.Id = 0
	b, err := r.Pack()
	if err != nil {
		ts.t.Fatal(err)
	}
	return string(b)
}

// warmSetup makes every config warm-startable and answers kept at once.
func warmSetup(t *testing.T) {
	defer func(a int, d time.Duration) {
		t.Cleanup(func() { warmAbove, warmDelay, warmGate = a, d, nil })
	}(warmAbove, warmDelay)
	warmAbove, warmDelay = 0, 10*time.Millisecond
}

// keptServer serves config from dir until its answers are kept, then
// stops; its answers.
func keptServer(t *testing.T, dir, config string) []string {
	t.Helper()
	ts := startServerIn(t, dir, config, nil)
	answers := answersOf(ts)
	waitFor(t, "the answers kept", func() bool {
		_, err := os.Stat(filepath.Join(dir, "publisher.yaml.answers"))
		return err == nil
	})
	waitFor(t, "the log of the write", func() bool { return strings.Contains(ts.logs.String(), "answers kept for a warm start") })
	ts.stop()
	return answers
}

// startServerIn is startServer with the config file in dir (which keeps
// the state and the answers), the file written only if config is not "".
func startServerIn(t *testing.T, dir, config string, mod func(*Options)) *testServer {
	t.Helper()
	return startServerAt(t, filepath.Join(dir, "publisher.yaml"), config, mod, nil)
}

func (ts *testServer) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ts.Shutdown(ctx)
}

// A restart with the same config and binary answers every question with
// the same bytes before it has read the config, refuses transfers with
// SERVFAIL meanwhile, then serves the config it reads with the same
// serial.
func TestWarmStartAnswersBeforeReading(t *testing.T) {
	warmSetup(t)
	dir := t.TempDir()
	config := baseConfig("allow: [127.0.0.1]")
	want := keptServer(t, dir, config)

	warmGate = make(chan struct{})
	// The file watcher runs, as in serve, while the config is read.
	ts := startServerIn(t, dir, "", func(o *Options) { o.WatchInterval = 5 * time.Millisecond })
	if got := answersOf(ts); !equalStrings(got, want) {
		t.Fatalf("a warm start answers differently from the run that kept its answers")
	}
	if cfg, _, _ := ts.Published(); cfg != nil {
		t.Errorf("Published offers a config before it is read")
	}
	warmSerial := ts.serial()
	if warmSerial == 0 {
		t.Fatalf("no serial while warm: %v", ts.Serials())
	}
	axfr := new(dns.Msg)
	axfr.SetAxfr("example.test.")
	if r, err := ts.exchange("tcp", axfr); err != nil || r.Rcode != dns.RcodeServerFailure {
		t.Fatalf("AXFR while warm: %v, %v; want SERVFAIL", r, err)
	}
	select {
	case err := <-ts.Loaded():
		t.Fatalf("the config was read before the gate opened: %v", err)
	default:
	}
	close(warmGate)
	select {
	case err := <-ts.Loaded():
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the config was never read")
	}
	if got := answersOf(ts); !equalStrings(got, want) {
		t.Fatalf("after reading the config, answers differ from the kept ones")
	}
	if ts.serial() != warmSerial {
		t.Fatalf("serial %d after reading the config, %d while warm", ts.serial(), warmSerial)
	}
	if r, err := ts.exchange("tcp", axfr); err != nil || r.Rcode != dns.RcodeSuccess {
		t.Fatalf("AXFR after the read: %v, %v", r, err)
	}
	if !strings.Contains(ts.logs.String(), "answering from the answers kept") {
		t.Fatalf("no log of the warm start")
	}
	// The answers kept are those served: nothing to write again.
	time.Sleep(10 * warmDelay)
	if strings.Contains(ts.logs.String(), "answers kept for a warm start") {
		t.Fatalf("the same answers were written again")
	}
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// Answers are used only when everything they were built from is the
// same: any difference is a cold start, with the reason logged, that
// serves the config as it is now.
func TestWarmStartOnlyWhenNothingChanged(t *testing.T) {
	for _, c := range []struct {
		name   string
		change func(t *testing.T, dir string)
		why    string // in the log; "" for none
	}{
		{"config edited", func(t *testing.T, dir string) {
			appendFile(t, filepath.Join(dir, "publisher.yaml"), "# a comment\n")
		}, "another version of the config"},
		{"another binary", func(t *testing.T, dir string) {
			old := executableSum
			executableSum = func() (string, error) { return "another", nil }
			t.Cleanup(func() { executableSum = old })
		}, "another build"},
		{"state serial changed", func(t *testing.T, dir string) {
			path := filepath.Join(dir, "publisher.yaml.serial")
			b, _ := os.ReadFile(path)
			var f stateFile
			if err := json.Unmarshal(b, &f); err != nil {
				t.Fatal(err)
			}
			st := f.Zones["example.test."]
			st.Serial += 5
			f.Zones["example.test."] = st
			b, _ = json.Marshal(f)
			os.WriteFile(path, b, 0o644)
		}, "serial or content differs"},
		{"state lost", func(t *testing.T, dir string) {
			os.Remove(filepath.Join(dir, "publisher.yaml.serial"))
		}, "state file has 0 zones"},
		{"a byte changed", func(t *testing.T, dir string) {
			path := filepath.Join(dir, "publisher.yaml.answers")
			b, _ := os.ReadFile(path)
			b[len(b)/2] ^= 1
			os.WriteFile(path, b, 0o644)
		}, "checksum"},
		{"cut short", func(t *testing.T, dir string) {
			path := filepath.Join(dir, "publisher.yaml.answers")
			b, _ := os.ReadFile(path)
			os.WriteFile(path, b[:len(b)-100], 0o644)
		}, "checksum"},
		{"not ours", func(t *testing.T, dir string) {
			os.WriteFile(filepath.Join(dir, "publisher.yaml.answers"), []byte("hello"), 0o644)
		}, "not a file of answers"},
		{"gone", func(t *testing.T, dir string) {
			os.Remove(filepath.Join(dir, "publisher.yaml.answers"))
		}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			warmSetup(t)
			dir := t.TempDir()
			want := keptServer(t, dir, baseConfig(""))
			c.change(t, dir)
			// A gate that never opens: a warm start would hang Loaded.
			warmGate = make(chan struct{})
			ts := startServerIn(t, dir, "", nil)
			select {
			case err := <-ts.Loaded():
				if err != nil {
					t.Fatal(err)
				}
			default:
				t.Fatal("started warm")
			}
			if cfg, _, _ := ts.Published(); cfg == nil {
				t.Fatal("a cold start that has not read the config")
			}
			if got := answersOf(ts); c.name != "state serial changed" && c.name != "state lost" && !equalStrings(got, want) {
				t.Errorf("a cold start answers differently")
			}
			logs := ts.logs.String()
			if c.why != "" && !strings.Contains(logs, c.why) {
				t.Errorf("the log does not say %q:\n%s", c.why, logs)
			}
			if c.why == "" && strings.Contains(logs, "not starting from the answers") {
				t.Errorf("a missing file is logged as a problem")
			}
			close(warmGate)
		})
	}
}

func appendFile(t *testing.T, path, text string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(text)
	f.Close()
}

// A config that was valid when its answers were kept but can no longer be
// loaded (its TSIG secret file is gone) is reported by Loaded after a
// warm start, as New reports it on a cold one.
func TestWarmStartThenConfigFails(t *testing.T) {
	warmSetup(t)
	dir := t.TempDir()
	secret := filepath.Join(dir, "xfr.key")
	os.WriteFile(secret, []byte(testSecret), 0o600)
	config := strings.Replace(baseConfig("key: xfr-key"), `secret: "`+testSecret+`"`, "secretFile: "+secret, 1)
	keptServer(t, dir, config)
	os.Remove(secret)
	ts := startServerIn(t, dir, "", nil)
	select {
	case err := <-ts.Loaded():
		var ce *ConfigError
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), "secret file") {
			t.Fatalf("Loaded: %v; want the config error", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Loaded never said")
	}
}

// Answers that cannot be written (a full disk) change nothing served:
// the failure is logged and counted, and the next start is cold.
func TestWarmWriteFailure(t *testing.T) {
	warmSetup(t)
	dir := t.TempDir()
	reg := prometheus.NewRegistry()
	failed := make(chan struct{}, 1)
	ts := startServerIn(t, dir, baseConfig(""), func(o *Options) { o.Registerer = reg })
	ts.reloadMu.Lock()
	ts.writeWarm = func(string, *snapshot, [sha256.Size]byte) error {
		failed <- struct{}{}
		return errors.New("no space left on device")
	}
	ts.reloadMu.Unlock()
	ts.write(strings.Replace(baseConfig(""), "ttl: 30\n", "ttl: 31\n", 1))
	if err := ts.Reload(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-failed:
	case <-time.After(5 * time.Second):
		t.Fatal("no write tried")
	}
	waitFor(t, "the failure logged", func() bool { return strings.Contains(ts.logs.String(), "cannot keep the answers") })
	if got := testCounter(t, ts.metrics.warmWriteErrors); got < 1 {
		t.Errorf("warm_write_errors_total = %v", got)
	}
	if r := ts.ask("udp", "echo.example.test.", dns.TypeA, 0); len(r.Answer) == 0 || r.Answer[0].Header().Ttl != 31 {
		t.Fatalf("the reload is not served: %v", r)
	}
}

// A write killed half-way leaves a temporary file, never a damaged file
// of answers; the next start removes it.
func TestWarmStaleTemporaryRemoved(t *testing.T) {
	warmSetup(t)
	dir := t.TempDir()
	keptServer(t, dir, baseConfig(""))
	stale := filepath.Join(dir, "publisher.yaml.answers.tmp123")
	os.WriteFile(stale, []byte("half"), 0o644)
	warmGate = make(chan struct{})
	ts := startServerIn(t, dir, "", nil)
	if _, err := os.Stat(stale); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the stale temporary file is still there: %v", err)
	}
	if cfg, _, _ := ts.Published(); cfg != nil {
		t.Fatal("not a warm start")
	}
	close(warmGate)
}

// Small configs keep no answers: a cold start takes milliseconds.
func TestWarmOnlyForLargeConfigs(t *testing.T) {
	dir := t.TempDir()
	ts := startServerIn(t, dir, baseConfig(""), nil)
	ts.write(strings.Replace(baseConfig(""), "ttl: 30\n", "ttl: 31\n", 1))
	if err := ts.Reload(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	ts.stop()
	if _, err := os.Stat(filepath.Join(dir, "publisher.yaml.answers")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("answers kept for a small config: %v", err)
	}
}

// Stopping during a warm start does not wait for the config to be read
// (seconds at scale), and what is read after it is not published.
func TestWarmShutdownDoesNotWait(t *testing.T) {
	warmSetup(t)
	dir := t.TempDir()
	keptServer(t, dir, baseConfig(""))
	gate := make(chan struct{})
	warmGate = gate
	ts := startServerIn(t, dir, "", nil)
	start := time.Now()
	ts.stop()
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("Shutdown took %v during a warm start", took)
	}
	close(gate)
	select {
	case err := <-ts.Loaded():
		if err == nil || !strings.Contains(err.Error(), "shutting down") {
			t.Fatalf("Loaded after Shutdown: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the read never ended")
	}
	if cfg, _, _ := ts.Published(); cfg != nil {
		t.Fatal("published after Shutdown")
	}
}
