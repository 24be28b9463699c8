package zone

import (
	"math/rand/v2"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/miekg/dns"

	"github.com/grpc-config-dns/grpc-config-dns/model"
	sc "github.com/grpc-config-dns/grpc-config-dns/serviceconfig"
)

// wantRecords is what the records of s are, made with miekg/dns's types
// for the test to hold serviceWire.write to: for a service as model's
// validation makes them.
func wantRecords(s *model.Service) []dns.RR {
	var rrs []dns.RR
	for _, a := range s.Addresses {
		if a.Is4() {
			rrs = append(rrs, &dns.A{Hdr: hdr(s.Name, dns.TypeA, s.TTL), A: a.AsSlice()})
		} else {
			rrs = append(rrs, &dns.AAAA{Hdr: hdr(s.Name, dns.TypeAAAA, s.TTL), AAAA: a.AsSlice()})
		}
	}
	if s.Port != 0 {
		rrs = append(rrs, &dns.SRV{Hdr: hdr("_grpc._tcp."+s.Name, dns.TypeSRV, s.TTL), Port: s.Port, Target: s.Name})
	}
	if s.TXT != nil {
		var txt []string
		for _, t := range s.TXT {
			txt = append(txt, sc.EscapeTXTString(t))
		}
		rrs = append(rrs, &dns.TXT{Hdr: hdr("_grpc_config."+s.Name, dns.TypeTXT, s.TTL), Txt: txt})
		if s.Compat.BareHost {
			rrs = append(rrs, &dns.TXT{Hdr: hdr(s.Name, dns.TypeTXT, s.TTL), Txt: txt})
		}
	}
	return canonical(rrs)
}

// checkRecords holds the records of s (serviceRecords) and their shape
// (serviceShape) to each other, and to want when it is not nil: the
// same records packed to the same bytes, the same digest sum, size (as
// dns.Len counts), number, owner names and SRV target.
func checkRecords(t *testing.T, s *model.Service, want []dns.RR) {
	t.Helper()
	records := serviceRecords(s)
	if want != nil {
		if len(records) != len(want) {
			t.Fatalf("%+v:\n%v\nwant\n%v", s, records, want)
		}
		for i := range want {
			if a, b := packed(t, records[i]), packed(t, want[i]); a != b {
				t.Fatalf("%+v: record %d\n%v\nwant\n%v", s, i, records[i], want[i])
			}
		}
	}
	sh := serviceShape(s, new(serviceWire))
	sum, packed := hashRecords(records, nil)
	if !packed {
		t.Fatalf("%+v: a record does not pack", s)
	}
	if sh.sum != sum || sh.size != size(records) || sh.count != len(records) {
		t.Fatalf("%+v:\nshape sum %x size %d count %d\nrecords sum %x size %d count %d", s, sh.sum, sh.size, sh.count, sum, size(records), len(records))
	}
	names := slices.Clone(sh.names[:sh.nnames])
	slices.Sort(names)
	wantNames := owners(records)
	slices.Sort(wantNames)
	if !slices.Equal(names, wantNames) {
		t.Fatalf("%+v: owners %v, records' %v", s, names, wantNames)
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

func packed(t *testing.T, rr dns.RR) string {
	b := make([]byte, dns.Len(rr)+1)
	n, err := dns.PackRR(rr, b, 0, nil, false)
	if err != nil {
		t.Fatalf("%v: %v", rr, err)
	}
	return string(b[:n])
}

// The records of random services are those wantRecords makes, and their
// shape is theirs: names of every length, IPv4, IPv6 and IPv4-mapped
// addresses, ports, TXT strings of every byte value and length up to 255
// (quotes and backslashes among them), empty TXT lists, bare-host copies,
// any TTL. For a service DNS cannot carry all of, serviceWire.write says so and
// leaves out the same records everywhere.
func TestServiceRecords(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 9))
	whole, partial := 0, 0
	for round := range 4000 {
		s := randomService(rng, round)
		if !new(serviceWire).write(s) {
			partial++
			checkRecords(t, s, nil)
			continue
		}
		whole++
		checkRecords(t, s, wantRecords(s))
	}
	if whole < 3000 || partial == 0 {
		t.Fatalf("%d services whole, %d partial", whole, partial)
	}
	a, b := netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.2")
	long := strings.Repeat("a", 63) + "." + strings.Repeat("b", 63) + "." + strings.Repeat("c", 63) + "." + strings.Repeat("d", 56) + "."
	for _, c := range []struct {
		s    *model.Service
		want *model.Service // its records; nil for none
	}{
		{&model.Service{Name: `a\.b.test.`, TXT: []string{"x"}}, nil},
		{&model.Service{Name: strings.Repeat("a", 64) + ".test.", TXT: []string{"x"}}, nil},
		{&model.Service{Name: "a.test.", Addresses: []netip.Addr{{}, a}}, &model.Service{Name: "a.test.", Addresses: []netip.Addr{a}}},
		{&model.Service{Name: "a.test.", Addresses: []netip.Addr{a, b}, TXT: []string{strings.Repeat("x", 256)}}, &model.Service{Name: "a.test.", Addresses: []netip.Addr{a, b}}},
		// TXT data over 65 535 bytes: no record can carry it.
		{&model.Service{Name: "a.test.", Addresses: []netip.Addr{a}, TXT: slices.Repeat([]string{strings.Repeat("y", 255)}, 300)}, &model.Service{Name: "a.test.", Addresses: []netip.Addr{a}}},
		// The TXT and SRV owners are too long; the addresses are not.
		{&model.Service{Name: long, Port: 1, Addresses: []netip.Addr{a}, TXT: []string{"x"}}, &model.Service{Name: long, Addresses: []netip.Addr{a}}},
	} {
		if new(serviceWire).write(c.s) {
			t.Errorf("%+v: every record written", c.s)
		}
		want := []dns.RR{}
		if c.want != nil {
			want = wantRecords(c.want)
		}
		checkRecords(t, c.s, want)
	}
	// A duplicate address, or the same in another zone, is one record.
	fe := netip.MustParseAddr("fe80::1")
	for _, s := range []*model.Service{
		{Name: "a.test.", Addresses: []netip.Addr{a, b, a}},
		{Name: "a.test.", Addresses: []netip.Addr{fe.WithZone("a"), fe.WithZone("b"), fe}},
	} {
		if !new(serviceWire).write(s) {
			t.Errorf("%+v: not every record written", s)
		}
		checkRecords(t, s, wantRecords(s))
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

// FuzzServiceRecords holds the records of any name, TXT bytes, port,
// TTL and address to wantRecords, and their shape to them.
func FuzzServiceRecords(f *testing.F) {
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
		if new(serviceWire).write(s) {
			checkRecords(t, s, wantRecords(s))
		} else {
			checkRecords(t, s, nil)
		}
	})
}
