package wire

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/miekg/dns"

	"github.com/grpc-config-dns/grpc-config-dns/dnspub/zone"
	"github.com/grpc-config-dns/grpc-config-dns/model"
)

// randomConfig makes a publisher config of one to three zones with random
// services: nested names (so empty non-terminals), addresses of both
// families, ports (SRV), service configs (TXT, sometimes at the bare host
// too), in-zone and outside nameservers, and various TTLs.
func randomConfig(rng *rand.Rand) string {
	labels := []string{"a", "b", "echo", "svc", "x"}
	var b strings.Builder
	b.WriteString("zones:\n")
	for z := range 1 + rng.IntN(3) {
		fmt.Fprintf(&b, "  - origin: z%d.test.\n    ttl: %d\n    soa: {minimum: %d}\n    nameservers:\n", z, 60+rng.IntN(600), 30+rng.IntN(100))
		nsUsed := map[string]bool{}
		for n := range 1 + rng.IntN(3) {
			if rng.IntN(2) == 0 {
				fmt.Fprintf(&b, "      - ns%d.example.net.\n", n)
				continue
			}
			name := fmt.Sprintf("ns%d", n)
			nsUsed[name] = true
			fmt.Fprintf(&b, "      - {name: %s, addresses: [192.0.2.%d, \"2001:db8::%d\"]}\n", name, 50+n, 50+n)
		}
		b.WriteString("    services:\n")
		b.WriteString("      - {name: \"@\", addresses: [192.0.2.1]}\n")
		used := map[string]bool{}
		for range rng.IntN(8) {
			parts := make([]string, 1+rng.IntN(3))
			for i := range parts {
				parts[i] = labels[rng.IntN(len(labels))]
			}
			name := strings.Join(parts, ".")
			if used[name] || nsUsed[name] {
				continue
			}
			used[name] = true
			fmt.Fprintf(&b, "      - name: %s\n        ttl: %d\n", name, 10+rng.IntN(300))
			var addrs []string
			for i := range rng.IntN(4) {
				if rng.IntN(2) == 0 {
					addrs = append(addrs, fmt.Sprintf("10.%d.0.%d", z, i+1))
				} else {
					addrs = append(addrs, fmt.Sprintf(`"2001:db8:%d::%d"`, z, i+1))
				}
			}
			if len(addrs) > 0 {
				fmt.Fprintf(&b, "        addresses: [%s]\n", strings.Join(addrs, ", "))
				if rng.IntN(2) == 0 {
					fmt.Fprintf(&b, "        port: %d\n", 1+rng.IntN(65535))
				}
			}
			if len(addrs) == 0 || rng.IntN(2) == 0 {
				fmt.Fprintf(&b, "        serviceConfig: {methodConfig: [{name: [{service: s%d}], timeout: %ds}]}\n", rng.IntN(100), 1+rng.IntN(9))
				if rng.IntN(4) == 0 {
					b.WriteString("        compat: {bareHost: true}\n")
				}
			}
		}
	}
	return b.String()
}

// reference answers a question from the records the way RFC 1034 §4.3.2,
// RFC 2308 and RFC 8482 say an authoritative server does, built with
// miekg/dns values and no precomputation: the model Respond must match.
func reference(zones []*zone.Zone, qname string, qtype uint16) *dns.Msg {
	m := new(dns.Msg)
	m.Response = true
	name := strings.ToLower(qname)
	var z *zone.Zone
	for _, c := range zones {
		if dns.IsSubDomain(c.Origin, name) && (z == nil || len(c.Origin) > len(z.Origin)) {
			z = c
		}
	}
	if z == nil {
		m.Rcode = dns.RcodeRefused
		return m
	}
	m.Authoritative = true
	all := z.AXFR()[:z.Len()+1]
	exists := false
	byType := map[uint16][]dns.RR{}
	for _, rr := range all {
		owner := rr.Header().Name
		if owner == name {
			byType[rr.Header().Rrtype] = append(byType[rr.Header().Rrtype], rr)
		}
		if dns.IsSubDomain(name, owner) {
			exists = true // the name, or a descendant: an empty non-terminal
		}
	}
	negative := func() {
		soa := *z.SOA
		soa.Hdr.Ttl = min(soa.Hdr.Ttl, soa.Minttl)
		m.Ns = []dns.RR{&soa}
	}
	if !exists {
		m.Rcode = dns.RcodeNameError
		negative()
		return m
	}
	if qtype == dns.TypeANY {
		types := slices.Sorted(func(yield func(uint16) bool) {
			for t := range byType {
				if !yield(t) {
					return
				}
			}
		})
		if len(types) == 0 {
			negative()
			return m
		}
		m.Answer = byType[types[0]]
		return m
	}
	m.Answer = byType[qtype]
	if len(m.Answer) == 0 {
		negative()
		return m
	}
	for _, rr := range m.Answer {
		if host, ok := glueFor(rr); ok {
			for _, t := range []uint16{dns.TypeA, dns.TypeAAAA} {
				for _, a := range all {
					if a.Header().Name == host && a.Header().Rrtype == t {
						m.Extra = append(m.Extra, a)
					}
				}
			}
		}
	}
	return m
}

// glueFor is the host whose addresses an answer record brings into the
// additional section, written here from the RFCs rather than taken from
// package zone, whose rule (zone.AdditionalTarget) is what is checked: an
// NS record's host (RFC 1034 §4.3.2 step 6, RFC 1035 §3.3.11), an MX
// record's exchange (RFC 1035 §3.3.9) and an SRV record's target (RFC 2782,
// "Usage rules"). Every other type brings nothing.
func glueFor(rr dns.RR) (string, bool) {
	switch rr.Header().Rrtype {
	case dns.TypeNS:
		return rr.(*dns.NS).Ns, true
	case dns.TypeMX:
		return rr.(*dns.MX).Mx, true
	case dns.TypeSRV:
		return rr.(*dns.SRV).Target, true
	}
	return "", false
}

func section(rrs []dns.RR) string {
	var out []string
	for _, rr := range rrs {
		if rr.Header().Rrtype == dns.TypeOPT {
			continue
		}
		s := rr.String()
		if rr.Header().Rrtype != dns.TypeTXT {
			// Names compressed against the question take its case (a
			// SOA's MNAME, an NS host): equal names, per RFC 4343.
			s = strings.ToLower(s)
		} else {
			s = strings.ToLower(rr.Header().Name) + strings.TrimPrefix(s, rr.Header().Name)
		}
		out = append(out, s)
	}
	slices.Sort(out)
	return strings.Join(out, "\n")
}

// TestRespondMatchesReference: for every name and type in random zones
// (and names around them), Respond answers exactly as the reference
// model built from the same records: rcode, AA, and each section with
// names, TTLs and data (compression and record order aside).
func TestRespondMatchesReference(t *testing.T) {
	types := []uint16{dns.TypeA, dns.TypeAAAA, dns.TypeTXT, dns.TypeNS, dns.TypeSOA, dns.TypeSRV, dns.TypeMX, dns.TypeCNAME, dns.TypePTR, dns.TypeANY}
	checked := 0
	seeds := uint64(120)
	if raceEnabled {
		seeds = 15
	}
	for seed := range seeds {
		rng := rand.New(rand.NewPCG(seed, 7))
		text := randomConfig(rng)
		cfg, ds := model.Parse([]byte(text))
		if cfg == nil {
			t.Fatalf("seed %d: the generator made an invalid config: %v\n%s", seed, ds, text)
		}
		var zs []*zone.Zone
		for i, zc := range cfg.Zones {
			zs = append(zs, zone.New(zc, uint32(1000+i)))
		}
		// Odd seeds build with their nodes compacted, as large zones are.
		e := mustNew(t).Edit()
		e.compactAbove = []int{defaultCompactAbove, 1}[seed%2]
		for _, z := range zs {
			if err := e.SetZone(z, nil); err != nil {
				t.Fatalf("seed %d: %v", seed, err)
			}
		}
		tb := e.Table()
		names := map[string]bool{"example.org.": true, "test.": true, ".": true}
		for _, z := range zs {
			names["nope."+z.Origin] = true
			for _, rr := range z.AXFR() {
				n := rr.Header().Name
				names[n] = true
				names["child."+n] = true
				for p, ok := parent(n); ok; p, ok = parent(p) {
					names[p] = true
				}
			}
		}
		for name := range names {
			// Ask in mixed case: the answer echoes it, the lookup ignores it.
			asked := []byte(name)
			for i := range asked {
				if rng.IntN(2) == 0 {
					asked[i] = strings.ToUpper(string(asked[i]))[0]
				}
			}
			for _, qtype := range types {
				q := new(dns.Msg)
				q.SetQuestion(string(asked), qtype)
				raw, _ := q.Pack()
				resp, _ := tb.Respond(make([]byte, 0, 65535), raw, true)
				got := new(dns.Msg)
				if err := got.Unpack(resp); err != nil {
					t.Fatalf("seed %d: %s %s: %v", seed, asked, dns.TypeToString[qtype], err)
				}
				want := reference(zs, name, qtype)
				if got.Rcode != want.Rcode || got.Authoritative != want.Authoritative || got.Truncated ||
					section(got.Answer) != section(want.Answer) || section(got.Ns) != section(want.Ns) || section(got.Extra) != section(want.Extra) {
					t.Fatalf("seed %d: %s %s:\ngot:\n%v\nwant:\n%v\nconfig:\n%s", seed, asked, dns.TypeToString[qtype], got, want, text)
				}
				checked++
			}
		}
	}
	t.Logf("%d questions checked", checked)
}

func parent(name string) (string, bool) {
	off, end := dns.NextLabel(name, 0)
	if end {
		return "", false
	}
	return name[off:], true
}

// The zones are found in Table.few when they are few, else in the map:
// both ways give the same answers, and the zone that gave them.
func TestZoneListAndMapAgree(t *testing.T) {
	many := "zones:\n"
	for z := range maxFewZones + 2 {
		many += fmt.Sprintf("  - {origin: z%d.test., nameservers: [{name: ns1, addresses: [192.0.2.1]}], services: [{name: a.b, addresses: [192.0.2.2]}]}\n", z)
	}
	texts := []string{many}
	for seed := range uint64(10) {
		texts = append(texts, randomConfig(rand.New(rand.NewPCG(seed, 9))))
	}
	for i, text := range texts {
		cfg, ds := model.Parse([]byte(text))
		if cfg == nil {
			t.Fatalf("config %d: %v", i, ds)
		}
		var zs []*zone.Zone
		for j, zc := range cfg.Zones {
			zs = append(zs, zone.New(zc, uint32(1000+j)))
		}
		tb, err := Build(zs, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if (tb.few != nil) != (len(zs) <= maxFewZones) {
			t.Fatalf("config %d: %d zones, list %v", i, len(zs), tb.few)
		}
		other := *tb // the same table, finding zones the other way
		if tb.few == nil {
			other.few = []zoneRef{}
			for key, zi := range tb.zones {
				other.few = append(other.few, zoneRef{key, zi})
			}
		} else {
			other.few = nil
		}
		names := []string{"example.org.", "test."}
		for _, z := range zs {
			names = append(names, "nope."+z.Origin, "a.nope."+z.Origin)
			for _, rr := range z.AXFR() {
				names = append(names, rr.Header().Name)
			}
		}
		for _, name := range names {
			for _, qtype := range []uint16{dns.TypeA, dns.TypeSOA, dns.TypeMX} {
				q := new(dns.Msg)
				q.SetQuestion(name, qtype)
				raw, _ := q.Pack()
				a, ra := tb.Respond(nil, raw, false)
				b, rb := other.Respond(nil, raw, false)
				if string(a) != string(b) || ra != rb {
					t.Fatalf("config %d, %s %s: the list and the map disagree: %+v / %+v", i, name, dns.TypeToString[qtype], ra, rb)
				}
				if ra.Rcode != RcodeRefused && (ra.Zone == "" || !dns.IsSubDomain(ra.Zone, name)) {
					t.Errorf("config %d, %s: answered by zone %q", i, name, ra.Zone)
				}
			}
		}
	}
}
