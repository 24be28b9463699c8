package wire

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/grpc-config-dns/grpc-config-dns/dnspub/dnssec"
	"github.com/grpc-config-dns/grpc-config-dns/dnspub/zone"
	"github.com/grpc-config-dns/grpc-config-dns/model"
)

// signedZone is the built-in example zone, with the extra services,
// signed with a new CSK.
func signedZone(t *testing.T, extra string) (*model.Zone, *dnssec.KeySet, *zone.Zone) {
	t.Helper()
	text := bytes.Replace(model.Example, []byte("    ttl: 30s\n"), []byte("    ttl: 30s\n    dnssec: {}\n"), 1)
	text = append(text, extra...)
	cfg, ds := model.Parse(text)
	if cfg == nil {
		t.Fatal(ds)
	}
	zc := cfg.Zones[0]
	ks, err := dnssec.Load(t.TempDir(), zc.Origin, dnssec.Options{Algorithm: dns.ECDSAP256SHA256, Generate: true})
	if err != nil {
		t.Fatal(err)
	}
	z, ch := zone.Update(nil, zc)
	sz, err := zone.Sign(nil, z.WithSerial(1), ch, ks, *zc.DNSSEC, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return zc, ks, sz
}

// covers reports whether NSEC n proves name absent: name sorts strictly
// between its owner and its next name (the last NSEC wraps to the apex).
func covers(n *dns.NSEC, name string) bool {
	after := zone.CompareNames(n.Hdr.Name, name) < 0
	before := zone.CompareNames(name, n.NextDomain) < 0
	if zone.CompareNames(n.Hdr.Name, n.NextDomain) >= 0 { // the last of the chain
		return after
	}
	return after && before
}

// checkDOAnswer validates a response to a DO query as a validating
// resolver would: every RRset of the answer and authority sections
// signed by the zone's key; a positive answer carries its RRSIG, a
// NODATA the NSEC of the name (or, at an empty non-terminal, one that
// covers it), an NXDOMAIN an NSEC covering the name and one covering the
// wildcard at its closest encloser (RFC 4035 §5.4).
func checkDOAnswer(t *testing.T, m *dns.Msg, q string, qtype uint16, keys []dns.RR, z *zone.Zone) {
	t.Helper()
	key := keys[0].(*dns.DNSKEY)
	for _, sec := range [][]dns.RR{m.Answer, m.Ns} {
		sets := map[string][]dns.RR{}
		sigs := map[string][]*dns.RRSIG{}
		for _, rr := range sec {
			h := rr.Header()
			if s, ok := rr.(*dns.RRSIG); ok {
				k := h.Name + "/" + dns.TypeToString[s.TypeCovered]
				sigs[k] = append(sigs[k], s)
				continue
			}
			k := h.Name + "/" + dns.TypeToString[h.Rrtype]
			sets[k] = append(sets[k], rr)
		}
		for k, set := range sets {
			if len(sigs[k]) == 0 {
				t.Errorf("%s %s: %s has no RRSIG", q, dns.TypeToString[qtype], k)
			}
			for _, s := range sigs[k] {
				if err := s.Verify(key, set); err != nil {
					t.Errorf("%s %s: %s: %v", q, dns.TypeToString[qtype], k, err)
				}
			}
		}
	}
	var nsecs []*dns.NSEC
	for _, rr := range m.Ns {
		if n, ok := rr.(*dns.NSEC); ok {
			nsecs = append(nsecs, n)
		}
	}
	coveredBy := func(name string) bool {
		return slices.ContainsFunc(nsecs, func(n *dns.NSEC) bool { return covers(n, name) })
	}
	switch {
	case m.Rcode == dns.RcodeNameError:
		if !coveredBy(q) {
			t.Errorf("NXDOMAIN %s: no NSEC covers the name: %v", q, nsecs)
		}
		ce := q
		for !z.Exists(ce) {
			_, ce, _ = strings.Cut(ce, ".")
		}
		if !coveredBy("*." + ce) {
			t.Errorf("NXDOMAIN %s: no NSEC covers the wildcard *.%s: %v", q, ce, nsecs)
		}
	case len(m.Answer) == 0:
		own := slices.IndexFunc(nsecs, func(n *dns.NSEC) bool { return n.Hdr.Name == q })
		switch {
		case own >= 0 && slices.Contains(nsecs[own].TypeBitMap, qtype):
			t.Errorf("NODATA %s %s: its NSEC lists the type", q, dns.TypeToString[qtype])
		case own < 0 && !coveredBy(q):
			t.Errorf("NODATA %s (empty non-terminal): no NSEC covers it: %v", q, nsecs)
		}
	default:
		if m.Answer[0].Header().Rrtype != qtype && qtype != dns.TypeANY {
			t.Errorf("%s %s: answered %v", q, dns.TypeToString[qtype], m.Answer[0])
		}
	}
}

func TestSignedAnswers(t *testing.T) {
	zc, ks, z := signedZone(t, "      - name: a.b.c\n        addresses: [192.0.2.1]\n")
	tb, err := Build([]*zone.Zone{z}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	keys := ks.DNSKEYs(30)
	questions := []struct {
		name  string
		qtype uint16
	}{
		{"_grpc_config.echo.example.test.", dns.TypeTXT},
		{"_GRPC_config.ECHO.example.TEST.", dns.TypeTXT},
		{"echo.example.test.", dns.TypeA},
		{"echo.example.test.", dns.TypeAAAA},
		{"example.test.", dns.TypeDNSKEY},
		{"example.test.", dns.TypeSOA},
		{"example.test.", dns.TypeNS},
		{"example.test.", dns.TypeCDS},
		{"_grpc._tcp.echo.example.test.", dns.TypeSRV},
		{"echo.example.test.", dns.TypeRRSIG},
		{"echo.example.test.", dns.TypeNSEC},
		{"echo.example.test.", dns.TypeANY},
		{"www.example.test.", dns.TypeTXT},     // NODATA
		{"example.test.", dns.TypeMX},          // NODATA at the apex
		{"_tcp.echo.example.test.", dns.TypeA}, // empty non-terminal
		{"b.c.example.test.", dns.TypeTXT},     // empty non-terminal
		{"c.example.test.", dns.TypeA},         // empty non-terminal
		{"nope.example.test.", dns.TypeA},      // NXDOMAIN
		{"_grpc_config.nope.example.test.", dns.TypeTXT},
		{"_grpc_config.www.example.test.", dns.TypeTXT}, // below a name
		{"x.a.b.c.example.test.", dns.TypeA},            // below the deepest name
		{"zzzz.example.test.", dns.TypeA},               // after the last name
		{"0.example.test.", dns.TypeA},                  // before the first
		{"d.c.example.test.", dns.TypeA},                // beside an empty non-terminal
	}
	for _, q := range questions {
		name := strings.ToLower(q.name)
		m, _, _ := exchange(t, tb, ask{name: q.name, qtype: q.qtype, edns: 1232, do: true, tcp: true})
		checkDOAnswer(t, m, name, q.qtype, keys, z)
		plain, _, _ := exchange(t, tb, ask{name: q.name, qtype: q.qtype, edns: 1232, tcp: true})
		for _, rr := range slices.Concat(plain.Answer, plain.Ns) {
			if t := rr.Header().Rrtype; t == dns.TypeRRSIG && q.qtype != dns.TypeRRSIG || t == dns.TypeNSEC && q.qtype != dns.TypeNSEC {
				panic(fmt.Sprintf("%s: a DNSSEC record without DO: %v", name, rr))
			}
		}
		if m.Rcode != plain.Rcode || len(m.Answer) < len(plain.Answer) {
			t.Errorf("%s %s: DO answers rcode %d with %d records, without DO %d with %d", name, dns.TypeToString[q.qtype], m.Rcode, len(m.Answer), plain.Rcode, len(plain.Answer))
		}
	}
	// The answers to DO queries allocate no more than the others.
	msg := query(ask{name: "nope.example.test.", qtype: dns.TypeA, edns: 1232, do: true})
	buf := make([]byte, 0, 65535)
	if n := testing.AllocsPerRun(100, func() { tb.Respond(buf, msg, true) }); n > 0 {
		t.Errorf("a signed NXDOMAIN allocates %.1f times", n)
	}

	// A change signed from the version before, put in the table: the
	// answers still validate, at the new names and their neighbours.
	next := *zc
	next.Services = append(slices.Clone(zc.Services),
		&model.Service{Name: "c.example.test.", TXT: []string{`grpc_config=[{"serviceConfig":{}}]`}, TTL: 30},
		&model.Service{Name: "m.example.test.", Addresses: zc.Services[0].Addresses, TTL: 30})
	next.Services = slices.DeleteFunc(next.Services, func(s *model.Service) bool { return s.Name == "www.example.test." })
	u, ch := zone.Update(z, &next)
	z2, err := zone.Sign(z, u.WithSerial(2), ch, ks, *zc.DNSSEC, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	e := tb.Edit()
	if err := e.SetZone(z2, ch); err != nil {
		t.Fatal(err)
	}
	tb = e.Table()
	for _, q := range slices.Concat(questions, []struct {
		name  string
		qtype uint16
	}{{"_grpc_config.c.example.test.", dns.TypeTXT}, {"m.example.test.", dns.TypeA}, {"www.example.test.", dns.TypeA}, {"l.example.test.", dns.TypeA}}) {
		m, _, _ := exchange(t, tb, ask{name: q.name, qtype: q.qtype, edns: 1232, do: true, tcp: true})
		checkDOAnswer(t, m, strings.ToLower(q.name), q.qtype, keys, z2)
	}
}

// TestSignedZONEMD: a zone with zonemd: true answers ZONEMD queries at
// its apex with the record of the version served, signed, and without
// DO with the record alone; a change serves the new version's.
func TestSignedZONEMD(t *testing.T) {
	text := bytes.Replace(model.Example, []byte("    ttl: 30s\n"), []byte("    ttl: 30s\n    dnssec: {zonemd: true}\n"), 1)
	cfg, ds := model.Parse(text)
	if cfg == nil {
		t.Fatal(ds)
	}
	zc := cfg.Zones[0]
	ks, err := dnssec.Load(t.TempDir(), zc.Origin, dnssec.Options{Algorithm: dns.ECDSAP256SHA256, Generate: true})
	if err != nil {
		t.Fatal(err)
	}
	u, ch := zone.Update(nil, zc)
	z, err := zone.Sign(nil, u.WithSerial(1), ch, ks, *zc.DNSSEC, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	tb, err := Build([]*zone.Zone{z}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	keys := ks.DNSKEYs(30)
	check := func(z *zone.Zone) {
		t.Helper()
		m, _, _ := exchange(t, tb, ask{name: zc.Origin, qtype: dns.TypeZONEMD, edns: 1232, do: true, tcp: true})
		checkDOAnswer(t, m, zc.Origin, dns.TypeZONEMD, keys, z)
		if len(m.Answer) != 2 || m.Answer[0].String() != z.ZONEMD().String() {
			t.Fatalf("ZONEMD with DO: %v, want %v and its RRSIG", m.Answer, z.ZONEMD())
		}
		plain, _, _ := exchange(t, tb, ask{name: zc.Origin, qtype: dns.TypeZONEMD, edns: 1232})
		if len(plain.Answer) != 1 || plain.Answer[0].String() != z.ZONEMD().String() {
			t.Errorf("ZONEMD without DO: %v", plain.Answer)
		}
		// NODATA below the apex.
		m, _, _ = exchange(t, tb, ask{name: "echo." + zc.Origin, qtype: dns.TypeZONEMD, edns: 1232, do: true, tcp: true})
		checkDOAnswer(t, m, "echo."+zc.Origin, dns.TypeZONEMD, keys, z)
		if len(m.Answer) != 0 {
			t.Errorf("ZONEMD below the apex: %v", m.Answer)
		}
	}
	check(z)
	next := *zc
	next.Services = zc.Services[1:]
	u, ch = zone.Update(z, &next)
	z2, err := zone.Sign(z, u.WithSerial(2), ch, ks, *zc.DNSSEC, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if z2.ZONEMD().Serial != 2 || z2.ZONEMD().Digest == z.ZONEMD().Digest {
		t.Fatalf("after a change: %v", z2.ZONEMD())
	}
	e := tb.Edit()
	if err := e.SetZone(z2, ch); err != nil {
		t.Fatal(err)
	}
	tb = e.Table()
	check(z2)
}
