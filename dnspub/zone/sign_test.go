package zone

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/grpc-config-dns/grpc-config-dns/dnspub/dnssec"
	"github.com/grpc-config-dns/grpc-config-dns/model"
)

// signedExample is the built-in example with signing turned on.
func signedExample(extra string) []byte {
	return bytes.Replace(model.Example, []byte("    ttl: 30s\n"), []byte("    ttl: 30s\n    dnssec: {signatureValidity: 14d, signatureRefresh: 7d}\n"+extra), 1)
}

func testKeys(t testing.TB, origin string, split bool) *dnssec.KeySet {
	t.Helper()
	ks, err := dnssec.Load(t.TempDir(), origin, dnssec.Options{Algorithm: dns.ECDSAP256SHA256, SplitKeys: split, Generate: true})
	if err != nil {
		t.Fatal(err)
	}
	return ks
}

// checkSigned validates z as a resolver would: every RRset but the
// signatures is signed by a key of the zone's DNSKEY RRset and valid at
// now, the DNSKEY RRset by a SEP key, and the NSEC records chain every
// name holding records, in canonical order, each listing its name's
// types.
func checkSigned(t *testing.T, z *Zone, now time.Time) {
	t.Helper()
	all := z.AXFR()
	all = all[:len(all)-1]
	slices.SortFunc(all, compareRR)
	keys := map[uint16]*dns.DNSKEY{}
	for _, rr := range all {
		if k, ok := rr.(*dns.DNSKEY); ok {
			keys[k.KeyTag()] = k
		}
	}
	if len(keys) == 0 {
		t.Fatal("no DNSKEY at the apex")
	}
	sigs := map[string][]*dns.RRSIG{}
	sets := map[string][]dns.RR{}
	types := map[string][]uint16{}
	var order []string
	for _, rr := range all {
		h := rr.Header()
		if len(order) == 0 || order[len(order)-1] != h.Name {
			order = append(order, h.Name)
		}
		if sig, ok := rr.(*dns.RRSIG); ok {
			k := fmt.Sprintf("%s/%d", h.Name, sig.TypeCovered)
			sigs[k] = append(sigs[k], sig)
			continue
		}
		k := fmt.Sprintf("%s/%d", h.Name, h.Rrtype)
		sets[k] = append(sets[k], rr)
		types[h.Name] = append(types[h.Name], h.Rrtype)
	}
	for k, set := range sets {
		if len(sigs[k]) == 0 {
			t.Errorf("%s: no RRSIG", k)
		}
		for _, sig := range sigs[k] {
			key := keys[sig.KeyTag]
			if key == nil {
				t.Errorf("%s: signed by key %d, not in the DNSKEY RRset", k, sig.KeyTag)
				continue
			}
			if err := sig.Verify(key, set); err != nil {
				t.Errorf("%s: %v", k, err)
			}
			if !sig.ValidityPeriod(now) {
				t.Errorf("%s: signature not valid now", k)
			}
			if set[0].Header().Rrtype == dns.TypeDNSKEY && key.Flags&dns.SEP == 0 {
				t.Errorf("the DNSKEY RRset is signed by a ZSK")
			}
			if sig.Hdr.Ttl != set[0].Header().Ttl {
				t.Errorf("%s: RRSIG TTL %d, RRset TTL %d", k, sig.Hdr.Ttl, set[0].Header().Ttl)
			}
		}
	}
	for k := range sigs {
		if sets[k] == nil {
			t.Errorf("%s: an RRSIG of no RRset", k)
		}
	}
	if !slices.Equal(order, z.Chain()) {
		t.Errorf("chain %v, names %v", z.Chain(), order)
	}
	for i, name := range order {
		set := sets[fmt.Sprintf("%s/%d", name, dns.TypeNSEC)]
		if len(set) != 1 {
			t.Errorf("%s: %d NSEC records", name, len(set))
			continue
		}
		n := set[0].(*dns.NSEC)
		if want := order[(i+1)%len(order)]; n.NextDomain != want {
			t.Errorf("%s: NSEC next %s, want %s", name, n.NextDomain, want)
		}
		want := append(slices.Clone(types[name]), dns.TypeRRSIG)
		slices.Sort(want)
		if !slices.Equal(n.TypeBitMap, slices.Compact(want)) {
			t.Errorf("%s: NSEC types %v, want %v", name, n.TypeBitMap, want)
		}
	}
}

func TestSignExample(t *testing.T) {
	for _, split := range []bool{false, true} {
		t.Run(fmt.Sprint("split=", split), func(t *testing.T) {
			cfg, ds := model.Parse(signedExample(""))
			if cfg == nil {
				t.Fatal(ds)
			}
			zc := cfg.Zones[0]
			if zc.DNSSEC == nil || zc.DNSSEC.Algorithm != 13 || zc.DNSSEC.Validity != 14*86400 {
				t.Fatalf("dnssec = %+v", zc.DNSSEC)
			}
			keys := testKeys(t, zc.Origin, split)
			now := time.Now()
			z0, ch := Update(nil, zc)
			z, err := Sign(nil, z0.WithSerial(1), ch, keys, *zc.DNSSEC, now)
			if err != nil {
				t.Fatal(err)
			}
			checkSigned(t, z, now)
			if z0.Signed() || !z.Signed() {
				t.Error("Signed")
			}
			var buf bytes.Buffer
			if err := z.WriteMasterFile(&buf, ""); err != nil {
				t.Fatal(err)
			}
			t.Logf("\n%s", buf.String())
		})
	}
}

// TestSignChangesIsScratch changes a signed zone at random, service by
// service, and checks each version signed from the one before against
// the same zone signed from nothing, and that the change's deleted and
// added records turn the one before into it (what IXFR sends).
func TestSignChangesIsScratch(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	cfg, ds := model.Parse(signedExample(""))
	if cfg == nil {
		t.Fatal(ds)
	}
	zc := *cfg.Zones[0]
	keys := testKeys(t, zc.Origin, false)
	now := time.Now()
	z0, ch := Update(nil, &zc)
	prev, err := Sign(nil, z0.WithSerial(1), ch, keys, *zc.DNSSEC, now)
	if err != nil {
		t.Fatal(err)
	}
	names := []string{"a", "b.a", "c.b.a", "x.y", "y", "z.echo", "echo", "www", "m"}
	for round := range 60 {
		next := zc
		next.Services = slices.Clone(zc.Services)
		name := names[rng.IntN(len(names))] + "." + zc.Origin
		i := slices.IndexFunc(next.Services, func(s *model.Service) bool { return s.Name == name })
		switch {
		case i >= 0 && rng.IntN(2) == 0:
			next.Services = slices.Delete(next.Services, i, i+1)
		default:
			s := &model.Service{Name: name, TTL: 30}
			if rng.IntN(3) > 0 {
				s.Addresses = append(s.Addresses, randomService(rng, round).Addresses...)
			}
			if rng.IntN(2) == 0 {
				s.TXT = []string{fmt.Sprintf(`grpc_config=[{"serviceConfig":{"x":%d}}]`, round)}
			}
			if len(s.Addresses) == 0 && s.TXT == nil {
				s.TXT = []string{"grpc_config=[]"}
			}
			if i >= 0 {
				next.Services[i] = s
			} else {
				next.Services = append(next.Services, s)
			}
		}
		if round%7 == 6 {
			now = now.Add(8 * 24 * time.Hour) // every signature due
		}
		u, ch := Update(prev, &next)
		got, err := Sign(prev, u.WithSerial(uint32(round+2)), ch, keys, *zc.DNSSEC, now)
		if err != nil {
			t.Fatal(err)
		}
		checkSigned(t, got, now)
		s0, sch := Update(nil, &next)
		scratch, err := Sign(nil, s0.WithSerial(uint32(round+2)), sch, keys, *zc.DNSSEC, now)
		if err != nil {
			t.Fatal(err)
		}
		if a, b := unsigned(got.Records()), unsigned(scratch.Records()); !slices.Equal(a, b) {
			t.Fatalf("round %d: records differ from scratch:\n%v\n%v", round, a, b)
		}
		// The change applied to the version before is this version.
		applied := map[string]int{}
		for _, rr := range prev.Records() {
			applied[rr.String()]++
		}
		for _, rr := range ch.Deleted {
			if applied[rr.String()]--; applied[rr.String()] < 0 {
				t.Fatalf("round %d: deleted %v, which the version before lacks", round, rr)
			}
		}
		for _, rr := range ch.Added {
			applied[rr.String()]++
		}
		for _, rr := range got.Records() {
			if applied[rr.String()]--; applied[rr.String()] < 0 {
				t.Fatalf("round %d: %v is not in the version before nor added", round, rr)
			}
		}
		for k, v := range applied {
			if v != 0 {
				t.Fatalf("round %d: %s left %d times after the change", round, k, v)
			}
		}
		// Every name whose records differ (signatures included) is among
		// the owners whose answers the table builds again.
		for _, n := range slices.Concat(prev.Names(), got.Names()) {
			a, b := prev.RecordsAt(n), got.RecordsAt(n)
			if n != zc.Origin && !slices.EqualFunc(a, b, func(x, y dns.RR) bool { return x.String() == y.String() }) && !slices.Contains(ch.Owners, n) {
				t.Errorf("round %d: %s changed, not among the owners changed", round, n)
			}
		}
		if got.Len() != len(got.Records()) {
			t.Errorf("round %d: Len %d, %d records", round, got.Len(), len(got.Records()))
		}
		zc, prev = next, got
	}
}

// unsigned is the records as text, RRSIGs left out (each signing makes
// other bytes).
func unsigned(rrs []dns.RR) []string {
	var out []string
	for _, rr := range rrs {
		if rr.Header().Rrtype != dns.TypeRRSIG {
			out = append(out, rr.String())
		}
	}
	return out
}

// TestSignDeterministic: two publishers signing the same zone with the
// same keys within one hour publish the same bytes (ECDSA by RFC 6979,
// times to the hour, jitter from the names), so that secondaries may
// transfer from either.
func TestSignDeterministic(t *testing.T) {
	cfg, ds := model.Parse(signedExample(""))
	if cfg == nil {
		t.Fatal(ds)
	}
	zc := cfg.Zones[0]
	keys := testKeys(t, zc.Origin, true)
	hour := time.Unix(2_000_001_600, 0) // a whole hour
	var texts []string
	for _, at := range []time.Duration{0, 10 * time.Minute, 59 * time.Minute} {
		z, ch := Update(nil, zc)
		signed, err := Sign(nil, z.WithSerial(1), ch, keys, *zc.DNSSEC, hour.Add(at))
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		signed.WriteMasterFile(&b, "")
		texts = append(texts, b.String())
	}
	if texts[0] != texts[1] || texts[1] != texts[2] {
		t.Errorf("signed at other minutes of one hour, the zone differs:\n%s\n%s", texts[0], texts[2])
	}
	z, ch := Update(nil, zc)
	later, _ := Sign(nil, z.WithSerial(1), ch, keys, *zc.DNSSEC, hour.Add(time.Hour))
	var b bytes.Buffer
	later.WriteMasterFile(&b, "")
	if b.String() == texts[0] {
		t.Error("an hour later, the same signatures")
	}
}
