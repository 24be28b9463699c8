package dnspub

import (
	"net/netip"
	"slices"
	"testing"

	"github.com/miekg/dns"
)

// A service that names a port is published as an SRV record at
// _grpc._tcp.<service> (RFC 2782), priority 0 and weight 0, pointing at the
// service's own name, whose addresses come along in the additional section
// so that a client needs no second question.
func TestServicePortPublishesSRV(t *testing.T) {
	ts := startServer(t, `
zones:
  - origin: example.test.
    ttl: 300
    nameservers: [{name: ns1, addresses: [192.0.2.53]}]
    services:
      - name: echo
        addresses: [192.0.2.1, "2001:db8::1"]
        port: 50051
        ttl: 30
        serviceConfig: {loadBalancingConfig: [{round_robin: {}}]}
      - {name: noport, addresses: [192.0.2.2]}
`, nil)
	for _, proto := range []string{"udp", "tcp"} {
		r := ts.ask(proto, "_grpc._tcp.echo.example.test.", dns.TypeSRV, 1232)
		if r.Rcode != dns.RcodeSuccess || !r.Authoritative {
			t.Fatalf("%s: rcode %s, aa %v", proto, dns.RcodeToString[r.Rcode], r.Authoritative)
		}
		if len(r.Answer) != 1 {
			t.Fatalf("%s: answer %v, want one SRV", proto, r.Answer)
		}
		srv, ok := r.Answer[0].(*dns.SRV)
		if !ok {
			t.Fatalf("%s: answer %v, want an SRV", proto, r.Answer[0])
		}
		if srv.Hdr.Name != "_grpc._tcp.echo.example.test." || srv.Hdr.Ttl != 30 ||
			srv.Priority != 0 || srv.Weight != 0 || srv.Port != 50051 || srv.Target != "echo.example.test." {
			t.Errorf("%s: SRV %v, want _grpc._tcp.echo.example.test. 30 IN SRV 0 0 50051 echo.example.test.", proto, srv)
		}
		var glue []netip.Addr
		for _, rr := range r.Extra {
			switch rr := rr.(type) {
			case *dns.A:
				if rr.Hdr.Name == "echo.example.test." && rr.Hdr.Ttl == 30 {
					a, _ := netip.AddrFromSlice(rr.A.To4())
					glue = append(glue, a)
				}
			case *dns.AAAA:
				if rr.Hdr.Name == "echo.example.test." && rr.Hdr.Ttl == 30 {
					a, _ := netip.AddrFromSlice(rr.AAAA)
					glue = append(glue, a)
				}
			case *dns.OPT:
			default:
				t.Errorf("%s: additional %v: want only the target's addresses", proto, rr)
			}
		}
		slices.SortFunc(glue, netip.Addr.Compare)
		want := []netip.Addr{netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("2001:db8::1")}
		if len(glue) != len(want) || glue[0] != want[0] || glue[1] != want[1] {
			t.Errorf("%s: glue %v in %v, want %v", proto, glue, r.Extra, want)
		}
	}

	// A service without a port has no SRV name; the SRV type at the
	// service's own name is NODATA.
	if r := ts.ask("udp", "_grpc._tcp.noport.example.test.", dns.TypeSRV, 0); r.Rcode != dns.RcodeNameError || len(r.Answer) != 0 {
		t.Errorf("SRV of a service without a port: rcode %s, answer %v; want NXDOMAIN", dns.RcodeToString[r.Rcode], r.Answer)
	}
	if r := ts.ask("udp", "echo.example.test.", dns.TypeSRV, 0); r.Rcode != dns.RcodeSuccess || len(r.Answer) != 0 || len(r.Ns) != 1 {
		t.Errorf("SRV at the service's own name: rcode %s, answer %v, authority %v; want NODATA with the SOA", dns.RcodeToString[r.Rcode], r.Answer, r.Ns)
	}
}
