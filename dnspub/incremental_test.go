package dnspub

import (
	"bytes"
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/grpc-config-dns/grpc-config-dns/dnspub/internal/wire"
	"github.com/grpc-config-dns/grpc-config-dns/dnspub/zone"
	"github.com/grpc-config-dns/grpc-config-dns/model"
)

// fleetModel is a publisher config that random edits evolve.
type fleetModel struct {
	zones map[string]*zoneModel
}

type zoneModel struct {
	ttl      int
	ns       []string // in-zone nameservers get glue
	services map[string]*svcModel
}

type svcModel struct {
	addrs    []string
	port     int
	ttl      int
	config   string // a service config in YAML flow style, or ""
	bareHost bool
}

var svcLabels = []string{"a", "b", "echo", "svc", "x"}

func (m *fleetModel) randomService(rng *rand.Rand, z int) *svcModel {
	s := &svcModel{ttl: 10 + rng.IntN(300)}
	for i := range rng.IntN(4) {
		if rng.IntN(2) == 0 {
			s.addrs = append(s.addrs, fmt.Sprintf("10.%d.%d.%d", z, rng.IntN(3), i+1))
		} else {
			s.addrs = append(s.addrs, fmt.Sprintf(`"2001:db8:%d::%d"`, rng.IntN(3), i+1))
		}
	}
	if len(s.addrs) > 0 && rng.IntN(2) == 0 {
		s.port = 1 + rng.IntN(65535)
	}
	if len(s.addrs) == 0 || rng.IntN(2) == 0 {
		s.config = fmt.Sprintf("{methodConfig: [{name: [{service: s%d}], timeout: %ds}]}", rng.IntN(20), 1+rng.IntN(9))
		s.bareHost = rng.IntN(4) == 0
	}
	return s
}

// mutate makes one random edit: a service added, removed or changed, a
// zone's TTL or nameservers changed, a zone added or removed.
func (m *fleetModel) mutate(rng *rand.Rand) {
	origins := slices.Sorted(maps.Keys(m.zones))
	switch op := rng.IntN(20); {
	case op == 0 && len(m.zones) < 3:
		o := fmt.Sprintf("z%d.test.", rng.IntN(4))
		if m.zones[o] == nil {
			m.zones[o] = &zoneModel{ttl: 60, ns: []string{"ns1.example.net."}, services: map[string]*svcModel{}}
		}
	case op == 1 && len(m.zones) > 1:
		delete(m.zones, origins[rng.IntN(len(origins))])
	case op == 2:
		z := m.zones[origins[rng.IntN(len(origins))]]
		z.ttl = 30 + rng.IntN(600)
	case op == 3:
		z := m.zones[origins[rng.IntN(len(origins))]]
		z.ns = []string{"ns1.example.net."}
		if rng.IntN(2) == 0 {
			z.ns = append(z.ns, fmt.Sprintf("ns%d", 2+rng.IntN(2))) // in the zone: glue
		}
	default:
		o := origins[rng.IntN(len(origins))]
		z := m.zones[o]
		parts := make([]string, 1+rng.IntN(3))
		for i := range parts {
			parts[i] = svcLabels[rng.IntN(len(svcLabels))]
		}
		name := strings.Join(parts, ".")
		if strings.HasPrefix(name, "ns") {
			return
		}
		if _, ok := z.services[name]; ok && rng.IntN(3) == 0 {
			delete(z.services, name)
		} else {
			z.services[name] = m.randomService(rng, slices.Index(origins, o))
		}
	}
}

func (m *fleetModel) yaml() string {
	var b strings.Builder
	b.WriteString("zones:\n")
	for _, o := range slices.Sorted(maps.Keys(m.zones)) {
		z := m.zones[o]
		fmt.Fprintf(&b, "  - origin: %s\n    ttl: %d\n    transfer: {allow: [127.0.0.1]}\n    nameservers:\n", o, z.ttl)
		for _, ns := range z.ns {
			if strings.HasSuffix(ns, ".") {
				fmt.Fprintf(&b, "      - %s\n", ns)
			} else {
				fmt.Fprintf(&b, "      - {name: %s, addresses: [192.0.2.53]}\n", ns)
			}
		}
		b.WriteString("    services:\n      - {name: \"@\", addresses: [192.0.2.1]}\n")
		for _, name := range slices.Sorted(maps.Keys(z.services)) {
			s := z.services[name]
			fmt.Fprintf(&b, "      - name: %s\n        ttl: %d\n", name, s.ttl)
			if len(s.addrs) > 0 {
				fmt.Fprintf(&b, "        addresses: [%s]\n", strings.Join(s.addrs, ", "))
			}
			if s.port != 0 {
				fmt.Fprintf(&b, "        port: %d\n", s.port)
			}
			if s.config != "" {
				fmt.Fprintf(&b, "        serviceConfig: %s\n", s.config)
			}
			if s.bareHost {
				b.WriteString("        compat: {bareHost: true}\n")
			}
		}
	}
	return b.String()
}

// scratch builds, from cfg alone, the zones and answer table a server
// would have with the serials of snap.
func scratch(t *testing.T, cfg *model.Config, snap *snapshot) ([]*zone.Zone, *wire.Table) {
	t.Helper()
	var zs []*zone.Zone
	for _, zc := range cfg.Zones {
		zs = append(zs, zone.New(zc, snap.zones[zc.Origin].cur.Serial()))
	}
	tb, err := wire.Build(zs, wire.Options{MaxUDPSize: cfg.Server.MaxUDPSize})
	if err != nil {
		t.Fatal(err)
	}
	return zs, tb
}

func recordSet(rrs []dns.RR) []string {
	out := make([]string, len(rrs))
	for i, rr := range rrs {
		out[i] = rr.String()
	}
	slices.Sort(out)
	return out
}

// TestIncrementalMatchesScratch is a property test: over random sequences
// of edits, each version the server builds incrementally (sharing what did
// not change with the previous one) answers every name and type exactly
// as a version built from scratch from the same config, has the same
// records and digest, and its IXFR step turns the previous version's
// records into its own.
func TestIncrementalMatchesScratch(t *testing.T) {
	types := []uint16{dns.TypeA, dns.TypeAAAA, dns.TypeTXT, dns.TypeNS, dns.TypeSOA, dns.TypeSRV, dns.TypeMX, dns.TypeANY}
	seeds := uint64(12)
	if raceEnabled {
		seeds = 2
	}
	for seed := range seeds {
		rng := rand.New(rand.NewPCG(seed, 3))
		m := &fleetModel{zones: map[string]*zoneModel{"z0.test.": {ttl: 60, ns: []string{"ns1.example.net."}, services: map[string]*svcModel{}}}}
		clock := time.Unix(2_000_000_000, 0)
		ts := startServer(t, m.yaml(), func(o *Options) { o.Now = func() time.Time { return clock } })
		records := map[string][]string{} // each zone's records at the serving version
		for origin, ze := range ts.snap.Load().zones {
			records[origin] = recordSet(ze.cur.Records())
		}
		for step := range 40 {
			for range 1 + rng.IntN(3) {
				m.mutate(rng)
			}
			clock = clock.Add(time.Duration(rng.IntN(2)) * time.Second)
			old := ts.snap.Load()
			ts.write(m.yaml())
			if err := ts.Reload(); err != nil {
				t.Fatalf("seed %d step %d: %v\n%s", seed, step, err, m.yaml())
			}
			snap := ts.snap.Load()
			zs, tb := scratch(t, snap.cfg, snap)
			where := fmt.Sprintf("seed %d step %d", seed, step)
			// The config served is exactly what a fresh read makes of
			// the file, however the server's parser read it.
			if fresh, _ := model.Parse([]byte(m.yaml())); !reflect.DeepEqual(snap.cfg, fresh) {
				t.Fatalf("%s: the config served differs from a fresh read of the file", where)
			}
			for _, z := range zs {
				ze := snap.zones[z.Origin]
				if ze.cur.Digest() != z.Digest() {
					t.Fatalf("%s: %s: digest differs from a scratch build", where, z.Origin)
				}
				got, want := recordSet(ze.cur.Records()), recordSet(z.Records())
				if !slices.Equal(got, want) {
					t.Fatalf("%s: %s: records differ:\n%s\nwant:\n%s", where, z.Origin, strings.Join(got, "\n"), strings.Join(want, "\n"))
				}
				// The IXFR step from the previous version, if any.
				if prev := old.zones[z.Origin]; prev != nil && prev.cur != ze.cur {
					last := ze.history[len(ze.history)-1]
					if last.from.Serial != prev.cur.Serial() || last.to.Serial != ze.cur.Serial() {
						t.Fatalf("%s: %s: step %d→%d, versions %d→%d", where, z.Origin, last.from.Serial, last.to.Serial, prev.cur.Serial(), ze.cur.Serial())
					}
					applied := map[string]int{}
					for _, r := range records[z.Origin] {
						applied[r]++
					}
					for _, r := range recordSet(last.deleted) {
						if applied[r]--; applied[r] < 0 {
							t.Fatalf("%s: %s: IXFR deletes %s, which the previous version lacks", where, z.Origin, r)
						}
					}
					for _, r := range recordSet(last.added) {
						applied[r]++
					}
					var after []string
					for r, n := range applied {
						for range n {
							after = append(after, r)
						}
					}
					slices.Sort(after)
					if !slices.Equal(after, want) {
						t.Fatalf("%s: %s: the IXFR step does not lead to the new records", where, z.Origin)
					}
				}
				records[z.Origin] = want
				// Every name and type, and names around them.
				names := map[string]bool{"nope." + z.Origin: true}
				for _, rr := range z.AXFR() {
					names[rr.Header().Name] = true
					names["child."+rr.Header().Name] = true
				}
				for name := range names {
					for _, qtype := range types {
						q := new(dns.Msg)
						q.SetQuestion(name, qtype)
						q.SetEdns0(1232, false)
						raw, _ := q.Pack()
						a, _ := snap.table.Respond(nil, raw, true)
						b, _ := tb.Respond(nil, raw, true)
						if !bytes.Equal(a, b) {
							t.Fatalf("%s: %s %s: the incremental answer differs from a scratch build", where, name, dns.TypeToString[qtype])
						}
					}
				}
			}
			// Zones removed: their names are gone.
			for origin, ze := range old.zones {
				if snap.zones[origin] == nil {
					q := new(dns.Msg)
					q.SetQuestion(origin, dns.TypeSOA)
					raw, _ := q.Pack()
					a, r := snap.table.Respond(nil, raw, true)
					if r.Rcode != dns.RcodeRefused {
						t.Fatalf("%s: removed zone %s answers %d bytes rcode %d", where, origin, len(a), r.Rcode)
					}
					_ = ze
				}
			}
		}
	}
}
