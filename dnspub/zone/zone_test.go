package zone

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/miekg/dns"

	"github.com/grpc-config-dns/grpc-config-dns/dnspub/internal/cow"
	"github.com/grpc-config-dns/grpc-config-dns/model"
)

func exampleZone(t *testing.T, text []byte, serial uint32) *Zone {
	t.Helper()
	cfg, ds := model.Parse(text)
	if cfg == nil {
		t.Fatalf("config: %v", ds)
	}
	return New(cfg.Zones[0], serial)
}

// TestMasterFileRoundTrip checks that the master file, read back by an
// independent parser, holds exactly the zone's records.
func TestMasterFileRoundTrip(t *testing.T) {
	z := exampleZone(t, model.Example, 42)
	var buf bytes.Buffer
	if err := z.WriteMasterFile(&buf, "generated\nby a test"); err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", buf.String())
	zp := dns.NewZoneParser(&buf, "", "test")
	var got []string
	for rr, ok := zp.Next(); ok; rr, ok = zp.Next() {
		got = append(got, rr.String())
	}
	if err := zp.Err(); err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, rr := range z.AXFR()[:z.Len()+1] {
		want = append(want, rr.String())
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("round trip differs:\ngot:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestDigestAndDiff(t *testing.T) {
	a := exampleZone(t, model.Example, 1)
	b := exampleZone(t, model.Example, 2)
	if a.Digest() != b.Digest() {
		t.Error("the serial changed the digest")
	}
	if a.WithSerial(7).Digest() != a.Digest() || a.WithSerial(7).Serial() != 7 || a.Serial() != 1 {
		t.Error("WithSerial")
	}
	changed := bytes.Replace(model.Example, []byte("name: www\n        addresses: [127.0.0.1]"), []byte("name: www\n        addresses: [127.0.0.2]"), 1)
	c := exampleZone(t, changed, 3)
	if c.Digest() == a.Digest() {
		t.Fatal("a changed address kept the digest")
	}
	del, add := diffRecords(a.Records(), c.Records())
	if len(del) != 1 || len(add) != 1 || del[0].(*dns.A).A.String() != "127.0.0.1" || add[0].(*dns.A).A.String() != "127.0.0.2" {
		t.Errorf("diff = -%v +%v", del, add)
	}
	if del, add := diffRecords(a.Records(), b.Records()); len(del)+len(add) != 0 {
		t.Errorf("diff of equal zones = -%v +%v", del, add)
	}
}

func TestCompareNames(t *testing.T) {
	names := []string{"example.test.", "a.example.test.", "z.example.test.", "_grpc_config.echo.example.test.", "echo.example.test."}
	for i, a := range names {
		for j, b := range names {
			if (CompareNames(a, b) == 0) != (i == j) {
				t.Errorf("CompareNames(%s, %s)", a, b)
			}
		}
	}
	if CompareNames("example.test.", "a.example.test.") >= 0 || CompareNames("echo.example.test.", "_grpc_config.echo.example.test.") >= 0 {
		t.Error("the apex and parents must sort before their children")
	}
}

// TestTXTEscaping checks that JSON backslashes and quotes reach the wire
// unchanged (miekg/dns reads escapes in TXT strings).
func TestTXTEscaping(t *testing.T) {
	text := bytes.Replace(model.Example, []byte("service: helloworld.Greeter"), []byte(`service: "hello\\\"world\u00e9.Greeter"`), 1)
	z := exampleZone(t, text, 1)
	var txt *dns.TXT
	for _, rr := range z.Records() {
		if rr.Header().Name == "_grpc_config.greeter.example.test." {
			txt = rr.(*dns.TXT)
		}
	}
	buf := make([]byte, 4096)
	n, err := dns.PackRR(txt, buf, 0, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	want := `grpc_config=[{"serviceConfig":{"methodConfig":[{"name":[{"service":"hello\\\"world\u00e9.Greeter"}],"timeout":"3s"}]}}]`
	rdata := buf[n-len(want)-1 : n]
	if int(rdata[0]) != len(want) || string(rdata[1:]) != want {
		t.Errorf("wire TXT = %q, want %q", rdata, want)
	}
	if got := strings.Join(RawTXT(txt), ""); got != want {
		t.Errorf("RawTXT = %q", got)
	}
}

// TestSameServiceComparesEveryField: a field added to model.Service must
// be compared by sameService, or Update could share a service that
// differs in it. (ResourceVersion, the ninth, makes no record: it is left
// out on purpose.)
func TestSameServiceComparesEveryField(t *testing.T) {
	if n := reflect.TypeOf(model.Service{}).NumField(); n != 9 {
		t.Errorf("model.Service has %d fields: compare the new ones in sameService, then update this count", n)
	}
}

func recordStrings(rrs []dns.RR) []string {
	var out []string
	for _, rr := range rrs {
		out = append(out, rr.String())
	}
	return out
}

// EachName gives the same names and records whether it is given the
// change of the Update that built the zone from nothing (then, when no
// name is held by two units, it does not look names up) or not, and
// looks them up for a change of another zone or version.
func TestEachNameWithItsChange(t *testing.T) {
	cfg, ds := model.Parse(model.Example)
	if cfg == nil {
		t.Fatal(ds)
	}
	other, ds := model.Parse([]byte(strings.ReplaceAll(string(model.Example), "addresses: [127.0.0.1]", "addresses: [127.0.0.9]")))
	if other == nil {
		t.Fatal(ds)
	}
	z, ch := Update(nil, cfg.Zones[0])
	oz, och := Update(nil, other.Zones[0])
	if !ch.FromNothing() || !och.FromNothing() || !(*Change)(nil).FromNothing() {
		t.Fatal("a zone built from nothing does not say so")
	}
	next, nch := Update(z, other.Zones[0])
	if nch.FromNothing() {
		t.Fatal("a zone built from a previous version says it was built from nothing")
	}
	// ns1 holds the glue of the zone's nameserver and, here, a service's
	// TXT record too: a name of two units.
	sharing, ds := model.Parse([]byte(strings.Replace(string(model.Example), "    services:\n", "    services:\n      - name: ns1\n        serviceConfig: {}\n        compat: {bareHost: true}\n", 1)))
	if sharing == nil {
		t.Fatal(ds)
	}
	sz, sch := Update(nil, sharing.Zones[0])
	if ch.shared != 0 || sch.shared != 1 {
		t.Fatalf("names held by two units: %d and %d, want 0 and 1", ch.shared, sch.shared)
	}
	each := func(z *Zone, made *Change) map[string][]string { return eachName(t, z, made) }
	want := each(z, nil)
	if len(want) < 3 {
		t.Fatalf("only %d names in the example zone", len(want))
	}
	for _, c := range []struct {
		what   string
		z      *Zone
		made   *Change
		lookup bool // names looked up
	}{
		{"its own change", z, ch, false},
		{"its own change, a name held by two units", sz, sch, true},
		{"its own change, another serial", z.WithSerial(7), ch, false},
		{"another zone's change", oz, ch, true},
		{"the change to a later version", next, ch, true},
		{"the change of an update", next, nch, true},
	} {
		if skips := c.made.fresh && c.made.shared == 0 && c.made.of.Same(c.z.units); skips == c.lookup {
			t.Errorf("%s: names looked up: %v, want %v", c.what, !skips, c.lookup)
		}
		if got, want := each(c.z, c.made), each(c.z, nil); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: %v, want %v", c.what, got, want)
		}
	}
	if reflect.DeepEqual(each(oz, nil), want) {
		t.Fatal("the two configs make the same zone: the test tells nothing")
	}
}

// A zone built from nothing (its names put in the maps by shards, in
// parallel: putAll) is the zone put unit by unit: the same units, owners
// (units and counts below), hosts of additional records, counts, digest
// and records added, in the same order. The configs have services that
// share names with the nameservers' glue and with each other's bare-host
// records, names deep below the origin (empty non-terminals), ports (SRV
// records, whose targets carry addresses), and enough services for
// several workers.
func TestPutAllIsPutOneByOne(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	var shared, nonTerminals, refs int
	for round := range 12 {
		var text strings.Builder
		text.WriteString("zones:\n  - origin: example.test.\n    nameservers: [{name: ns1, addresses: [192.0.2.53]}, {name: ns.deep.sub, addresses: [192.0.2.54]}, ns.other.]\n    services:\n")
		n := []int{3, 40, 1500}[round%3]
		used := map[string]bool{}
		for i := range n {
			labels := []string{fmt.Sprintf("s%d", rng.IntN(2*n))}
			for range rng.IntN(3) {
				labels = append(labels, []string{"a", "b", "sub", "deep.sub"}[rng.IntN(4)])
			}
			name := strings.Join(labels, ".")
			if used[name] || name == "ns1" || name == "ns.deep.sub" {
				continue
			}
			used[name] = true
			fmt.Fprintf(&text, "      - name: %s\n", name)
			if rng.IntN(5) > 0 {
				fmt.Fprintf(&text, "        addresses: [10.0.%d.%d]\n", i>>8&255, i&255)
				if rng.IntN(3) == 0 {
					fmt.Fprintf(&text, "        port: %d\n", 1000+i)
				}
			}
			if rng.IntN(4) > 0 {
				fmt.Fprintf(&text, "        serviceConfig: {methodConfig: [{name: [{service: s.S%d}], timeout: 1s}]}\n", i)
				if rng.IntN(3) == 0 {
					text.WriteString("        compat: {bareHost: true}\n")
				}
			} else if !strings.Contains(text.String()[strings.LastIndex(text.String(), "- name:"):], "addresses") {
				text.WriteString("        addresses: [192.0.2.1]\n")
			}
		}
		// Names the glue of the nameservers holds too.
		for _, ns := range []string{"ns1", "ns.deep.sub"} {
			if rng.IntN(2) == 0 {
				fmt.Fprintf(&text, "      - name: %s\n        serviceConfig: {}\n        compat: {bareHost: true}\n", ns)
			}
		}
		cfg, ds := model.Parse([]byte(text.String()))
		if cfg == nil {
			t.Fatalf("round %d: %v\n%s", round, ds, text.String())
		}
		c := cfg.Zones[0]
		got, gotCh := Update(nil, c)
		ed := newEditor(nil, c)
		for _, m := range ed.buildUnits(c.Services) {
			ed.put(m)
		}
		want, wantCh := ed.finish()
		if got.count != want.count || got.bytes != want.bytes || got.sum != want.sum || got.Digest() != want.Digest() {
			t.Fatalf("round %d: counts, bytes or digest differ: %d %d %x, want %d %d %x", round, got.count, got.bytes, got.sum, want.count, want.bytes, want.sum)
		}
		// Built from nothing, every record is new and none is listed;
		// the zone holds those put one by one.
		if gotCh.Added != nil || gotCh.Deleted != nil {
			t.Fatalf("round %d: a zone built from nothing lists records added or deleted", round)
		}
		if !reflect.DeepEqual(recordStrings(got.Records()), recordStrings(want.Records())) || len(wantCh.Added) != len(want.Records()) {
			t.Fatalf("round %d: records differ", round)
		}
		for _, m := range []struct {
			what      string
			got, want func() map[string]string
		}{
			{"units", dump(got.units, func(u *unit) string { return u.key() }), dump(want.units, func(u *unit) string { return u.key() })},
			{"owners", dump(got.owners, func(o *owner) string { return fmt.Sprint(*o) }), dump(want.owners, func(o *owner) string { return fmt.Sprint(*o) })},
			{"refs", dump(got.refs, func(l []string) string { return fmt.Sprint(l) }), dump(want.refs, func(l []string) string { return fmt.Sprint(l) })},
		} {
			if g, w := m.got(), m.want(); !reflect.DeepEqual(g, w) {
				t.Fatalf("round %d: %s differ:\n%v\nwant\n%v", round, m.what, g, w)
			}
		}
		if got.units.Len() != want.units.Len() || got.owners.Len() != want.owners.Len() || got.refs.Len() != want.refs.Len() {
			t.Fatalf("round %d: map lengths differ", round)
		}
		for _, o := range got.owners.All() {
			switch {
			case len(o.units) > 1:
				shared++
			case len(o.units) == 0:
				nonTerminals++
			}
		}
		refs += got.refs.Len()
	}
	if shared == 0 || nonTerminals == 0 || refs == 0 {
		t.Errorf("names shared %d, empty non-terminals %d, hosts of additional records %d: the configs miss a case", shared, nonTerminals, refs)
	}
}

func dump[V any](m cow.Map[V], str func(V) string) func() map[string]string {
	return func() map[string]string {
		out := map[string]string{}
		for k, v := range m.All() {
			out[k] = str(v)
		}
		return out
	}
}

// Two services of one name, which the config refuses but Update may be
// given: the later replaces the earlier, as in any update, and the names
// of the zone built from nothing are those of the services that stay
// (found in review: EachName read the replaced service's records too).
func TestUpdateFromNothingDuplicateName(t *testing.T) {
	var text strings.Builder
	text.WriteString("zones:\n  - origin: ex.test.\n    nameservers: [ns.other.]\n    services:\n")
	for i := range 1100 { // enough for putAll's workers
		fmt.Fprintf(&text, "      - name: s%d\n        addresses: [10.0.%d.%d]\n", i, i>>8, i&255)
	}
	text.WriteString("      - name: dup\n        addresses: [10.9.9.9]\n")
	cfg, ds := model.Parse([]byte(text.String()))
	if cfg == nil {
		t.Fatal(ds)
	}
	c := *cfg.Zones[0]
	dup := *c.Services[len(c.Services)-1]
	dup.Name = c.Services[1].Name
	c.Services = append(slices.Clone(c.Services), &dup)
	z, ch := Update(nil, &c)
	if !ch.FromNothing() {
		t.Fatal("not from nothing")
	}
	if _, ok := ch.AnswerBound(); ok {
		t.Error("an answer bound for a zone with two services of one name")
	}
	got := eachName(t, z, ch)
	if a := got[dup.Name]; len(a) != 1 || !strings.HasSuffix(a[0], "10.9.9.9") {
		t.Errorf("%s: %v, want the later service's address", dup.Name, a)
	}
	if rrs := z.RecordsAt(dup.Name); len(rrs) != 1 || !strings.HasSuffix(rrs[0].String(), "10.9.9.9") {
		t.Errorf("the zone holds %v at %s", rrs, dup.Name)
	}
}

// eachName is what z.EachName gives, from two workers, with made: each
// name's records as strings. A name given twice fails t.
func eachName(t *testing.T, z *Zone, made *Change) map[string][]string {
	t.Helper()
	got := map[string][]string{}
	var mu sync.Mutex
	z.EachName(2, made, func(_ int, name string, rrs []dns.RR) {
		mu.Lock()
		defer mu.Unlock()
		if _, dup := got[name]; dup {
			t.Errorf("%s given twice", name)
		}
		got[name] = recordStrings(rrs)
	})
	return got
}

// AnswerBound bounds the records of every answer of a zone built from
// nothing in which no name has two units: each name's RRsets and the
// addresses of the hosts they name. It is refused to a zone with a name
// two units hold (a service at the apex, beside the nameservers), to a
// zone changed from another version, and to services of one name.
func TestAnswerBound(t *testing.T) {
	text := []byte(`zones:
  - origin: example.test.
    nameservers: [{name: ns1, addresses: [192.0.2.53, "2001:db8::53"]}, ns2.example.net.]
    services:
      - {name: echo, addresses: [192.0.2.1, 192.0.2.2, "2001:db8::1"], port: 8443}
      - {name: a.b, addresses: [192.0.2.3], serviceConfig: {loadBalancingConfig: [{round_robin: {}}]}, compat: {bareHost: true}}
      - {name: big, serviceConfig: {methodConfig: [{name: [{service: ` + strings.Repeat("x", 900) + `}]}]}}
`)
	cfg, ds := model.Parse(text)
	if cfg == nil {
		t.Fatal(ds)
	}
	z, ch := Update(nil, cfg.Zones[0])
	bound, ok := ch.AnswerBound()
	if !ok {
		t.Fatal("no bound for a zone whose names are each one unit's")
	}
	largest := 0
	for _, name := range z.Names() {
		rrs := z.RecordsAt(name)
		for i := 0; i < len(rrs); {
			j, n := i, 0
			for ; j < len(rrs) && rrs[j].Header().Rrtype == rrs[i].Header().Rrtype; j++ {
				n += dns.Len(rrs[j])
				if host, ok := AdditionalTarget(rrs[j]); ok {
					for _, a := range z.RecordsAt(host) {
						if t := a.Header().Rrtype; t == dns.TypeA || t == dns.TypeAAAA {
							n += dns.Len(a)
						}
					}
				}
			}
			if name != z.Origin || rrs[i].Header().Rrtype != dns.TypeSOA {
				largest = max(largest, n)
			}
			i = j
		}
	}
	if largest == 0 || largest > bound {
		t.Errorf("the largest answer carries %d bytes of records, the bound is %d", largest, bound)
	}

	apex := bytes.Replace(text, []byte("    services:\n"), []byte("    services:\n      - {name: \"@\", addresses: [192.0.2.9]}\n"), 1)
	if cfg, ds = model.Parse(apex); cfg == nil {
		t.Fatal(ds)
	}
	z, ch = Update(nil, cfg.Zones[0])
	if _, ok := ch.AnswerBound(); ok {
		t.Error("a bound for a zone whose origin two units hold")
	}
	next, nch := Update(z, cfg.Zones[0])
	if _, ok := nch.AnswerBound(); ok || next == nil {
		t.Error("a bound for a change from another version")
	}
	if _, ok := (*Change)(nil).AnswerBound(); ok {
		t.Error("a bound for no change")
	}
}

// inside is dns.IsSubDomain for a name other than the origin, on names
// of every case, with escapes, the root and near misses.
func TestInside(t *testing.T) {
	names := []string{".", "test.", "fleet.test.", "FLEET.test.", "a.fleet.test.", "b.a.fleet.test.", "afleet.test.",
		"a.Fleet.Test.", "x.test.", "fleet.test.x.", `a\.fleet.test.`, `fleet\.test.`, `a.fleet\.test.`, `\046.fleet.test.`, "_grpc_config.svc-1.fleet.test."}
	for _, origin := range names {
		for _, name := range names {
			want := name != origin && dns.IsSubDomain(origin, name)
			if strings.EqualFold(name, origin) && !strings.Contains(name, `\`) {
				want = false // the same name in another case: not below it
			}
			if got := inside(origin, name); got != want {
				t.Errorf("inside(%q, %q) = %v, want %v", origin, name, got, want)
			}
		}
	}
}
