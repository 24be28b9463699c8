package wire

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/miekg/dns"

	"github.com/grpc-config-dns/grpc-config-dns/dnspub/zone"
	"github.com/grpc-config-dns/grpc-config-dns/model"
	sc "github.com/grpc-config-dns/grpc-config-dns/serviceconfig"
)

// BenchmarkBuildTable builds the same table from its zone: what a start
// does without a table to read, given the change of the zone.Update that
// built it (made: its names are not looked up) or not (zone).
func BenchmarkBuildTable(b *testing.B) {
	z, ch := fleetZone(b, 10000)
	for _, from := range []string{"made", "zone"} {
		b.Run("from="+from, func(b *testing.B) {
			b.ReportAllocs()
			made := ch
			if from == "zone" {
				made = nil
			}
			for b.Loop() {
				t, _ := New(Options{})
				e := t.Edit()
				if err := e.SetZone(z, made); err != nil {
					b.Fatal(err)
				}
				e.Table()
			}
		})
	}
}

// fleetZone is a zone of n services like bench/fleetgen's: an address and
// a method config with a timeout and a retry policy each.
func fleetZone(t testing.TB, n int) (*zone.Zone, *zone.Change) {
	t.Helper()
	z, ch := zone.Update(nil, fleetConfig(t, n, -1).Zones[0])
	return z.WithSerial(1), ch
}

// fleetConfig is the config of a fleet of n services, service changed's
// timeout 2s instead of 1s (none when negative).
func fleetConfig(t testing.TB, n, changed int) *model.Config {
	t.Helper()
	var b bytes.Buffer
	b.WriteString("zones:\n  - origin: fleet.test.\n    nameservers: [ns1.example.net.]\n    services:\n")
	for i := range n {
		timeout := 1
		if i == changed {
			timeout = 2
		}
		fmt.Fprintf(&b, "      - name: svc%d\n        addresses: [10.%d.%d.%d]\n        serviceConfig: {methodConfig: [{name: [{service: fleet.v1.Service%d}], timeout: %ds, retryPolicy: {maxAttempts: 3, initialBackoff: 0.1s, maxBackoff: 1s, backoffMultiplier: 2, retryableStatusCodes: [UNAVAILABLE]}}]}\n",
			i, i>>16, i>>8&0xff, i&0xff, i, timeout)
	}
	cfg, ds := model.Parse(b.Bytes())
	if cfg == nil {
		t.Fatal(ds)
	}
	return cfg
}

// A zone's answers built whole (each unit's records made once, cut at
// their owners: zone.EachName) are the answers built name by name from
// RecordsAt, byte for byte, for every question: on random zones, and on a
// fleet large enough to be built by several workers.
func TestWholeBuildEqualsNameByName(t *testing.T) {
	seeds := uint64(40)
	if raceEnabled {
		seeds = 6
	}
	checked := 0
	for seed := range seeds {
		rng := rand.New(rand.NewPCG(seed, 13))
		cfg, ds := model.Parse([]byte(randomConfig(rng)))
		if cfg == nil {
			t.Fatalf("seed %d: %v", seed, ds)
		}
		var zs []*zone.Zone
		var chs []*zone.Change
		for i, zc := range cfg.Zones {
			z, ch := zone.Update(nil, zc)
			zs, chs = append(zs, z.WithSerial(uint32(1000+i))), append(chs, ch)
		}
		// Odd seeds build with their nodes compacted, as large zones are.
		checked += sameBuilds(t, zs, chs, []int{defaultCompactAbove, 1}[seed%2])
	}
	fleet, ch := fleetZone(t, 600)
	checked += sameBuilds(t, []*zone.Zone{fleet}, []*zone.Change{ch}, defaultCompactAbove)
	t.Logf("%d questions checked", checked)
}

// sameBuilds fails t unless the tables of zs built whole (without and
// with chs, the changes that built zs from nothing) and name by name give
// the same answers, each compacting its nodes past compactAbove names,
// and returns how many questions it asked.
func sameBuilds(t *testing.T, zs []*zone.Zone, chs []*zone.Change, compactAbove int) (checked int) {
	t.Helper()
	types := []uint16{dns.TypeA, dns.TypeAAAA, dns.TypeTXT, dns.TypeNS, dns.TypeSOA, dns.TypeSRV, dns.TypeMX, dns.TypeANY}
	whole, _ := New(Options{})
	made, _ := New(Options{})
	byName, _ := New(Options{})
	we, me, be := whole.Edit(), made.Edit(), byName.Edit()
	we.compactAbove, me.compactAbove, be.compactAbove = compactAbove, compactAbove, compactAbove
	for i, z := range zs {
		if !chs[i].FromNothing() {
			t.Fatalf("the change of zone %s does not build it from nothing", z.Origin)
		}
		if err := we.SetZone(z, nil); err != nil {
			t.Fatal(err)
		}
		if err := me.SetZone(z, chs[i]); err != nil {
			t.Fatal(err)
		}
		if err := be.SetZone(z, &zone.Change{Owners: z.Names()}); err != nil {
			t.Fatal(err)
		}
	}
	whole, made, byName = we.Table(), me.Table(), be.Table()
	if whole.nodes.Len() != byName.nodes.Len() || made.nodes.Len() != byName.nodes.Len() {
		t.Fatalf("%d names built whole, %d with the change that built the zone, %d name by name", whole.nodes.Len(), made.nodes.Len(), byName.nodes.Len())
	}
	names := map[string]bool{}
	for _, z := range zs {
		for _, n := range z.Names() {
			names[n] = true
			names["child."+n] = true
		}
	}
	for name := range names {
		for _, qtype := range types {
			for _, a := range []ask{{name: name, qtype: qtype}, {name: name, qtype: qtype, tcp: true, edns: 4096}} {
				msg := query(a)
				want, wr := byName.Respond(make([]byte, 0, 65535), msg, a.tcp)
				have, hr := whole.Respond(make([]byte, 0, 65535), msg, a.tcp)
				if !bytes.Equal(want, have) || wr != hr {
					t.Fatalf("%s %s: built whole, the answer is\n% x\nnot\n% x", name, dns.TypeToString[qtype], have, want)
				}
				have, hr = made.Respond(make([]byte, 0, 65535), msg, a.tcp)
				if !bytes.Equal(want, have) || wr != hr {
					t.Fatalf("%s %s: built with the change that built the zone, the answer is\n% x\nnot\n% x", name, dns.TypeToString[qtype], have, want)
				}
				checked++
			}
		}
	}
	return checked
}

// packPlain writes the bytes packMsg (miekg/dns) writes, for every RRset it
// takes: those of random zones, a fleet, and random A, AAAA and TXT sets
// (TXT text with every byte value, escaped as the zone escapes it, and
// hand-written escapes it must either read as miekg does or decline).
func TestPackPlainEqualsPack(t *testing.T) {
	plain, total := 0, 0
	check := func(name string, qtype uint16, set []dns.RR) {
		t.Helper()
		total++
		got, ok := packPlain(name, qtype, set)
		if !ok {
			return
		}
		plain++
		want, err := packMsg(name, qtype, set, nil)
		if err != nil {
			t.Fatalf("%s %s: packPlain packed what miekg/dns refuses: %v", name, dns.TypeToString[qtype], err)
		}
		if got != want {
			t.Fatalf("%s %s %v:\npackPlain % x\nmiekg/dns % x", name, dns.TypeToString[qtype], set, got.full, want.full)
		}
	}
	eachSet := func(z *zone.Zone) {
		z.EachName(1, nil, func(_ int, name string, rrs []dns.RR) {
			for i := 0; i < len(rrs); {
				j := i
				for j < len(rrs) && rrs[j].Header().Rrtype == rrs[i].Header().Rrtype {
					j++
				}
				check(name, rrs[i].Header().Rrtype, rrs[i:j:j])
				i = j
			}
		})
	}
	for seed := range uint64(30) {
		cfg, ds := model.Parse([]byte(randomConfig(rand.New(rand.NewPCG(seed, 17)))))
		if cfg == nil {
			t.Fatal(ds)
		}
		for i, zc := range cfg.Zones {
			eachSet(zone.New(zc, uint32(i+1)))
		}
	}
	fleet, _ := fleetZone(t, 50)
	eachSet(fleet)
	rng := rand.New(rand.NewPCG(5, 5))
	hdr := func(name string, typ uint16) dns.RR_Header {
		return dns.RR_Header{Name: name, Rrtype: typ, Class: dns.ClassINET, Ttl: rng.Uint32()}
	}
	escapes := []string{`\"`, `\\`, `\065`, `\255`, `\256`, `\6`, `\65x`, `\`, `\a`, `\0001`}
	for range 3000 {
		name := []string{"a.example.", "_grpc_config.svc.example.", "x.y.z.example."}[rng.IntN(3)]
		var set []dns.RR
		switch typ := []uint16{dns.TypeA, dns.TypeAAAA, dns.TypeTXT}[rng.IntN(3)]; typ {
		case dns.TypeA:
			for range 1 + rng.IntN(4) {
				set = append(set, &dns.A{Hdr: hdr(name, typ), A: []byte{byte(rng.IntN(256)), byte(rng.IntN(256)), 0, 1}})
			}
		case dns.TypeAAAA:
			for range 1 + rng.IntN(4) {
				ip := make([]byte, 16)
				for i := range ip {
					ip[i] = byte(rng.IntN(256))
				}
				set = append(set, &dns.AAAA{Hdr: hdr(name, typ), AAAA: ip})
			}
		case dns.TypeTXT:
			for range 1 + rng.IntN(2) {
				var strs []string
				for range rng.IntN(4) {
					raw := make([]byte, rng.IntN(300))
					for i := range raw {
						raw[i] = byte(rng.IntN(256))
					}
					s := sc.EscapeTXTString(string(raw))
					if rng.IntN(4) == 0 {
						s += escapes[rng.IntN(len(escapes))]
					}
					strs = append(strs, s)
				}
				set = append(set, &dns.TXT{Hdr: hdr(name, typ), Txt: strs})
			}
		}
		check(name, set[0].Header().Rrtype, set)
	}
	t.Logf("%d of %d sets packed by packPlain", plain, total)
	if plain*2 < total {
		t.Errorf("only %d of %d sets packed by packPlain", plain, total)
	}
}

// FuzzPackPlain: whatever TXT text packPlain packs, it packs as miekg/dns
// does (appendTXTString reads escapes).
func FuzzPackPlain(f *testing.F) {
	for _, s := range []string{``, `a`, `\"x\"`, `\\`, `\065\255`, `\256`, `\6`, `\65x`, `\`, `\a`, sc.EscapeTXTString("grpc_config=[{\"x\":1}]\x00\xff")} {
		f.Add(s, s, uint32(300))
	}
	f.Fuzz(func(t *testing.T, a, b string, ttl uint32) {
		set := []dns.RR{&dns.TXT{Hdr: dns.RR_Header{Name: "_grpc_config.s.example.", Rrtype: dns.TypeTXT, Class: dns.ClassINET, Ttl: ttl}, Txt: []string{a, b}}}
		got, ok := packPlain("_grpc_config.s.example.", dns.TypeTXT, set)
		if !ok {
			return
		}
		want, err := packMsg("_grpc_config.s.example.", dns.TypeTXT, set, nil)
		if err != nil || got != want {
			t.Fatalf("%q %q: packPlain % x, miekg/dns % x (%v)", a, b, got.full, want.full, err)
		}
	})
}
