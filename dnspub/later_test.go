package dnspub

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// laterConfig is baseConfig with n services more: enough records for the
// table to leave their answers for later on a first start.
func laterConfig(n int, timeout string) string {
	var b strings.Builder
	b.WriteString(baseConfig("allow: [127.0.0.1]"))
	for i := range n {
		fmt.Fprintf(&b, "      - {name: svc%d, addresses: [10.1.%d.%d], serviceConfig: {methodConfig: [{name: [{service: s.S%d}], timeout: %s}]}}\n", i, i>>8, i&255, i, timeout)
	}
	return b.String()
}

// laterAnswers asks warmQuestions (over UDP and TCP) and questions about
// some of the services (over UDP): each answer's bytes, with the ID
// cleared.
func laterAnswers(ts *testServer) []string {
	out := answersOf(ts)
	for _, name := range []string{"svc0.example.test.", "_grpc_config.svc7.example.test.", "SVC2099.example.test.", "x.svc5.example.test."} {
		for _, qtype := range []uint16{dns.TypeA, dns.TypeTXT, dns.TypeANY} {
			out = append(out, answerBytes(ts, "udp", name, qtype, 1232))
		}
	}
	return out
}

func deferred(ts *testServer) bool { return ts.snap.Load().table.Deferred() }

// A first start answers before its answers are built: they are built for
// each query, then all at once in the background, with the same bytes,
// version and serial.
func TestFirstStartAnswersBeforeBuilding(t *testing.T) {
	gate := make(chan struct{})
	ts := startServerWith(t, laterConfig(2100, "1s"), nil, func(s *Server) { s.completeGate = gate })
	if !deferred(ts) {
		t.Fatal("a first start of 2100 services built every answer before serving")
	}
	before, version, serial := laterAnswers(ts), ts.snap.Load().version, ts.serial()
	close(gate)
	waitFor(t, "the answers built", func() bool { return !deferred(ts) })
	if after := laterAnswers(ts); !equalStrings(before, after) {
		t.Fatal("the answers built for each query differ from those built at once")
	}
	if v := ts.snap.Load().version; v != version || ts.serial() != serial {
		t.Fatalf("version %d serial %d once built, %d and %d before", v, ts.serial(), version, serial)
	}
	if !strings.Contains(ts.logs.String(), "answers built") {
		t.Error("no log of the answers built")
	}
}

// A reload before the answers are built serves its change at once: the
// answers it changed are built, the others stay left for later, and are
// built, with the same bytes, for the version it serves. A write right
// after a first start so waits for no build of every answer.
func TestReloadBeforeBuilding(t *testing.T) {
	gate := make(chan struct{})
	var open sync.Once
	ts := startServerWith(t, laterConfig(2100, "1s"), nil, func(s *Server) { s.completeGate = gate })
	t.Cleanup(func() { open.Do(func() { close(gate) }) })
	if !deferred(ts) {
		t.Fatal("a first start of 2100 services built every answer before serving")
	}
	ts.write(strings.Replace(laterConfig(2100, "1s"), "s.S7}], timeout: 1s", "s.S7}], timeout: 2s", 1))
	if err := ts.Reload(); err != nil {
		t.Fatal(err)
	}
	if !deferred(ts) {
		t.Fatal("a reload built every answer left for later")
	}
	timeout := func(name string) string {
		r := ts.ask("udp", name, dns.TypeTXT, 1232)
		if len(r.Answer) != 1 {
			t.Fatalf("%s: %v", name, r.Answer)
		}
		_, after, _ := strings.Cut(r.Answer[0].String(), `\"timeout\":\"`)
		v, _, _ := strings.Cut(after, `\"`)
		return v
	}
	if a, b := timeout("_grpc_config.svc7.example.test."), timeout("_grpc_config.svc2099.example.test."); a != "2s" || b != "1s" {
		t.Fatalf("after the reload, svc7's timeout is %q, svc2099's %q", a, b)
	}
	before, version, serial := laterAnswers(ts), ts.snap.Load().version, ts.serial()
	open.Do(func() { close(gate) })
	waitFor(t, "the answers built", func() bool { return !deferred(ts) })
	if after := laterAnswers(ts); !equalStrings(before, after) {
		t.Fatal("the answers built for each query after the reload differ from those built at once")
	}
	if v := ts.snap.Load().version; v != version || ts.serial() != serial {
		t.Fatalf("version %d serial %d once built, %d and %d before", v, ts.serial(), version, serial)
	}
	if timeout("_grpc_config.svc7.example.test.") != "2s" {
		t.Fatal("the reload's change was lost when the answers were built")
	}
}

// What a first load leaves for later waits until the server answers:
// before Start, the answers are not built (they would hold back the
// first answers on a machine of few cores), and once it answers, they
// are.
func TestLaterWaitsForStart(t *testing.T) {
	file := filepath.Join(t.TempDir(), "publisher.yaml")
	if err := os.WriteFile(file, []byte(laterConfig(2100, "1s")), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := New(Options{ConfigFile: file, Listen: "127.0.0.1:0", Logger: discardLogger(), WatchInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	if !s.snap.Load().table.Deferred() {
		t.Fatal("the answers were built before the server answered")
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown(context.Background())
	waitFor(t, "the answers built", func() bool { return !s.snap.Load().table.Deferred() })
}

// Changes published while the answers left for later are built wait for
// no build, and lose none: the build is done again for the version
// served, and the answers, once built, are those of a server started on
// the last change.
func TestChangesWhileBuilding(t *testing.T) {
	config := func(timeout int) string {
		return strings.Replace(laterConfig(4000, "1s"), "s.S7}], timeout: 1s", fmt.Sprintf("s.S7}], timeout: %ds", timeout), 1)
	}
	gate := make(chan struct{})
	ts := startServerWith(t, config(1), nil, func(s *Server) { s.completeGate = gate })
	close(gate)
	last := 1
	for deferred(ts) && last < 100 {
		last++
		ts.write(config(last))
		if err := ts.Reload(); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "the answers built", func() bool { return !deferred(ts) })
	t.Logf("%d changes while the answers were built; %s", last-1, regexp.MustCompile(`version=\d+ from=\d+ .*tries=\d+`).FindString(ts.logs.String()))
	fresh := startServer(t, config(last), nil)
	waitFor(t, "the answers built", func() bool { return !deferred(fresh) })
	// Positive answers: the servers' serials differ.
	for _, q := range []struct {
		name  string
		qtype uint16
	}{{"_grpc_config.svc7.example.test.", dns.TypeTXT}, {"_grpc_config.svc3999.example.test.", dns.TypeTXT}, {"svc7.example.test.", dns.TypeA}, {"svc0.example.test.", dns.TypeA}} {
		if got, want := answerBytes(ts, "udp", q.name, q.qtype, 1232), answerBytes(fresh, "udp", q.name, q.qtype, 1232); got != want {
			t.Errorf("%s %s: %q, a server started on the last change %q", q.name, dns.TypeToString[q.qtype], got, want)
		}
	}
	if r := ts.ask("udp", "_grpc_config.svc7.example.test.", dns.TypeTXT, 1232); len(r.Answer) != 1 || !strings.Contains(r.Answer[0].String(), fmt.Sprintf(`\"timeout\":\"%ds\"`, last)) {
		t.Errorf("svc7 after %d changes: %v", last-1, r.Answer)
	}
}
