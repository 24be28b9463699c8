package wire

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/miekg/dns"

	"github.com/grpc-config-dns/grpc-config-dns/dnspub/zone"
	"github.com/grpc-config-dns/grpc-config-dns/model"
)

// testConfig has a TXT record of about 1.3 KB (too large for 512 bytes and
// for 1232), a small one, an empty non-terminal (b.example.test., the
// parent of a.b), and in-zone nameservers with glue.
var testConfig = `
server: {maxUDPSize: 4096}
zones:
  - origin: example.test.
    ttl: 300
    soa: {minimum: 60}
    nameservers:
      - {name: ns1, addresses: [192.0.2.53, "2001:db8::53"]}
      - ns2.example.net.
    services:
      - name: echo
        addresses: [192.0.2.1, 192.0.2.2, "2001:db8::1"]
        ttl: 30
        serviceConfig: {loadBalancingConfig: [{round_robin: {}}]}
      - name: big
        ttl: 30
        serviceConfig:
          methodConfig:
            - name: [{service: ` + strings.Repeat("x", 1250) + `}]
      - name: a.b
        addresses: [192.0.2.3]
  - origin: other.test.
    nameservers: [ns2.example.net.]
    services:
      - {name: "@", addresses: [192.0.2.9]}
`

func testTable(t testing.TB, maxUDP int) (*Table, []*zone.Zone) {
	t.Helper()
	cfg, ds := model.Parse([]byte(testConfig))
	if cfg == nil {
		t.Fatalf("config: %v", ds)
	}
	var zs []*zone.Zone
	for i, zc := range cfg.Zones {
		zs = append(zs, zone.New(zc, uint32(100+i)))
	}
	tb, err := Build(zs, Options{MaxUDPSize: maxUDP})
	if err != nil {
		t.Fatal(err)
	}
	return tb, zs
}

type ask struct {
	name  string
	qtype uint16
	edns  int // buffer size; 0: no EDNS
	do    bool
	tcp   bool
	mod   func(*dns.Msg)
}

func query(a ask) []byte {
	m := new(dns.Msg)
	m.SetQuestion(a.name, a.qtype)
	m.Id = 0xbeef
	m.RecursionDesired = true
	m.CheckingDisabled = true
	if a.edns > 0 {
		m.SetEdns0(uint16(a.edns), a.do)
	}
	if a.mod != nil {
		a.mod(m)
	}
	b, err := m.Pack()
	if err != nil {
		panic(err)
	}
	return b
}

func exchange(t *testing.T, tb *Table, a ask) (*dns.Msg, Result, int) {
	t.Helper()
	resp, r := tb.Respond(make([]byte, 0, 65535), query(a), a.tcp)
	if r.Action != Reply {
		return nil, r, 0
	}
	m := new(dns.Msg)
	if err := m.Unpack(resp); err != nil {
		t.Fatalf("%s %s: response does not unpack: %v", a.name, dns.TypeToString[a.qtype], err)
	}
	if m.Id != 0xbeef || !m.Response || m.RecursionAvailable || !m.RecursionDesired || !m.CheckingDisabled {
		t.Errorf("%s: header flags wrong: %v", a.name, m.MsgHdr)
	}
	if len(m.Question) == 1 && m.Question[0].Name != a.name {
		t.Errorf("question echoed as %q, asked %q", m.Question[0].Name, a.name)
	}
	return m, r, len(resp)
}

func TestPositiveAnswers(t *testing.T) {
	tb, _ := testTable(t, 4096)
	m, r, _ := exchange(t, tb, ask{name: "EcHo.Example.TEST.", qtype: dns.TypeA})
	if !m.Authoritative || m.Rcode != dns.RcodeSuccess || len(m.Answer) != 2 || r.Rcode != 0 {
		t.Fatalf("A echo: %v", m)
	}
	for _, rr := range m.Answer {
		if rr.Header().Ttl != 30 || !strings.EqualFold(rr.Header().Name, "echo.example.test.") {
			t.Errorf("answer %v", rr)
		}
	}
	m, _, _ = exchange(t, tb, ask{name: "echo.example.test.", qtype: dns.TypeAAAA})
	if len(m.Answer) != 1 || m.Answer[0].(*dns.AAAA).AAAA.String() != "2001:db8::1" {
		t.Errorf("AAAA: %v", m)
	}
	m, _, _ = exchange(t, tb, ask{name: "_grpc_config.echo.example.test.", qtype: dns.TypeTXT})
	if len(m.Answer) != 1 || strings.Join(zone.RawTXT(m.Answer[0].(*dns.TXT)), "") != `grpc_config=[{"serviceConfig":{"loadBalancingConfig":[{"round_robin":{}}]}}]` {
		t.Errorf("TXT: %v", m)
	}
	m, _, _ = exchange(t, tb, ask{name: "example.test.", qtype: dns.TypeSOA})
	if len(m.Answer) != 1 || m.Answer[0].(*dns.SOA).Serial != 100 {
		t.Errorf("SOA: %v", m)
	}
	// NS with glue for the in-zone nameserver only.
	m, _, _ = exchange(t, tb, ask{name: "example.test.", qtype: dns.TypeNS})
	if len(m.Answer) != 2 || len(m.Extra) != 2 {
		t.Errorf("NS: %v", m)
	}
	m, _, _ = exchange(t, tb, ask{name: "other.test.", qtype: dns.TypeA})
	if len(m.Answer) != 1 {
		t.Errorf("apex service: %v", m)
	}
}

func TestNegativeAnswers(t *testing.T) {
	tb, _ := testTable(t, 4096)
	for _, tc := range []struct {
		name  string
		qtype uint16
		rcode int
	}{
		{"echo.example.test.", dns.TypeMX, dns.RcodeSuccess},  // NODATA
		{"b.example.test.", dns.TypeA, dns.RcodeSuccess},      // empty non-terminal
		{"nope.example.test.", dns.TypeA, dns.RcodeNameError}, // NXDOMAIN
		{"x.echo.EXAMPLE.test.", dns.TypeTXT, dns.RcodeNameError},
		{"_grpc_config.nope.example.test.", dns.TypeTXT, dns.RcodeNameError},
		{"_grpc_config.echo.example.test.", dns.TypeA, dns.RcodeSuccess},
	} {
		m, r, _ := exchange(t, tb, ask{name: tc.name, qtype: tc.qtype})
		if m.Rcode != tc.rcode || r.Rcode != tc.rcode || !m.Authoritative || len(m.Answer) != 0 || len(m.Ns) != 1 {
			t.Errorf("%s %s: %v", tc.name, dns.TypeToString[tc.qtype], m)
			continue
		}
		soa := m.Ns[0].(*dns.SOA)
		if soa.Hdr.Ttl != 60 || soa.Serial != 100 || !strings.EqualFold(soa.Hdr.Name, "example.test.") {
			t.Errorf("%s: authority SOA %v (want negative TTL 60, serial 100)", tc.name, soa)
		}
	}
	for _, name := range []string{"example.org.", "test.", ".", "notexample.test."} {
		m, r, _ := exchange(t, tb, ask{name: name, qtype: dns.TypeA})
		if m.Rcode != dns.RcodeRefused || r.Rcode != RcodeRefused || m.Authoritative || len(m.Ns) != 0 {
			t.Errorf("%s outside our zones: %v", name, m)
		}
	}
	m, _, _ := exchange(t, tb, ask{name: "echo.example.test.", qtype: dns.TypeA, mod: func(m *dns.Msg) { m.Question[0].Qclass = dns.ClassCHAOS }})
	if m.Rcode != dns.RcodeRefused {
		t.Errorf("class CH: %v", m)
	}
}

func TestEDNSAndTruncation(t *testing.T) {
	tb, _ := testTable(t, 1232)
	big := "_grpc_config.big.example.test."
	// No EDNS: 512 bytes at most, so the TXT is truncated.
	m, r, n := exchange(t, tb, ask{name: big, qtype: dns.TypeTXT})
	if !m.Truncated || !r.Truncated || len(m.Answer) != 0 || n > 512 || m.IsEdns0() != nil || !m.Authoritative {
		t.Errorf("no EDNS: %d bytes, %v", n, m)
	}
	// EDNS 4096 asked, our cap 1232: still truncated, with OPT.
	m, _, n = exchange(t, tb, ask{name: big, qtype: dns.TypeTXT, edns: 4096, do: true})
	if !m.Truncated || n > 1232 || m.IsEdns0() == nil || m.IsEdns0().UDPSize() != 1232 || !m.IsEdns0().Do() {
		t.Errorf("EDNS 4096 with cap 1232: %d bytes, %v", n, m)
	}
	// A buffer below 512 counts as 512.
	m, _, n = exchange(t, tb, ask{name: "echo.example.test.", qtype: dns.TypeA, edns: 100})
	if m.Truncated || n > 512 || m.IsEdns0() == nil || m.IsEdns0().Do() {
		t.Errorf("EDNS 100: %v", m)
	}
	// TCP: everything fits.
	m, _, n = exchange(t, tb, ask{name: big, qtype: dns.TypeTXT, tcp: true})
	if m.Truncated || len(m.Answer) != 1 || n < 1300 {
		t.Errorf("TCP: %d bytes %v", n, m)
	}
	// A larger cap lets the answer through UDP.
	tb4, _ := testTable(t, 4096)
	m, _, n = exchange(t, tb4, ask{name: big, qtype: dns.TypeTXT, edns: 4096})
	if m.Truncated || len(m.Answer) != 1 || n > 4096 || m.IsEdns0().UDPSize() != 4096 {
		t.Errorf("EDNS 4096 with cap 4096: %d bytes %v", n, m)
	}
	// BADVERS for EDNS version 1, with the question and an OPT.
	m, r, _ = exchange(t, tb, ask{name: "echo.example.test.", qtype: dns.TypeA, edns: 1232, mod: func(m *dns.Msg) { m.IsEdns0().SetVersion(1) }})
	if m.Rcode != dns.RcodeBadVers || r.Rcode != RcodeBadVers || len(m.Answer) != 0 || m.IsEdns0() == nil {
		t.Errorf("BADVERS: %v", m)
	}
}

// TestNSGlueDroppedBeforeTruncating: additional data that does not fit is
// left out without setting TC (RFC 2181 §9).
func TestNSGlueDroppedBeforeTruncating(t *testing.T) {
	var addrs []string
	for i := 1; i <= 40; i++ {
		addrs = append(addrs, fmt.Sprintf("192.0.2.%d", i))
	}
	cfg, ds := model.Parse([]byte(`zones: [{origin: example.test., nameservers: [{name: ns1, addresses: [` + strings.Join(addrs, ",") + `]}]}]`))
	if cfg == nil {
		t.Fatal(ds)
	}
	tb, err := Build([]*zone.Zone{zone.New(cfg.Zones[0], 1)}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	m, r, n := exchange(t, tb, ask{name: "example.test.", qtype: dns.TypeNS})
	if m.Truncated || r.Truncated || len(m.Answer) != 1 || len(m.Extra) != 0 || n > 512 {
		t.Errorf("UDP 512: %d bytes %v", n, m)
	}
	m, _, _ = exchange(t, tb, ask{name: "example.test.", qtype: dns.TypeNS, tcp: true})
	if len(m.Extra) != 40 {
		t.Errorf("TCP: want all glue, got %v", m)
	}
}

func TestANY(t *testing.T) {
	tb, _ := testTable(t, 1232)
	m, _, _ := exchange(t, tb, ask{name: "echo.example.test.", qtype: dns.TypeANY})
	if len(m.Answer) != 2 || m.Answer[0].Header().Rrtype != dns.TypeA {
		t.Errorf("ANY must return one RRset (RFC 8482): %v", m)
	}
	m, _, _ = exchange(t, tb, ask{name: "b.example.test.", qtype: dns.TypeANY})
	if m.Rcode != 0 || len(m.Answer) != 0 || len(m.Ns) != 1 {
		t.Errorf("ANY at an empty non-terminal: %v", m)
	}
}

func TestMalformedAndSpecial(t *testing.T) {
	tb, _ := testTable(t, 1232)
	q := query(ask{name: "echo.example.test.", qtype: dns.TypeA})
	check := func(what string, msg []byte, rcode int, action Action) {
		t.Helper()
		resp, r := tb.Respond(nil, msg, false)
		if r.Action != action || (action == Reply && r.Rcode != rcode) {
			t.Errorf("%s: action %d rcode %d, want %d %d", what, r.Action, r.Rcode, action, rcode)
			return
		}
		if action != Reply {
			if len(resp) != 0 {
				t.Errorf("%s: a response for action %d", what, action)
			}
			return
		}
		m := new(dns.Msg)
		if err := m.Unpack(resp); err != nil {
			t.Errorf("%s: %v", what, err)
			return
		}
		if m.Rcode != rcode || m.Id != 0xbeef || !m.Response {
			t.Errorf("%s: %v", what, m)
		}
	}
	check("runt", q[:11], 0, Drop)
	resp := append([]byte(nil), q...)
	resp[2] |= 0x80
	check("a response", resp, 0, Drop)
	two := append([]byte(nil), q...)
	two[5] = 2
	check("QDCOUNT 2", two, dns.RcodeFormatError, Reply)
	zero := append([]byte(nil), q[:12]...)
	zero[5] = 0
	check("QDCOUNT 0", zero, dns.RcodeFormatError, Reply)
	check("truncated question", q[:20], dns.RcodeFormatError, Reply)
	ptr := append(append([]byte(nil), q[:12]...), 0xc0, 0x0c, 0, 1, 0, 1)
	check("pointer in question", ptr, dns.RcodeFormatError, Reply)
	arc := append([]byte(nil), q...)
	arc[11] = 1
	check("ARCOUNT beyond the message", arc, dns.RcodeFormatError, Reply)
	for _, op := range []int{dns.OpcodeIQuery, dns.OpcodeStatus, dns.OpcodeNotify, dns.OpcodeUpdate, 7} {
		m := append([]byte(nil), q...)
		m[2] = m[2]&^0x78 | byte(op<<3)
		check("opcode "+dns.OpcodeToString[op], m, dns.RcodeNotImplemented, Reply)
	}
	check("AXFR", query(ask{name: "example.test.", qtype: dns.TypeAXFR}), 0, Transfer)
	check("IXFR", query(ask{name: "example.test.", qtype: dns.TypeIXFR}), 0, Transfer)
	check("qtype OPT", query(ask{name: "example.test.", qtype: dns.TypeOPT}), dns.RcodeFormatError, Reply)
	check("MAILB", query(ask{name: "example.test.", qtype: dns.TypeMAILB}), dns.RcodeNotImplemented, Reply)
	signed := new(dns.Msg)
	signed.SetQuestion("echo.example.test.", dns.TypeA)
	signed.Id = 0xbeef
	signed.SetTsig("key.", dns.HmacSHA256, 300, 0)
	sb, _, err := dns.TsigGenerate(signed, "c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0cw==", "", false)
	if err != nil {
		t.Fatal(err)
	}
	check("TSIG", sb, 0, Signed)
	twoOPT := new(dns.Msg)
	twoOPT.SetQuestion("echo.example.test.", dns.TypeA)
	twoOPT.Id = 0xbeef
	twoOPT.SetEdns0(1232, false)
	twoOPT.Extra = append(twoOPT.Extra, twoOPT.Extra[0])
	b, _ := twoOPT.Pack()
	check("two OPT records", b, dns.RcodeFormatError, Reply)
}

// Error answers carry an OPT when the query had one (RFC 6891 §6.1.1),
// including those given before the question is read.
func TestErrorAnswersEchoOPT(t *testing.T) {
	tb, _ := testTable(t, 1232)
	edns := query(ask{name: "echo.example.test.", qtype: dns.TypeA, edns: 4096, do: true})
	opcode := append([]byte(nil), edns...)
	opcode[2] = opcode[2]&^0x78 | byte(dns.OpcodeUpdate<<3)
	noQuestion := func() []byte {
		m := new(dns.Msg)
		m.Id = 0xbeef
		m.SetEdns0(4096, true)
		b, _ := m.Pack()
		return b
	}()
	chaos := query(ask{name: "example.test.", qtype: dns.TypeAXFR, edns: 4096, do: true, mod: func(m *dns.Msg) { m.Question[0].Qclass = dns.ClassCHAOS }})
	for _, tc := range []struct {
		what  string
		msg   []byte
		rcode int
	}{
		{"unknown opcode", opcode, dns.RcodeNotImplemented},
		{"no question", noQuestion, dns.RcodeFormatError},
		{"AXFR in class CH", chaos, dns.RcodeRefused},
	} {
		resp, r := tb.Respond(nil, tc.msg, true)
		m := new(dns.Msg)
		if err := m.Unpack(resp); err != nil || r.Action != Reply || m.Rcode != tc.rcode {
			t.Errorf("%s: action %d, %v %v; want rcode %d", tc.what, r.Action, m, err, tc.rcode)
			continue
		}
		if o := m.IsEdns0(); o == nil || o.UDPSize() != 1232 || !o.Do() {
			t.Errorf("%s: OPT %v, want ours (1232) with DO", tc.what, o)
		}
	}
}

func TestRespondDoesNotAllocate(t *testing.T) {
	tb, _ := testTable(t, 4096)
	dst := make([]byte, 0, 65535)
	for _, a := range []ask{
		{name: "echo.example.test.", qtype: dns.TypeA},
		{name: "_grpc_config.big.example.test.", qtype: dns.TypeTXT, edns: 4096},
		{name: "_grpc_config.big.example.test.", qtype: dns.TypeTXT},
		{name: "nope.example.test.", qtype: dns.TypeA, edns: 1232},
		{name: "example.org.", qtype: dns.TypeA},
	} {
		q := query(a)
		if n := testing.AllocsPerRun(100, func() { tb.Respond(dst, q, false) }); n != 0 {
			t.Errorf("%s %s: %.1f allocations per query", a.name, dns.TypeToString[a.qtype], n)
		}
	}
}

// lowerName lower-cases A-Z and nothing else: every byte at every offset
// of names of every length up to 20, and every pair of bytes side by side
// (a carry from one byte into the next would show there).
func TestLowerName(t *testing.T) {
	check := func(src []byte) {
		t.Helper()
		want := bytes.Clone(src)
		for i, c := range want {
			if 'A' <= c && c <= 'Z' {
				want[i] = c + 'a' - 'A'
			}
		}
		got := make([]byte, len(src))
		lowerName(got, src)
		if !bytes.Equal(got, want) {
			t.Fatalf("lowerName(%x) = %x, want %x", src, got, want)
		}
	}
	for n := 1; n <= 20; n++ {
		for at := range n {
			for c := range 256 {
				src := bytes.Repeat([]byte("Qz"), n)[:n]
				src[at] = byte(c)
				check(src)
			}
		}
	}
	for at := range 9 {
		for c := range 1 << 16 {
			src := []byte("MiXeD.CaSe")
			src[at], src[at+1] = byte(c), byte(c>>8)
			check(src)
		}
	}
}
