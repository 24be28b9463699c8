package dnspub

import (
	"slices"

	"github.com/miekg/dns"
)

// sampleQuestions are asked of a server to compare its answers, byte
// for byte, with another's.
var sampleQuestions = []struct {
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

// answersOf asks every sample question over UDP and TCP; each answer's
// bytes, with the ID cleared.
func answersOf(ts *testServer) []string {
	var out []string
	for _, q := range sampleQuestions {
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

func equalStrings(a, b []string) bool { return slices.Equal(a, b) }
