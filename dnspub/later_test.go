package dnspub

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
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

// A reload before the answers are built builds them first, and serves
// its change.
func TestReloadBeforeBuilding(t *testing.T) {
	gate := make(chan struct{})
	ts := startServerWith(t, laterConfig(2100, "1s"), nil, func(s *Server) { s.completeGate = gate })
	if !deferred(ts) {
		t.Fatal("a first start of 2100 services built every answer before serving")
	}
	ts.write(laterConfig(2100, "2s"))
	if err := ts.Reload(); err != nil {
		t.Fatal(err)
	}
	if deferred(ts) {
		t.Fatal("a reload served a table left for later")
	}
	for _, name := range []string{"_grpc_config.svc7.example.test.", "_grpc_config.svc2099.example.test."} {
		r := ts.ask("udp", name, dns.TypeTXT, 1232)
		if len(r.Answer) != 1 || !strings.Contains(r.Answer[0].String(), `\"timeout\":\"2s\"`) {
			t.Fatalf("%s after the reload: %v", name, r.Answer)
		}
	}
	close(gate)
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
