package zone

import (
	"bytes"
	"crypto/sha512"
	"encoding/hex"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/grpc-config-dns/grpc-config-dns/model"
)

// parseZone reads a master file.
func parseZone(t testing.TB, origin, text string) []dns.RR {
	t.Helper()
	var out []dns.RR
	zp := dns.NewZoneParser(strings.NewReader(text), origin, "")
	for rr, ok := zp.Next(); ok; rr, ok = zp.Next() {
		out = append(out, rr)
	}
	if err := zp.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestDigestRFC8976 computes the digest of the zone of RFC 8976's
// Appendix A.1 ("Simple EXAMPLE Zone"), in any order, with the ZONEMD
// record the example publishes or another, and with a duplicate record.
func TestDigestRFC8976(t *testing.T) {
	const want = "c68090d90a7aed716bc459f9340e3d7c1370d4d24b7e2fc3a1ddc0b9a87153b9a9713b3c9ae5cc27777f98b8e730044c"
	const text = `
example.      86400  IN  SOA     ns1 admin 2018031900 1800 900 604800 86400
              86400  IN  NS      ns1
              86400  IN  NS      ns2
              86400  IN  ZONEMD  2018031900 1 1 ( c68090d90a7aed716bc459f9340e3d7c1370d4d24b7e2fc3
                                                  a1ddc0b9a87153b9a9713b3c9ae5cc27777f98b8e730044c )
ns1           3600   IN  A       203.0.113.63
ns2           3600   IN  AAAA    2001:db8::63
`
	rrs := parseZone(t, "example.", text)
	for _, c := range []struct {
		name string
		rrs  []dns.RR
	}{
		{"as written", rrs},
		{"reversed", reversed(rrs)},
		{"placeholder", append(slices.Clone(rrs[:3]), append([]dns.RR{&dns.ZONEMD{Hdr: dns.RR_Header{Name: "example.", Rrtype: dns.TypeZONEMD, Class: dns.ClassINET, Ttl: 86400}, Serial: 2018031900, Scheme: 1, Hash: 1, Digest: strings.Repeat("00", 48)}}, rrs[4:]...)...)},
		{"no ZONEMD", slices.Concat(rrs[:3], rrs[4:])},
		{"a duplicate, mixed case", append(slices.Clone(rrs), parseZone(t, "example.", "NS1.Example. 3600 IN A 203.0.113.63\n")...)},
	} {
		got, err := digestRecords("example.", c.rrs)
		if err != nil {
			t.Fatal(err)
		}
		if hex.EncodeToString(got) != want {
			t.Errorf("%s: digest %x, want %s", c.name, got, want)
		}
	}
	// Another record changes it.
	got, _ := digestRecords("example.", append(slices.Clone(rrs), parseZone(t, "example.", "ns3.example. 3600 IN A 203.0.113.64\n")...))
	if hex.EncodeToString(got) == want {
		t.Error("a record added, the same digest")
	}
}

func reversed(rrs []dns.RR) []dns.RR {
	out := slices.Clone(rrs)
	slices.Reverse(out)
	return out
}

// recomputeZONEMD is the digest of a zone's transfer by RFC 8976, made
// here apart from the publisher's code: every record but the apex's
// ZONEMD and its RRSIGs, lower-cased and packed by miekg/dns, sorted by
// owner (label by label from the right), type and RDATA, duplicates
// left out, hashed with SHA-384.
func recomputeZONEMD(t *testing.T, origin string, axfr []dns.RR) []byte {
	t.Helper()
	type rec struct {
		labels []string
		typ    uint16
		rdata  []byte
		wire   []byte
	}
	var recs []rec
	for _, rr := range axfr[:len(axfr)-1] { // the SOA ends it again
		h := rr.Header()
		if strings.EqualFold(h.Name, origin) {
			if h.Rrtype == dns.TypeZONEMD {
				continue
			}
			if s, ok := rr.(*dns.RRSIG); ok && s.TypeCovered == dns.TypeZONEMD {
				continue
			}
		}
		c := dns.Copy(rr)
		c.Header().Name = strings.ToLower(h.Name)
		buf := make([]byte, dns.Len(c)+64)
		n, err := dns.PackRR(c, buf, 0, nil, false)
		if err != nil {
			t.Fatal(err)
		}
		off := 0
		for buf[off] != 0 {
			off += int(buf[off]) + 1
		}
		labels := dns.SplitDomainName(c.Header().Name)
		slices.Reverse(labels)
		recs = append(recs, rec{labels: labels, typ: h.Rrtype, rdata: buf[off+11 : n], wire: buf[:n]})
	}
	slices.SortFunc(recs, func(a, b rec) int {
		for i := 0; i < len(a.labels) && i < len(b.labels); i++ {
			if c := strings.Compare(a.labels[i], b.labels[i]); c != 0 {
				return c
			}
		}
		if c := len(a.labels) - len(b.labels); c != 0 {
			return c
		}
		if c := int(a.typ) - int(b.typ); c != 0 {
			return c
		}
		return bytes.Compare(a.rdata, b.rdata)
	})
	h := sha512.New384()
	for i, r := range recs {
		if i > 0 && slices.Equal(recs[i-1].labels, r.labels) && recs[i-1].typ == r.typ && bytes.Equal(recs[i-1].rdata, r.rdata) {
			continue
		}
		h.Write(r.wire)
	}
	return h.Sum(nil)
}

// checkZONEMD checks that z carries one ZONEMD record, of its serial, whose
// digest is its transfer's, signed, and listed in the apex's NSEC.
func checkZONEMD(t *testing.T, z *Zone) {
	t.Helper()
	axfr := z.AXFR()
	var mds []*dns.ZONEMD
	sigs := 0
	for _, rr := range axfr {
		if md, ok := rr.(*dns.ZONEMD); ok {
			mds = append(mds, md)
		}
		if s, ok := rr.(*dns.RRSIG); ok && s.TypeCovered == dns.TypeZONEMD {
			sigs++
		}
		if n, ok := rr.(*dns.NSEC); ok && n.Hdr.Name == z.Origin && !slices.Contains(n.TypeBitMap, dns.TypeZONEMD) {
			t.Errorf("the apex's NSEC lists %v, not ZONEMD", n.TypeBitMap)
		}
	}
	if len(mds) != 1 || sigs == 0 {
		t.Fatalf("%d ZONEMD records, %d RRSIGs of them", len(mds), sigs)
	}
	md := mds[0]
	if md.Serial != z.Serial() || md.Scheme != 1 || md.Hash != 1 || md.Hdr.Name != z.Origin {
		t.Errorf("ZONEMD %v, serial %d", md, z.Serial())
	}
	if want := hex.EncodeToString(recomputeZONEMD(t, z.Origin, axfr)); md.Digest != want {
		t.Errorf("serial %d: ZONEMD digest %s, recomputed from the transfer %s", z.Serial(), md.Digest, want)
	}
	if got := z.ZONEMD(); got == nil || got.Digest != md.Digest {
		t.Errorf("ZONEMD() = %v", got)
	}
}

// TestZONEMDAfterChanges signs the example with zonemd: true and changes
// it service by service (a changed record, a name gone, a name come, a
// refresh of every signature): each version's ZONEMD is the digest of
// its transfer, recomputed from scratch, and the change carries the old
// ZONEMD out and the new one in, as IXFR sends it.
func TestZONEMDAfterChanges(t *testing.T) {
	for _, split := range []bool{false, true} {
		t.Run(fmt.Sprint("split=", split), func(t *testing.T) {
			cfg, ds := model.Parse(bytes.Replace(signedExample(""), []byte("signatureRefresh: 7d}"), []byte("signatureRefresh: 7d, zonemd: true}"), 1))
			if cfg == nil {
				t.Fatal(ds)
			}
			zc := *cfg.Zones[0]
			if !zc.DNSSEC.ZONEMD {
				t.Fatal("zonemd: true not read")
			}
			keys := testKeys(t, zc.Origin, split)
			now := time.Now()
			z0, ch := Update(nil, &zc)
			prev, err := Sign(nil, z0.WithSerial(1), ch, keys, *zc.DNSSEC, now)
			if err != nil {
				t.Fatal(err)
			}
			checkSigned(t, prev, now)
			checkZONEMD(t, prev)
			edits := []func(s []*model.Service) []*model.Service{
				func(s []*model.Service) []*model.Service { // a changed service
					c := *s[0]
					c.TTL++
					s[0] = &c
					return s
				},
				func(s []*model.Service) []*model.Service { return s[1:] }, // a name gone
				func(s []*model.Service) []*model.Service { // a name come
					return append(s, &model.Service{Name: "new." + zc.Origin, TTL: 30, TXT: []string{"grpc_config=[]"}})
				},
				func(s []*model.Service) []*model.Service { return s }, // the same, every signature due
				func(s []*model.Service) []*model.Service {
					// A name of two units (the nameserver's, with its glue
					// again), addresses out of order, SRV and TXT at the host.
					return append(s, &model.Service{Name: "ns1." + zc.Origin, TTL: 30, Port: 443,
						Addresses: []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("192.0.2.20"), netip.MustParseAddr("2001:db8::1"), netip.MustParseAddr("192.0.2.3")},
						TXT:       []string{"grpc_config=[]"}, Compat: model.Compat{BareHost: true}})
				},
			}
			for i, edit := range edits {
				next := zc
				next.Services = edit(slices.Clone(zc.Services))
				if i == 3 {
					now = now.Add(8 * 24 * time.Hour)
				}
				u, ch := Update(prev, &next)
				got, err := Sign(prev, u.WithSerial(uint32(i+2)), ch, keys, *zc.DNSSEC, now)
				if err != nil {
					t.Fatal(err)
				}
				checkSigned(t, got, now)
				checkZONEMD(t, got)
				if prev.ZONEMD().Digest == got.ZONEMD().Digest {
					t.Errorf("edit %d: the same digest as the version before", i)
				}
				in := func(list []dns.RR, md *dns.ZONEMD) bool {
					return slices.ContainsFunc(list, func(rr dns.RR) bool { return rr.String() == md.String() })
				}
				if !in(ch.Deleted, prev.ZONEMD()) || !in(ch.Added, got.ZONEMD()) {
					t.Errorf("edit %d: the change does not replace the ZONEMD record", i)
				}
				if got.Len() != len(got.Records()) {
					t.Errorf("edit %d: Len %d, %d records", i, got.Len(), len(got.Records()))
				}
				zc, prev = next, got
			}
			// Turned off: no ZONEMD, nor in the NSEC.
			off := *zc.DNSSEC
			off.ZONEMD = false
			next := zc
			next.DNSSEC = &off
			u, ch := Update(prev, &next)
			got, err := Sign(prev, u.WithSerial(10), ch, keys, off, now)
			if err != nil {
				t.Fatal(err)
			}
			checkSigned(t, got, now)
			for _, rr := range got.AXFR() {
				if rr.Header().Rrtype == dns.TypeZONEMD {
					t.Errorf("zonemd: false, and %v", rr)
				}
				if n, ok := rr.(*dns.NSEC); ok && slices.Contains(n.TypeBitMap, dns.TypeZONEMD) {
					t.Errorf("zonemd: false, and %v", rr)
				}
			}
			if got.ZONEMD() != nil {
				t.Error("ZONEMD() with zonemd: false")
			}
		})
	}
}

// TestCanonicalServiceIsRecords holds addService to the records
// serviceRecords makes, packed.
func TestCanonicalServiceIsRecords(t *testing.T) {
	cfg, ds := model.Parse(signedExample(""))
	if cfg == nil {
		t.Fatal(ds)
	}
	var c, want canonicalName
	for _, s := range cfg.Zones[0].Services {
		records := serviceRecords(s)
		for _, name := range owners(records) {
			c.reset(name)
			c.addService(s, name)
			want.reset(name)
			for _, rr := range records {
				if rr.Header().Name == name {
					if err := want.addRR(rr); err != nil {
						t.Fatal(err)
					}
				}
			}
			if a, b := c.appendTo(nil, false), want.appendTo(nil, false); !bytes.Equal(a, b) {
				t.Errorf("%s at %s:\n%x\n%x", s.Name, name, a, b)
			}
		}
	}
}

// TestZONEMDBlocks: a zone of 2 000 services, its chain hashed by blocks
// written by several workers, has the digest of its records computed
// one name after the other (digestRecords), and of its transfer.
func TestZONEMDBlocks(t *testing.T) {
	var text bytes.Buffer
	text.WriteString("zones:\n  - origin: fleet.test.\n    dnssec: {zonemd: true}\n    nameservers: [ns1.example.net.]\n    services:\n")
	for i := range 2000 {
		fmt.Fprintf(&text, "      - name: svc%d\n        addresses: [10.0.%d.%d]\n        serviceConfig: {methodConfig: [{name: [{service: s%d.S}], timeout: 1s}]}\n", i, i>>8, i&0xff, i)
	}
	cfg, ds := model.Parse(text.Bytes())
	if cfg == nil {
		t.Fatal(ds)
	}
	zc := cfg.Zones[0]
	u, ch := Update(nil, zc)
	z, err := Sign(nil, u.WithSerial(7), ch, testKeys(t, zc.Origin, false), *zc.DNSSEC, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if len(z.Chain()) < 4*256 {
		t.Fatalf("%d names: one block", len(z.Chain()))
	}
	checkZONEMD(t, z)
	all := z.AXFR()
	want, err := digestRecords(zc.Origin, all[:len(all)-1])
	if err != nil {
		t.Fatal(err)
	}
	if got := z.ZONEMD().Digest; got != hex.EncodeToString(want) {
		t.Errorf("digest %s, by digestRecords %x", got, want)
	}
}

// digestRecords returns the SHA-384 digest by RFC 8976's SIMPLE scheme
// (§3.3) of the zone of apex origin whose records are rrs, in any order:
// every record in canonical form and order, once, but the apex's ZONEMD
// records and the RRSIGs covering them.
func digestRecords(origin string, rrs []dns.RR) ([]byte, error) {
	origin = dns.CanonicalName(origin)
	at := map[string][]dns.RR{}
	for _, rr := range rrs {
		name := dns.CanonicalName(rr.Header().Name)
		at[name] = append(at[name], rr)
	}
	names := make([]string, 0, len(at))
	for name := range at {
		names = append(names, name)
	}
	sortCanonical(names)
	h := sha512.New384()
	var c canonicalName
	var out []byte
	for _, name := range names {
		c.reset(name)
		for _, rr := range at[name] {
			if err := c.addRR(rr); err != nil {
				return nil, err
			}
		}
		out = c.appendTo(out[:0], name == origin)
		h.Write(out)
	}
	return h.Sum(nil), nil
}
