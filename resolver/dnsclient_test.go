package resolver

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/grpc-config-dns/grpc-config-dns/internal/dnstest"
	sc "github.com/grpc-config-dns/grpc-config-dns/serviceconfig"
)

// answerLen is the number of records of an answer.
func answerLen(a *answer) int { return len(a.addrs) + len(a.txt) }

// wireMessage packs m and parses it as the resolver reads replies.
func wireMessage(tb testing.TB, m *dns.Msg) *message {
	tb.Helper()
	b, err := m.Pack()
	if err != nil {
		tb.Fatal(err)
	}
	r, err := parseMessage(b)
	if err != nil {
		tb.Fatal(err)
	}
	return r
}

func testClient(servers ...string) *dnsClient {
	return &dnsClient{servers: servers, timeout: 300 * time.Millisecond, attempts: 1}
}

func lookupT(t *testing.T, c *dnsClient, name string, qtype uint16) *answer {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	a, err := c.lookup(ctx, name, qtype)
	if err != nil {
		t.Fatalf("lookup %s %s: %v", name, typeName(qtype), err)
	}
	return a
}

func TestLookupUsesEDNS1232OverUDP(t *testing.T) {
	s := dnstest.Start(t)
	s.SetAddrs("svc.test", 60, "192.0.2.1")
	a := lookupT(t, testClient(s.Addr), "svc.test", dns.TypeA)
	if answerLen(a) != 1 || a.tcp {
		t.Fatalf("answer %+v: want one A record over UDP", a)
	}
	q := s.Queries()
	if len(q) != 1 || q[0].Net != "udp" || q[0].EDNSSize != 1232 || !q[0].RD {
		t.Fatalf("queries %+v: want one UDP query advertising EDNS0 1232 with RD", q)
	}
	if a.ttl != 60*time.Second || !a.hasTTL {
		t.Errorf("ttl %v, want 60s", a.ttl)
	}
}

// bigConfig returns a valid choice list of about n bytes.
func bigConfig(n int) string {
	var b strings.Builder
	b.WriteString(`[{"serviceConfig":{"methodConfig":[`)
	for i := 0; b.Len() < n; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"name":[{"service":"pkg.Service` + strings.Repeat("x", 40) + `","method":"M` + strconv.Itoa(i) + `"}],"timeout":"1s"}`)
	}
	b.WriteString(`]}}]`)
	return b.String()
}

func TestLookupLargeTXTRetriesOverTCP(t *testing.T) {
	s := dnstest.Start(t)
	value := bigConfig(4096)
	s.SetConfig("svc.test", 60, value)
	a := lookupT(t, testClient(s.Addr), sc.OwnerPrefix+"svc.test", dns.TypeTXT)
	if !a.tcp {
		t.Fatalf("a %d-byte record came over UDP; want TC then TCP", len(value))
	}
	if got := s.Count(dns.TypeTXT, "udp"); got != 1 {
		t.Errorf("%d UDP queries, want 1", got)
	}
	if got := s.Count(dns.TypeTXT, "tcp"); got != 1 {
		t.Errorf("%d TCP queries, want 1", got)
	}
	recs := a.txt
	v, err := sc.DecodeTXT(recs)
	if err != nil || string(v) != value {
		t.Fatalf("decoded %d bytes (err %v), want the %d published", len(v), err, len(value))
	}
}

// A server that ignores the advertised EDNS size sends a UDP answer
// larger than our buffer: it does not unpack, and TCP is asked.
func TestLookupOversizeUDPAnswerRetriesOverTCP(t *testing.T) {
	s := dnstest.Start(t)
	value := bigConfig(3000)
	s.SetConfig("svc.test", 60, value)
	s.SetFault(dns.TypeTXT, dnstest.Oversize)
	a := lookupT(t, testClient(s.Addr), sc.OwnerPrefix+"svc.test", dns.TypeTXT)
	if !a.tcp || s.Count(dns.TypeTXT, "tcp") != 1 {
		t.Fatalf("tcp %v, %d TCP queries; want the answer over TCP", a.tcp, s.Count(dns.TypeTXT, "tcp"))
	}
}

func TestLookupForcedTruncationRetriesOverTCP(t *testing.T) {
	s := dnstest.Start(t)
	s.SetAddrs("svc.test", 60, "192.0.2.1")
	s.SetFault(dns.TypeA, dnstest.Truncate)
	a := lookupT(t, testClient(s.Addr), "svc.test", dns.TypeA)
	if !a.tcp || answerLen(a) != 1 {
		t.Fatalf("answer %+v: want the A record over TCP", a)
	}
}

func TestLookupFailsOverToNextNameserver(t *testing.T) {
	for _, tc := range []struct {
		name  string
		first func(t *testing.T) string
	}{
		{"refused port", func(t *testing.T) string { return dnstest.DeadUDP(t) }},
		{"silent", func(t *testing.T) string { return dnstest.SilentUDP(t) }},
		{"SERVFAIL", func(t *testing.T) string {
			bad := dnstest.Start(t)
			bad.SetFault(dns.TypeA, dnstest.ServFail)
			return bad.Addr
		}},
		{"REFUSED", func(t *testing.T) string {
			bad := dnstest.Start(t)
			bad.SetFault(dns.TypeA, dnstest.Refused)
			return bad.Addr
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			good := dnstest.Start(t)
			good.SetAddrs("svc.test", 60, "192.0.2.7")
			c := testClient(tc.first(t), good.Addr)
			c.timeout = 100 * time.Millisecond // the silent server's cost
			start := time.Now()
			a := lookupT(t, c, "svc.test", dns.TypeA)
			if a.server != good.Addr || answerLen(a) != 1 {
				t.Fatalf("answer from %s with %d records, want the second server's", a.server, answerLen(a))
			}
			if el := time.Since(start); el > c.timeout+time.Second {
				t.Errorf("failover took %v", el)
			}
		})
	}
}

func TestLookupAllNameserversFail(t *testing.T) {
	bad := dnstest.Start(t)
	bad.SetFault(dns.TypeTXT, dnstest.ServFail)
	dead := dnstest.DeadUDP(t)
	c := testClient(dead, bad.Addr)
	c.attempts = 2
	_, err := c.lookup(context.Background(), "_grpc_config.svc.test", dns.TypeTXT)
	var le *lookupError
	if !errors.As(err, &le) {
		t.Fatalf("err %v, want a lookupError", err)
	}
	for _, want := range []string{dead, bad.Addr, "SERVFAIL", "TXT"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	if n := bad.Count(dns.TypeTXT, ""); n != 2 {
		t.Errorf("bad server asked %d times, want 2 (attempts)", n)
	}
}

func TestLookupNegativeAnswers(t *testing.T) {
	s := dnstest.Start(t)
	s.SetAddrs("svc.test", 60, "192.0.2.1")
	c := testClient(s.Addr)
	nx := lookupT(t, c, "missing.test", dns.TypeA)
	if !nx.nxdomain || answerLen(nx) != 0 {
		t.Errorf("missing name: %+v, want NXDOMAIN", nx)
	}
	// The SOA has TTL 60 and MINIMUM 30: negative caching uses 30 (RFC 2308).
	if !nx.hasTTL || nx.ttl != 30*time.Second {
		t.Errorf("negative TTL %v (known %v), want 30s", nx.ttl, nx.hasTTL)
	}
	nodata := lookupT(t, c, "svc.test", dns.TypeTXT)
	if nodata.nxdomain || answerLen(nodata) != 0 {
		t.Errorf("NODATA: %+v", nodata)
	}
}

func TestLookupFollowsCNAMEChain(t *testing.T) {
	s := dnstest.Start(t)
	s.SetCNAME("svc.test", "mid.test", 40)
	s.SetCNAME("mid.test", "real.test", 50)
	s.SetAddrs("real.test", 60, "192.0.2.9")
	a := lookupT(t, testClient(s.Addr), "SVC.test", dns.TypeA)
	if a.name != "real.test." || answerLen(a) != 1 || a.ttl != 40*time.Second {
		t.Fatalf("answer name %s, %d records, ttl %v; want real.test., 1, 40s (the shortest in the chain)", a.name, answerLen(a), a.ttl)
	}
}

func TestLookupCNAMELoop(t *testing.T) {
	s := dnstest.Start(t)
	s.SetCNAME("a.test", "b.test", 40)
	s.SetCNAME("b.test", "a.test", 40)
	_, err := testClient(s.Addr).lookup(context.Background(), "a.test", dns.TypeA)
	if err == nil || !strings.Contains(err.Error(), "CNAME chain") {
		t.Fatalf("err %v, want a CNAME chain error", err)
	}
}

// A server authoritative for one zone answers an alias into another zone
// with the CNAME alone; the client asks for the target itself.
func TestParseAnswerAsksAgainForOutOfZoneTarget(t *testing.T) {
	q := new(dns.Msg)
	q.SetQuestion("svc.test.", dns.TypeA)
	r := new(dns.Msg)
	r.SetReply(q)
	r.Authoritative = true
	r.Answer = []dns.RR{&dns.CNAME{Hdr: dns.RR_Header{Name: "svc.test.", Rrtype: dns.TypeCNAME, Class: dns.ClassINET, Ttl: 10}, Target: "elsewhere.example."}}
	hops := 0
	a, next, err := parseAnswer(wireMessage(t, r), "svc.test.", dns.TypeA, &hops)
	if err != nil || next != "elsewhere.example." || a.ttl != 10*time.Second {
		t.Fatalf("next %q ttl %v err %v; want to ask elsewhere.example. next", next, a.ttl, err)
	}
	// A recursive server's answer is complete: NODATA at the target.
	r.RecursionAvailable = true
	if _, next, _ := parseAnswer(wireMessage(t, r), "svc.test.", dns.TypeA, &hops); next != "" {
		t.Errorf("asked again after a recursive answer")
	}
}

func TestLookupRejectsMismatchedReply(t *testing.T) {
	m := query{name: "svc.test.", qtype: dns.TypeA}
	r := new(dns.Msg)
	r.SetQuestion("other.test.", dns.TypeA)
	r.Response = true
	if err := checkReply(m, wireMessage(t, r), false); err == nil {
		t.Error("accepted a reply for another question")
	}
	r.SetQuestion("SVC.test.", dns.TypeA)
	r.Response, r.Authoritative = true, true
	if err := checkReply(m, wireMessage(t, r), false); err != nil {
		t.Errorf("rejected a reply whose question differs only in case: %v", err)
	}
	// A lame referral (no answer, neither authoritative nor recursive)
	// says nothing about the name: the next server is asked.
	r.Authoritative = false
	if err := checkReply(m, wireMessage(t, r), false); err == nil || !strings.Contains(err.Error(), "lame") {
		t.Errorf("accepted a lame referral: %v", err)
	}
	r.RecursionAvailable = true
	if err := checkReply(m, wireMessage(t, r), false); err != nil {
		t.Errorf("rejected a recursive server's empty answer: %v", err)
	}
	r.RecursionAvailable = false
	r.Authoritative = true
	r.Response = false
	if err := checkReply(m, wireMessage(t, r), false); err == nil {
		t.Error("accepted a query as a reply")
	}
}

func TestLookupCancelStopsWaiting(t *testing.T) {
	c := &dnsClient{servers: []string{dnstest.SilentUDP(t)}, timeout: 10 * time.Second, attempts: 1}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	start := time.Now()
	_, err := c.lookup(ctx, "svc.test", dns.TypeA)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err %v, want context.Canceled", err)
	}
	if el := time.Since(start); el > time.Second {
		t.Errorf("cancel took %v to stop a query with a 10s timeout", el)
	}
}

func TestTXTStringsRoundTrip(t *testing.T) {
	raw := []string{`grpc_config=[{"serviceConfig":{"a":"\"q\" \\ \u00e9"}}]`, "\x00\x01\xff\\\"end", ""}
	s := dnstest.Start(t)
	s.SetTXT("x.test", 60, raw)
	a := lookupT(t, testClient(s.Addr), "x.test", dns.TypeTXT)
	got := a.txt[0]
	if len(got) != len(raw) {
		t.Fatalf("got %d strings, want %d", len(got), len(raw))
	}
	for i := range raw {
		if got[i] != raw[i] {
			t.Errorf("string %d: got %q, want %q", i, got[i], raw[i])
		}
	}
}

func TestLookupConfig(t *testing.T) {
	s := dnstest.Start(t)
	s.SetConfig("svc.test", 42, `[{"serviceConfig":{}}]`)
	s.SetTXT("other.test", 42, []string{"v=spf1 -all"})
	rec, err := LookupConfig(context.Background(), s.Addr, "svc.test.")
	if err != nil {
		t.Fatal(err)
	}
	if rec.Owner != "_grpc_config.svc.test." || len(rec.Records) != 1 || rec.TTL != 42*time.Second || rec.Server != s.Addr {
		t.Fatalf("%+v", rec)
	}
	if v, err := sc.DecodeTXT(rec.Records); err != nil || string(v) != `[{"serviceConfig":{}}]` {
		t.Errorf("decoded %q, %v", v, err)
	}
	rec, err = LookupConfig(context.Background(), s.Addr, "missing.test")
	if err != nil || !rec.NXDomain {
		t.Errorf("missing: %+v, %v; want NXDOMAIN", rec, err)
	}
	if _, err := LookupConfig(context.Background(), "ns.example", "svc.test"); err == nil {
		t.Error("accepted a nameserver that is not an IP address")
	}
}

// TestLookupTruncatedOverTCPFails: TC=1 over TCP means the server could
// not send the answer, not that there is none (issue 11, item 5).
func TestLookupTruncatedOverTCPFails(t *testing.T) {
	s := dnstest.Start(t)
	s.SetConfig("svc.test", 60, oneChoice(cfgA))
	s.SetFault(dns.TypeTXT, dnstest.TruncateAll)
	a, err := testClient(s.Addr).lookup(t.Context(), sc.OwnerPrefix+"svc.test", dns.TypeTXT)
	if err == nil {
		t.Fatalf("lookup = %+v, nil; want an error for a truncated TCP answer", a)
	}
	if !strings.Contains(err.Error(), "truncated") {
		t.Errorf("error %q does not say the answer was truncated", err)
	}
}
