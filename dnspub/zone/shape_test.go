package zone

import (
	"math/rand/v2"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/miekg/dns"

	"github.com/grpc-config-dns/grpc-config-dns/model"
)

// serviceShape is what the records serviceRecords makes give: the same
// digest sum (the bytes dns.PackRR writes), size (as dns.Len counts),
// number, owner names and SRV target, for random services: names of
// every length, IPv4, IPv6 and IPv4-mapped addresses, ports, TXT strings
// of every byte value and length up to 255 (quotes and backslashes
// among them), empty TXT lists, bare-host copies, any TTL. Services it
// declines are those it should: escapes, names too long, duplicate or
// invalid addresses, strings over 255 bytes.
func TestServiceShapeIsRecords(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 9))
	shaped, declined := 0, 0
	for round := range 4000 {
		s := randomService(rng, round)
		var buf []byte
		sh, ok := serviceShape(s, &buf)
		if !ok {
			declined++
			continue
		}
		shaped++
		records := serviceRecords(s)
		sum, packed := hashRecords(records, nil)
		if !packed {
			t.Fatalf("%+v: shaped, but a record does not pack", s)
		}
		if sh.sum != sum || sh.size != size(records) || sh.count != len(records) {
			t.Fatalf("%+v:\nshape sum %x size %d count %d\nrecords sum %x size %d count %d", s, sh.sum, sh.size, sh.count, sum, size(records), len(records))
		}
		names := slices.Clone(sh.names[:sh.nnames])
		slices.Sort(names)
		want := owners(records)
		slices.Sort(want)
		if !slices.Equal(names, want) {
			t.Fatalf("%+v: owners %v, records' %v", s, names, want)
		}
		var target, srvOwner string
		for _, rr := range records {
			if host, ok := AdditionalTarget(rr); ok {
				target, srvOwner = host, rr.Header().Name
			}
		}
		if sh.target != target || target != "" && sh.names[sh.srv] != srvOwner {
			t.Fatalf("%+v: target %q at %q, records' %q at %q", s, sh.target, sh.names[sh.srv], target, srvOwner)
		}
	}
	if shaped < 3000 || declined == 0 {
		t.Fatalf("%d services shaped, %d declined", shaped, declined)
	}
	// Declined, as they must be.
	for _, s := range []*model.Service{
		{Name: `a\.b.test.`, TXT: []string{"x"}},
		{Name: strings.Repeat("a", 64) + ".test.", TXT: []string{"x"}},
		{Name: "a.test.", Addresses: []netip.Addr{netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.1")}},
		{Name: "a.test.", Addresses: []netip.Addr{{}}},
		{Name: "a.test.", Addresses: []netip.Addr{netip.MustParseAddr("fe80::1%a"), netip.MustParseAddr("fe80::1%b")}},
		{Name: "a.test.", TXT: []string{strings.Repeat("x", 256)}},
		{Name: "."},
	} {
		if _, ok := serviceShape(s, new([]byte)); ok {
			t.Errorf("%+v: shaped", s)
		}
	}
}

func randomService(rng *rand.Rand, round int) *model.Service {
	var labels []string
	for range 1 + rng.IntN(4) {
		n := 1 + rng.IntN(12)
		if rng.IntN(40) == 0 {
			n = 60 + rng.IntN(6) // near and past the 63-byte limit
		}
		b := make([]byte, n)
		for i := range b {
			b[i] = "abcdefghijklmnopqrstuvwxyz0123456789-_"[rng.IntN(38)]
		}
		labels = append(labels, string(b))
	}
	if rng.IntN(50) == 0 {
		labels = append(labels, strings.Repeat("x", 63), strings.Repeat("y", 63), strings.Repeat("z", 50+rng.IntN(13)))
	}
	s := &model.Service{Name: strings.Join(labels, ".") + ".test.", TTL: rng.Uint32()}
	if rng.IntN(100) == 0 {
		s.Name = `a\046b.test.`
	}
	for i := range rng.IntN(4) {
		switch rng.IntN(3) {
		case 0:
			s.Addresses = append(s.Addresses, netip.AddrFrom4([4]byte{10, byte(round >> 8), byte(round), byte(i)}))
		case 1:
			s.Addresses = append(s.Addresses, netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, 14: byte(round), 15: byte(i)}))
		default:
			s.Addresses = append(s.Addresses, netip.AddrFrom16([16]byte{10: 0xff, 11: 0xff, 12: 192, 13: 0, 14: 2, 15: byte(i)}))
		}
	}
	if rng.IntN(20) == 0 && len(s.Addresses) > 0 {
		s.Addresses = append(s.Addresses, s.Addresses[0])
	}
	if rng.IntN(3) == 0 {
		s.Port = uint16(1 + rng.IntN(65535))
	}
	if rng.IntN(5) > 0 {
		s.TXT = []string{}
		for range rng.IntN(4) {
			n := rng.IntN(256)
			if rng.IntN(30) == 0 {
				n = 256
			}
			b := make([]byte, n)
			for i := range b {
				b[i] = byte(rng.IntN(256))
				if rng.IntN(3) == 0 {
					b[i] = `"\{}[]:,ab`[rng.IntN(10)]
				}
			}
			s.TXT = append(s.TXT, string(b))
		}
		s.Compat.BareHost = rng.IntN(4) == 0
	}
	return s
}

// dns.PackRR writes the names appendWireName writes.
func TestAppendWireName(t *testing.T) {
	for _, name := range []string{".", "a.", "fleet.test.", "_grpc_config.svc-1.fleet.test.", strings.Repeat("a", 63) + ".b."} {
		var buf [256]byte
		n, err := dns.PackDomainName(name, buf[:], 0, nil, false)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendWireName(nil, name); string(got) != string(buf[:n]) || wireNameLen(name) != n {
			t.Errorf("%q: % x (%d), want % x", name, got, wireNameLen(name), buf[:n])
		}
	}
}

// FuzzServiceShape holds serviceShape to the records on any name, TXT
// bytes, port, TTL and address.
func FuzzServiceShape(f *testing.F) {
	f.Add("svc.fleet.test.", []byte(`{"a":"b\"c"}`), uint16(0), uint32(300), []byte{10, 0, 0, 1}, false)
	f.Add("a-b_c.test.", []byte{0, 255, '\\', '"'}, uint16(8443), uint32(0), []byte{0x20, 1, 0xd, 0xb8, 15: 1}, true)
	f.Fuzz(func(t *testing.T, name string, txt []byte, port uint16, ttl uint32, addr []byte, bare bool) {
		s := &model.Service{Name: name, TTL: ttl, Port: port, Compat: model.Compat{BareHost: bare}}
		if a, ok := netip.AddrFromSlice(addr); ok {
			s.Addresses = []netip.Addr{a}
		}
		if len(txt) > 0 {
			for len(txt) > 200 {
				s.TXT, txt = append(s.TXT, string(txt[:200])), txt[200:]
			}
			s.TXT = append(s.TXT, string(txt))
		}
		sh, ok := serviceShape(s, new([]byte))
		if !ok {
			return
		}
		records := serviceRecords(s)
		sum, packed := hashRecords(records, nil)
		if !packed || sh.sum != sum || sh.size != size(records) || sh.count != len(records) {
			t.Fatalf("%+v: shape %x %d %d, records %x %d %d (packed %v)", s, sh.sum, sh.size, sh.count, sum, size(records), len(records), packed)
		}
	})
}
