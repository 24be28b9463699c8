package resolver

import (
	"strconv"
	"strings"
	"testing"

	"github.com/miekg/dns"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	grpcresolver "google.golang.org/grpc/resolver"
	"google.golang.org/grpc/resolver/manual"

	sc "github.com/grpc-config-dns/grpc-config-dns/serviceconfig"
)

// Targets come from users and configuration: parsing must never panic, and
// what it accepts must be usable.
func FuzzParseTarget(f *testing.F) {
	for _, s := range [][2]string{
		{"", "svc.test"}, {"", "svc.test:50051"}, {"127.0.0.1:5353", "echo.example.test:443"},
		{"[::1]:53", "[2001:db8::1]:80"}, {"", "2001:db8::1"}, {"", ":80"}, {"", "a..b"},
		{"ns.example", "x"}, {"1.2.3.4:0", "x:99999"}, {"", "fe80::1%eth0"}, {"", "host."},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, authority, endpoint string) {
		tg, err := parseTarget(authority, endpoint)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error message")
			}
			return
		}
		if n, err := strconv.Atoi(tg.port); err != nil || n < 1 || n > 65535 {
			t.Fatalf("accepted port %q", tg.port)
		}
		if tg.ip.IsValid() {
			return
		}
		if err := checkHostname(tg.host); err != nil {
			t.Fatalf("accepted host %q: %v", tg.host, err)
		}
		if _, ok := dns.IsDomainName(dns.Fqdn(tg.host)); !ok {
			t.Fatalf("accepted host %q that is no domain name", tg.host)
		}
		if tg.nameserver != "" {
			again, err := parseNameserver(tg.nameserver)
			if err != nil || again != tg.nameserver {
				t.Fatalf("nameserver %q does not parse back (%q, %v)", tg.nameserver, again, err)
			}
		}
	})
}

// Answers come from the network: any packet, however malformed, must be
// read without a panic, and its TXT records run through the whole config
// path (decode, parse, select, validate, grpc-go's parser).
func FuzzParseAnswer(f *testing.F) {
	for _, seed := range fuzzSeedAnswers() {
		f.Add(seed)
	}
	parser := realParser(f)
	f.Fuzz(func(t *testing.T, packet []byte) {
		r, err := parseMessage(packet)
		if err != nil || len(r.questions) != 1 {
			return
		}
		q := r.questions[0]
		hops := 0
		a, _, err := parseAnswer(r, strings.ToLower(q.name), q.qtype, &hops)
		if err != nil {
			return
		}
		if hops > maxCNAMEHops {
			t.Fatalf("followed %d aliases", hops)
		}
		d := &dnsResolver{cc: parser, t: target{host: "svc.test"}, sel: fastClient()}
		o := d.evaluate(a, nil)
		if o.ev.kind == evChosen && o.pr == nil {
			t.Fatal("chosen without a parsed config")
		}
		if o.ev.kind == evInvalid && o.ev.err == nil {
			t.Fatal("invalid without an error")
		}
	})
}

// TXT strings must come back byte for byte, whatever they hold.
func FuzzTXTStrings(f *testing.F) {
	f.Add(`grpc_config=[{"serviceConfig":{}}]`)
	f.Add("\\\"\x00\xff\\123")
	f.Add(`\`)
	f.Fuzz(func(t *testing.T, raw string) {
		if len(raw) > 255 {
			return
		}
		rr := &dns.TXT{Hdr: dns.RR_Header{Name: "x.", Rrtype: dns.TypeTXT, Class: dns.ClassINET}, Txt: []string{sc.EscapeTXTString(raw)}}
		m := new(dns.Msg)
		m.SetQuestion("x.", dns.TypeTXT)
		m.Answer = []dns.RR{rr}
		b, err := m.Pack()
		if err != nil {
			t.Fatalf("pack %q: %v", raw, err)
		}
		back, err := parseMessage(b)
		if err != nil {
			t.Fatal(err)
		}
		got := back.answers[0].txt
		if len(got) != 1 || got[0] != raw {
			t.Fatalf("got %q, want %q", got, raw)
		}
	})
}

func fastClient() sc.Client { c, _ := fastOptions().resolve(); return c.client("") }

// realParser returns a ClientConn whose ParseServiceConfig is grpc-go's
// own, taken from a real channel, so fuzzing reaches grpc-go's parser.
func realParser(tb testing.TB) *fakeCC {
	r := manual.NewBuilderWithScheme("fuzzparse")
	built := make(chan struct{})
	r.BuildCallback = func(grpcresolver.Target, grpcresolver.ClientConn, grpcresolver.BuildOptions) { close(built) }
	cc, err := grpc.NewClient("fuzzparse:///x", grpc.WithResolvers(r), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { cc.Close() })
	cc.Connect()
	<-built
	f := newFakeCC()
	f.parse = r.CC().ParseServiceConfig
	return f
}

// fuzzSeedAnswers are packets worth starting from: the answers the
// resolver meets in practice.
func fuzzSeedAnswers() [][]byte {
	var out [][]byte
	add := func(m *dns.Msg) {
		b, err := m.Pack()
		if err != nil {
			panic(err)
		}
		out = append(out, b)
	}
	h := func(name string, t uint16, ttl uint32) dns.RR_Header {
		return dns.RR_Header{Name: name, Rrtype: t, Class: dns.ClassINET, Ttl: ttl}
	}
	txt := func(strs ...string) *dns.Msg {
		m := new(dns.Msg)
		m.SetQuestion("_grpc_config.svc.test.", dns.TypeTXT)
		m.Response = true
		esc := make([]string, len(strs))
		for i, s := range strs {
			esc[i] = sc.EscapeTXTString(s)
		}
		m.Answer = []dns.RR{&dns.TXT{Hdr: h("_grpc_config.svc.test.", dns.TypeTXT, 30), Txt: esc}}
		return m
	}
	add(txt(`grpc_config=[{"clientLanguage":["go"],"percentage":50,"serviceConfig":{"loadBalancingConfig":[{"round_robin":{}}]}},{"serviceConfig":{}}]`))
	add(txt(`grpc_config=[{"serviceConfig":{"methodConfig":[{"name":[{"service":"a.B"}],"timeout":"1s",`, `"retryPolicy":{"maxAttempts":3,"initialBackoff":"0.1s","maxBackoff":"1s","backoffMultiplier":2,"retryableStatusCodes":["UNAVAILABLE"]}}]}}]`))
	add(txt(`grpc_config=[{"serviceConfig":{},"clientHostName":["x"]}]`))
	add(txt("v=spf1 -all"))
	m := txt(`grpc_config=[{"serviceConfig":{}}]`)
	m.Answer = append([]dns.RR{&dns.CNAME{Hdr: h("_grpc_config.svc.test.", dns.TypeCNAME, 10), Target: "cfg.other.test."}},
		&dns.TXT{Hdr: h("cfg.other.test.", dns.TypeTXT, 20), Txt: []string{`grpc_config=[{"serviceConfig":{}}]`}})
	add(m)
	nx := new(dns.Msg)
	nx.SetQuestion("svc.test.", dns.TypeA)
	nx.Response, nx.Rcode = true, dns.RcodeNameError
	nx.Ns = []dns.RR{&dns.SOA{Hdr: h("test.", dns.TypeSOA, 60), Ns: "ns.test.", Mbox: "h.test.", Minttl: 30}}
	add(nx)
	a := new(dns.Msg)
	a.SetQuestion("svc.test.", dns.TypeA)
	a.Response = true
	a.Answer = []dns.RR{&dns.A{Hdr: h("svc.test.", dns.TypeA, 60), A: []byte{192, 0, 2, 1}}}
	add(a)
	return out
}
