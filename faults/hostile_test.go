//go:build faults

package faults

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/miekg/dns"

	sc "github.com/grpc-config-dns/grpc-config-dns/serviceconfig"
)

// runBounded runs the binary and returns its exit code, output, wall time
// and peak resident memory. Linux counts the parent's peak at the fork in
// the child's, so the inputs are written as streams: the test process
// stays far below the bounds.
func runBounded(t *testing.T, args ...string) (code int, out string, took time.Duration, rssMB int64) {
	t.Helper()
	var buf bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = &buf, &buf
	start := time.Now()
	err := cmd.Run()
	took = time.Since(start)
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		code = ee.ExitCode()
	default:
		t.Fatalf("%v: %v", args, err)
	}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		rssMB = ru.Maxrss / 1024 // kilobytes on Linux
	}
	return code, buf.String(), took, rssMB
}

// TestHostileInputs runs the attack run's hostile inputs (issue 11, item 9)
// through the real binary, and bounds the time and peak memory of each,
// with several times the slack a shared machine needs: before, they took
// 2.6 s to minutes, or 7-10 GB and died.
func TestHostileInputs(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, f func(b *bufio.Writer)) string {
		p := filepath.Join(dir, name)
		file, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		b := bufio.NewWriter(file)
		f(b)
		if err := b.Flush(); err != nil {
			t.Fatal(err)
		}
		file.Close()
		return p
	}
	repeat := func(b *bufio.Writer, s string, n int) {
		for range n {
			b.WriteString(s)
		}
	}
	choices := func(n int, unit func(i int) string) func(b *bufio.Writer) {
		return func(b *bufio.Writer) {
			b.WriteString("[")
			for i := range n {
				b.WriteString(unit(i) + ",")
			}
			b.WriteString(`{"serviceConfig":{}}]`)
		}
	}
	for _, tc := range []struct {
		name    string
		path    string
		code    int    // expected exit status
		want    string // in the output
		seconds time.Duration
		mb      int64
	}{
		{"60 MB of one-letter YAML values", write("letters.yaml", func(b *bufio.Writer) {
			b.WriteString("zones: [")
			repeat(b, "a,", 30_000_000)
			b.WriteString("a]\n")
		}), 1, "[config-too-large]", 10, 400},
		{"40 000 choices (1.9 MB)", write("choices40k.json", choices(40_000, func(i int) string {
			return fmt.Sprintf(`{"clientHostname":["h%d"],"serviceConfig":{}}`, i)
		})), 1, "[input-too-large]", 5, 200},
		{"10 000 choices with distinct hostnames", write("choices10k.json", choices(10_000, func(i int) string {
			return fmt.Sprintf(`{"clientHostname":["h%d"],"serviceConfig":{}}`, i)
		})), 1, "[txt-too-large]", 10, 300},
		{"10 000 choices with an unknown key", write("unknown10k.json", choices(10_000, func(i int) string {
			return fmt.Sprintf(`{"clientHostnam":["h%d"],"serviceConfig":{}}`, i)
		})), 1, "[diagnostics-omitted]", 10, 300},
		{"1000 variants, a key each", write("keys1k.json", choices(1000, func(i int) string {
			return fmt.Sprintf(`{"dynamicParameterConstraints":{"constraint":{"key":"k%d","value":"v"}},"serviceConfig":{}}`, i)
		})), 1, "[diagnostics-omitted]", 10, 300},
		{"a million-digit number", write("number.json", func(b *bufio.Writer) {
			b.WriteString(`[{"serviceConfig":{"retryThrottling":{"maxTokens":10,"tokenRatio":0.`)
			repeat(b, "1", 1_000_000)
			b.WriteString(`}}}]`)
		}), 1, "[txt-too-large]", 5, 200},
		{"a million zones that are not mappings (2 MB)", write("zones.yaml", func(b *bufio.Writer) {
			b.WriteString("zones: [")
			repeat(b, "a,", 1_000_000)
			b.WriteString("a]\n")
		}), 1, "[diagnostics-omitted]", 15, 800},
	} {
		code, out, took, mb := runBounded(t, "lint", tc.path)
		t.Logf("%s: exit %d in %v, %d MB", tc.name, code, took.Round(time.Millisecond), mb)
		if code != tc.code || !strings.Contains(out, tc.want) {
			t.Errorf("%s: exit %d, want %d and %s in:\n%.2000s", tc.name, code, tc.code, tc.want, out)
		}
		if lines := strings.Count(out, "\n"); lines > sc.MaxDiagnostics+1 {
			t.Errorf("%s: %d lines of diagnostics", tc.name, lines)
		}
		if took > tc.seconds*time.Second || mb > tc.mb {
			t.Errorf("%s: %v and %d MB, want at most %v and %d MB", tc.name, took, mb, tc.seconds*time.Second, tc.mb)
		}
	}
}

// TestHostileDNSAnswer: a DNS server on loopback answers with the largest
// TXT record a message holds (58 KB, over TCP after a truncated UDP
// answer) in the shapes that cost the resolver most; `select`, which reads
// it with the resolver's code, stays within bounds.
func TestHostileDNSAnswer(t *testing.T) {
	fill := func(unit, tail string) string {
		n := (58_000 - len(tail)) / (len(unit) + 1)
		return "[" + strings.TrimSuffix(strings.Repeat(unit+",", n), ",") + tail + "]"
	}
	for _, tc := range []struct {
		name, value string
		code        int
	}{
		{"no choice matches", fill(`{"clientLanguage":["x"],"serviceConfig":{}}`, ""), 3},
		{"unknown keys", fill(`{"clientHostnam":["x"],"serviceConfig":{}}`, ""), 1},
		{"misspelt status codes", `[{"serviceConfig":{"methodConfig":[{"name":[{}],"retryPolicy":{"maxAttempts":2,"initialBackoff":"1s","maxBackoff":"1s","backoffMultiplier":2,"retryableStatusCodes":[` +
			strings.TrimSuffix(strings.Repeat(`"UNAVAILABL",`, 4400), ",") + `]}}]}}]`, 1},
	} {
		strs := sc.EncodeTXT([]byte(tc.value))
		for i := range strs {
			strs[i] = sc.EscapeTXTString(strs[i])
		}
		addr := freePort(t)
		h := dns.HandlerFunc(func(w dns.ResponseWriter, r *dns.Msg) {
			m := new(dns.Msg)
			m.SetReply(r)
			m.Authoritative = true
			if _, udp := w.RemoteAddr().(*net.UDPAddr); udp {
				m.Truncated = true
			} else if r.Question[0].Qtype == dns.TypeTXT {
				m.Answer = []dns.RR{&dns.TXT{Hdr: dns.RR_Header{Name: r.Question[0].Name, Rrtype: dns.TypeTXT, Class: dns.ClassINET, Ttl: 30}, Txt: strs}}
			}
			w.WriteMsg(m)
		})
		var servers []*dns.Server
		for _, network := range []string{"udp", "tcp"} {
			srv := &dns.Server{Addr: addr, Net: network, Handler: h}
			go srv.ListenAndServe()
			servers = append(servers, srv)
		}
		time.Sleep(100 * time.Millisecond)
		code, out, took, mb := runBounded(t, "select", "--bucket", "50", "--hostname", "h", "dns://"+addr+"/svc.test")
		for _, srv := range servers {
			srv.Shutdown()
		}
		t.Logf("%s: exit %d in %v, %d MB", tc.name, code, took.Round(time.Millisecond), mb)
		if code != tc.code {
			t.Errorf("%s: exit %d, want %d:\n%.2000s", tc.name, code, tc.code, out)
		}
		if took > 5*time.Second || mb > 200 || len(out) > 64<<10 {
			t.Errorf("%s: %v, %d MB, %d bytes of output", tc.name, took, mb, len(out))
		}
	}
}
