package wire

import (
	"bytes"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/grpc-config-dns/grpc-config-dns/dnspub/zone"
	"github.com/grpc-config-dns/grpc-config-dns/model"
)

// A table whose answers are left for later (SetZoneLater) answers every
// question with the bytes of the table built at once: before Complete,
// built for each query, and after. The zones are testConfig's (in-zone
// nameservers with glue, an empty non-terminal, a TXT record too large
// for UDP; other.test. has a service at its apex, which it shares with
// the nameservers, so it is built at once), random ones without a service
// at the apex, and a fleet. The questions are every name of the zones and
// names below and beside them, in mixed case, of every type, over UDP
// with and without EDNS and over TCP.
func TestLaterAnswersAsBuilt(t *testing.T) {
	texts := []string{testConfig}
	seeds := uint64(8)
	if raceEnabled {
		seeds = 4
	}
	for seed := range seeds {
		text := randomConfig(rand.New(rand.NewPCG(seed, 29)))
		texts = append(texts, strings.ReplaceAll(text, "      - {name: \"@\", addresses: [192.0.2.1]}\n", ""))
	}
	deferred, checked := 0, 0
	for i, text := range texts {
		cfg, ds := model.Parse([]byte(text))
		if cfg == nil {
			if i == 0 || !strings.Contains(fmt.Sprint(ds), "services must be a list") {
				t.Fatalf("config %d: %v", i, ds)
			}
			continue // a zone whose only service was at the apex
		}
		var zs []*zone.Zone
		var chs []*zone.Change
		for j, zc := range cfg.Zones {
			z, ch := zone.Update(nil, zc)
			zs, chs = append(zs, z.WithSerial(uint32(100+j))), append(chs, ch)
		}
		d, c := sameAnswersLater(t, zs, chs, 4096)
		deferred, checked = deferred+d, checked+c
	}
	fleet, ch := fleetZone(t, 300)
	d, c := sameAnswersLater(t, []*zone.Zone{fleet}, []*zone.Change{ch}, 1232)
	if d != 1 {
		t.Fatal("the fleet's answers were not left for later")
	}
	deferred, checked = deferred+d, checked+c
	if deferred < len(texts)/2 {
		t.Fatalf("only %d zones left for later", deferred)
	}
	t.Logf("%d zones left for later, %d questions checked", deferred, checked)
}

// sameAnswersLater builds zs, which chs built from nothing, at once and
// with SetZoneLater, fails t unless both tables and the second completed
// give the same answers, and returns how many zones were left for later
// and how many questions it asked.
func sameAnswersLater(t *testing.T, zs []*zone.Zone, chs []*zone.Change, maxUDP int) (deferred, checked int) {
	t.Helper()
	now, _ := New(Options{MaxUDPSize: maxUDP})
	later, _ := New(Options{MaxUDPSize: maxUDP})
	ne, le := now.Edit(), editLater(later)
	for i, z := range zs {
		if err := ne.SetZone(z, chs[i]); err != nil {
			t.Fatal(err)
		}
		if err := le.SetZoneLater(z, chs[i]); err != nil {
			t.Fatal(err)
		}
		key, _ := wireName(z.Origin)
		if le.zones[key].later != nil {
			deferred++
		} else if _, ok := chs[i].AnswerBound(); ok {
			t.Fatalf("zone %s: an answer bound, and its answers built at once", z.Origin)
		}
	}
	now, later = ne.Table(), le.Table()
	if later.Deferred() != (deferred > 0) {
		t.Fatalf("Deferred() = %v with %d zones left for later", later.Deferred(), deferred)
	}
	if deferred > 0 && later.nodes.Len() != 0 && len(zs) == 1 {
		t.Fatalf("%d names built of a zone left for later", later.nodes.Len())
	}
	done, err := later.Complete(1 + len(zs)%2)
	if err != nil {
		t.Fatal(err)
	}
	if done.Deferred() || done.nodes.Len() != now.nodes.Len() {
		t.Fatalf("completed: Deferred() = %v, %d names, built at once %d", done.Deferred(), done.nodes.Len(), now.nodes.Len())
	}
	names := map[string]bool{"beside.test.": true}
	for _, z := range zs {
		for _, n := range z.Names() {
			names[n] = true
			names["child."+n] = true
			names["x-"+n] = true
			names[strings.ToUpper(n)] = true
		}
	}
	types := []uint16{dns.TypeA, dns.TypeAAAA, dns.TypeTXT, dns.TypeNS, dns.TypeSOA, dns.TypeSRV, dns.TypeMX, dns.TypeANY}
	for name := range names {
		for _, qtype := range types {
			for _, a := range []ask{{name: name, qtype: qtype}, {name: name, qtype: qtype, edns: 1232}, {name: name, qtype: qtype, tcp: true, edns: 4096}} {
				msg := query(a)
				want, wr := now.Respond(make([]byte, 0, 65535), msg, a.tcp)
				for _, tb := range []struct {
					what string
					t    *Table
				}{{"left for later", later}, {"completed", done}} {
					have, hr := tb.t.Respond(make([]byte, 0, 65535), msg, a.tcp)
					if !bytes.Equal(want, have) || wr != hr {
						t.Fatalf("%s %s, %s: the answer is\n% x (%+v)\nnot\n% x (%+v)", name, dns.TypeToString[qtype], tb.what, have, hr, want, wr)
					}
				}
				checked++
			}
		}
	}
	return deferred, checked
}

// A zone is left for later only when it is large, new to the table, built
// from nothing and with every answer sure to build.
func TestLaterOnlyWhenSafe(t *testing.T) {
	fleet, ch := fleetZone(t, 50)
	left := func(tb *Table) bool { return tb.Deferred() }

	e := mustNew(t).Edit()
	if err := e.SetZoneLater(fleet, ch); err != nil || left(e.Table()) {
		t.Fatalf("a zone of %d records, below %d, was left for later (err %v)", fleet.Len(), defaultLaterAbove, err)
	}

	e = editLater(mustNew(t))
	if err := e.SetZoneLater(fleet, ch); err != nil {
		t.Fatal(err)
	}
	tb := e.Table()
	if !left(tb) {
		t.Fatal("the fleet was not left for later")
	}
	// The next version of the zone, changed: its other answers stay left
	// for later (TestLaterEdited).
	cfg := fleetConfig(t, 50, 7)
	next, nch := zone.Update(fleet, cfg.Zones[0])
	if e := tb.Edit(); e.SetZone(next.WithSerial(2), nch) != nil || !left(e.Table()) {
		t.Errorf("a change to a zone whose answers are left for later built them all")
	}
	done, err := tb.Complete(0)
	if err != nil {
		t.Fatal(err)
	}
	e = done.Edit()
	if err := e.SetZone(next.WithSerial(2), nch); err != nil {
		t.Fatal(err)
	}
	// A zone the table holds already is not left for later, nor put over
	// with a version built from nothing: that would keep the answers of
	// names that left it (SetZone refuses it: RemoveZone first). One
	// whose change is not from nothing is built at once.
	e = editLater(done)
	again, ach := zone.Update(nil, cfg.Zones[0])
	if err := e.SetZoneLater(again.WithSerial(3), ach); err == nil || left(e.Table()) {
		t.Errorf("a zone the table holds was replaced from nothing (err %v, left for later %v)", err, left(e.Table()))
	}
	e.RemoveZone(next)
	if err := e.SetZoneLater(again.WithSerial(3), ach); err != nil || !left(e.Table()) {
		t.Errorf("after RemoveZone, a zone built from nothing was not left for later (err %v)", err)
	}
	e = editLater(mustNew(t))
	if err := e.SetZoneLater(next.WithSerial(2), nch); err != nil || left(e.Table()) {
		t.Errorf("a zone changed from another version was left for later (err %v)", err)
	}

	// An answer too large for a message (the config refuses it; a zone
	// given one directly): SetZoneLater refuses it as SetZone does, rather
	// than leave it to fail later.
	bigCfg, ds := model.Parse([]byte("zones:\n  - origin: big.test.\n    nameservers: [ns1.example.net.]\n    services:\n      - {name: many, addresses: [\"2001:db8::1\"]}\n"))
	if bigCfg == nil {
		t.Fatal(ds)
	}
	svc := bigCfg.Zones[0].Services[0]
	for i := range 2500 {
		svc.Addresses = append(svc.Addresses, netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, 14: byte(i >> 8), 15: byte(i)}))
	}
	big, bch := zone.Update(nil, bigCfg.Zones[0])
	errNow := mustNew(t).Edit().SetZone(big.WithSerial(1), bch)
	errLater := editLater(mustNew(t)).SetZoneLater(big.WithSerial(1), bch)
	if errNow == nil || errLater == nil || errNow.Error() != errLater.Error() {
		t.Errorf("an answer too large: SetZone says %v, SetZoneLater %v", errNow, errLater)
	}
}

// editLater is t.Edit(), with SetZoneLater leaving zones of any size for
// later.
func editLater(t *Table) *Editor {
	e := t.Edit()
	e.laterAbove = 0
	return e
}

func mustNew(t testing.TB) *Table {
	t.Helper()
	tb, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	return tb
}

// nameOf reads back every name wireName writes: those of letters,
// digits, '-' and '_' as they are, others as miekg/dns writes them.
func TestNameOf(t *testing.T) {
	for _, name := range []string{".", "a.", "fleet.test.", "_grpc_config.svc-1.fleet.test.", "a\\.b.test.", "a\\032b.test.", "\\\"x.test.", strings.Repeat("a", 63) + "." + strings.Repeat("b", 63) + "."} {
		key, err := wireName(name)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := nameOf([]byte(key))
		if !ok {
			t.Fatalf("%q: not read back", name)
		}
		if again, _ := wireName(got); again != key {
			t.Errorf("%q: read back as %q, whose wire form differs", name, got)
		}
		if !strings.Contains(name, "\\") && got != name {
			t.Errorf("%q: read back as %q", name, got)
		}
	}
	for _, bad := range []string{"", "\x03ab", "\x01a", "\x40" + strings.Repeat("a", 64) + "\x00"} {
		if _, ok := nameOf([]byte(bad)); ok {
			t.Errorf("% x: read as a name", bad)
		}
	}
}

// FuzzRespondLater: to any packet, a table whose answers are left for
// later answers with the bytes of the table built at once: names of any
// bytes, case and length reach the per-query path (nameOf) here.
func FuzzRespondLater(f *testing.F) {
	cfg, ds := model.Parse([]byte(testConfig))
	if cfg == nil {
		f.Fatal(ds)
	}
	now, later := mustNew(f).Edit(), editLater(mustNew(f))
	for i, zc := range cfg.Zones {
		z, ch := zone.Update(nil, zc)
		z = z.WithSerial(uint32(100 + i))
		if err := now.SetZone(z, ch); err != nil {
			f.Fatal(err)
		}
		if err := later.SetZoneLater(z, ch); err != nil {
			f.Fatal(err)
		}
	}
	built, deferred := now.Table(), later.Table()
	if !deferred.Deferred() {
		f.Fatal("nothing left for later")
	}
	for _, a := range []ask{
		{name: "echo.example.test.", qtype: dns.TypeA},
		{name: "NS1.Example.Test.", qtype: dns.TypeAAAA, edns: 1232},
		{name: "_grpc_config.big.example.test.", qtype: dns.TypeTXT},
		{name: "b.example.test.", qtype: dns.TypeA},
		{name: "a\\.b.example.test.", qtype: dns.TypeA},
		{name: "a\\000b.example.test.", qtype: dns.TypeTXT, tcp: true},
		{name: "x.other.test.", qtype: dns.TypeA},
	} {
		f.Add(query(a), a.tcp)
	}
	f.Fuzz(func(t *testing.T, msg []byte, tcp bool) {
		want, wr := built.Respond(make([]byte, 0, 65535), msg, tcp)
		have, hr := deferred.Respond(make([]byte, 0, 65535), msg, tcp)
		if !bytes.Equal(want, have) || wr != hr {
			t.Fatalf("% x: left for later\n% x (%+v)\nbuilt\n% x (%+v)", msg, have, hr, want, wr)
		}
	})
}

// A zone whose answers are left for later, edited (a write right after a
// first start), answers as a table built at once from the version edited
// to: the answers the change made are built, the others stay left for
// later, now built from the new version; and so after several edits
// (a service changed, added, removed), and once completed. An edit that
// signs the zone builds every answer.
func TestLaterEdited(t *testing.T) {
	n := 300
	z, ch := fleetZone(t, n)
	e := editLater(mustNew(t))
	if err := e.SetZoneLater(z, ch); err != nil {
		t.Fatal(err)
	}
	tb := e.Table()
	names := map[string]bool{}
	for _, cfg := range []*model.Config{fleetConfig(t, n, 7), fleetConfig(t, n+1, 7), fleetConfig(t, n-1, 7), fleetConfig(t, n-1, 8)} {
		next, nch := zone.Update(z, cfg.Zones[0])
		next = next.WithSerial(z.Serial() + 1)
		e := tb.Edit()
		if err := e.SetZone(next, nch); err != nil {
			t.Fatal(err)
		}
		tb, z = e.Table(), next
		if !tb.Deferred() {
			t.Fatal("an edit built every answer left for later")
		}
		built := mustNew(t).Edit()
		if err := built.SetZone(next, nil); err != nil {
			t.Fatal(err)
		}
		now := built.Table()
		for _, name := range append(z.Names(), "svc300.fleet.test.", "_grpc_config.svc300.fleet.test.", "svc299.fleet.test.", "_grpc_config.svc299.fleet.test.") {
			names[name] = true
		}
		sameAnswers(t, now, tb, names, "edited, left for later")
		done, err := tb.Complete(1)
		if err != nil {
			t.Fatal(err)
		}
		if done.Deferred() || done.nodes.Len() != now.nodes.Len() {
			t.Fatalf("completed: Deferred() = %v, %d names, built at once %d", done.Deferred(), done.nodes.Len(), now.nodes.Len())
		}
		sameAnswers(t, now, done, names, "edited, then completed")
	}
}

// sameAnswers fails t unless have answers every question about names
// (and names below, beside and in upper case), of several types, over
// UDP with and without EDNS and DO and over TCP, with the bytes of want.
func sameAnswers(t *testing.T, want, have *Table, names map[string]bool, what string) {
	t.Helper()
	all := map[string]bool{"beside.test.": true}
	for n := range names {
		all[n], all["child."+n], all["x-"+n], all[strings.ToUpper(n)] = true, true, true, true
	}
	for _, name := range slices.Sorted(maps.Keys(all)) {
		for _, qtype := range []uint16{dns.TypeA, dns.TypeAAAA, dns.TypeTXT, dns.TypeSRV, dns.TypeNS, dns.TypeSOA, dns.TypeANY, dns.TypeMX} {
			for _, a := range []ask{{name: name, qtype: qtype}, {name: name, qtype: qtype, edns: 1232}, {name: name, qtype: qtype, edns: 512, do: true}, {name: name, qtype: qtype, tcp: true, edns: 4096}} {
				msg := query(a)
				w, wr := want.Respond(make([]byte, 0, 65535), msg, a.tcp)
				h, hr := have.Respond(make([]byte, 0, 65535), msg, a.tcp)
				if !bytes.Equal(w, h) || wr != hr {
					wm, hm := new(dns.Msg), new(dns.Msg)
					wm.Unpack(w)
					hm.Unpack(h)
					t.Fatalf("%s %s, %s: the answer is\n%v\nnot\n%v", name, dns.TypeToString[qtype], what, hm, wm)
				}
			}
		}
	}
}

// An edit that signs a zone whose answers are left for later builds them
// all: signed answers are not built for each query.
func TestLaterEditedToSigned(t *testing.T) {
	zc, ks, _ := signedZone(t, "")
	plain := *zc
	plain.DNSSEC = nil
	z0, ch0 := zone.Update(nil, &plain)
	z0 = z0.WithSerial(1)
	e := editLater(mustNew(t))
	if err := e.SetZoneLater(z0, ch0); err != nil {
		t.Fatal(err)
	}
	tb := e.Table()
	if !tb.Deferred() {
		t.Fatal("the zone was not left for later")
	}
	z1, ch1 := zone.Update(z0, zc)
	sz, err := zone.Sign(z0, z1.WithSerial(2), ch1, ks, *zc.DNSSEC, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	e = tb.Edit()
	if err := e.SetZone(sz, ch1); err != nil {
		t.Fatal(err)
	}
	if tb = e.Table(); tb.Deferred() {
		t.Fatal("a signed zone's answers were left for later")
	}
	built := mustNew(t).Edit()
	if err := built.SetZone(sz, nil); err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, n := range sz.Names() {
		names[n] = true
	}
	sameAnswers(t, built.Table(), tb, names, "signed by an edit")
}

// TestFreshVersionOfAHeldZone: a version of a zone built from nothing
// does not go over the version the table holds, whose names it may lack
// (the answers of svc45 would outlive it); after RemoveZone it answers
// alone.
func TestFreshVersionOfAHeldZone(t *testing.T) {
	big, _ := zone.Update(nil, fleetConfig(t, 50, -1).Zones[0])
	small, sch := zone.Update(nil, fleetConfig(t, 40, -1).Zones[0])
	tb, err := Build([]*zone.Zone{big.WithSerial(1)}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	gone := ask{name: "_grpc_config.svc45.fleet.test.", qtype: dns.TypeTXT}
	if m, _, _ := exchange(t, tb, gone); m == nil || m.Rcode != dns.RcodeSuccess || len(m.Answer) != 1 {
		t.Fatalf("svc45 before: %v", m)
	}
	e := tb.Edit()
	if err := e.SetZone(small.WithSerial(2), sch); err == nil {
		t.Fatal("a version built from nothing was put over the one the table holds")
	}
	e.RemoveZone(big)
	if err := e.SetZone(small.WithSerial(2), sch); err != nil {
		t.Fatal(err)
	}
	if m, _, _ := exchange(t, e.Table(), gone); m == nil || m.Rcode != dns.RcodeNameError {
		t.Errorf("svc45 after the version without it: %v", m)
	}
}
