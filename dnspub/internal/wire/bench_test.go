package wire

import (
	"testing"

	"github.com/miekg/dns"

	"github.com/grpc-config-dns/grpc-config-dns/dnspub/zone"
)

// The hot path: lookup, copy, patch. Compare BenchmarkPackPerQuery, the
// obvious design (unpack the query, build a message, Pack it).
func BenchmarkRespond(b *testing.B) {
	tb, _ := testTable(b, 4096)
	for _, c := range []struct {
		name string
		a    ask
	}{
		{"A", ask{name: "echo.example.test.", qtype: dns.TypeA}},
		{"TXT-1.3KB-EDNS4096", ask{name: "_grpc_config.big.example.test.", qtype: dns.TypeTXT, edns: 4096}},
		{"TXT-1.3KB-noEDNS-TC", ask{name: "_grpc_config.big.example.test.", qtype: dns.TypeTXT}},
		{"NXDOMAIN", ask{name: "nope.example.test.", qtype: dns.TypeA, edns: 1232}},
		{"REFUSED", ask{name: "example.org.", qtype: dns.TypeA}},
	} {
		b.Run(c.name, func(b *testing.B) {
			q := query(c.a)
			dst := make([]byte, 0, 65535)
			b.ReportAllocs()
			b.SetBytes(int64(len(q)))
			for b.Loop() {
				dst, _ = tb.Respond(dst, q, false)
			}
		})
	}
}

func BenchmarkPackPerQuery(b *testing.B) {
	_, zs := testTable(b, 4096)
	var txt dns.RR
	for _, rr := range zs[0].Records() {
		if rr.Header().Name == "_grpc_config.big.example.test." {
			txt = rr
		}
	}
	q := query(ask{name: "_grpc_config.big.example.test.", qtype: dns.TypeTXT, edns: 4096})
	buf := make([]byte, 65535)
	b.ReportAllocs()
	for b.Loop() {
		in := new(dns.Msg)
		if err := in.Unpack(q); err != nil {
			b.Fatal(err)
		}
		out := new(dns.Msg)
		out.SetReply(in)
		out.Authoritative = true
		out.Answer = []dns.RR{txt}
		out.SetEdns0(4096, false)
		if _, err := out.PackBuffer(buf); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkBuild(b *testing.B) {
	_, zs := testTable(b, 4096)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Build(zs, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRespondLater is a fleet service's TXT answer from a table that
// holds it (built) and from one that left it for later (SetZoneLater:
// built for the query): what a query costs in the tenth of a second after
// a first start before the answers are built.
func BenchmarkRespondLater(b *testing.B) {
	z, ch := fleetZone(b, 5000)
	built, err := Build([]*zone.Zone{z}, Options{})
	if err != nil {
		b.Fatal(err)
	}
	e := mustNew(b).Edit()
	if err := e.SetZoneLater(z, ch); err != nil {
		b.Fatal(err)
	}
	later := e.Table()
	if !later.Deferred() {
		b.Fatal("not left for later")
	}
	q := query(ask{name: "_grpc_config.svc4321.fleet.test.", qtype: dns.TypeTXT, edns: 1232})
	for _, c := range []struct {
		name string
		t    *Table
	}{{"built", built}, {"later", later}} {
		b.Run(c.name, func(b *testing.B) {
			dst := make([]byte, 0, 65535)
			b.ReportAllocs()
			for b.Loop() {
				dst, _ = c.t.Respond(dst, q, false)
			}
		})
	}
}
