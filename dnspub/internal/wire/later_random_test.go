package wire

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/grpc-config-dns/grpc-config-dns/dnspub/zone"
	"github.com/grpc-config-dns/grpc-config-dns/model"
)

// rsvc and rzone are a random config's services and zones, edited step
// by step (TestLaterRandomEdits).
type rsvc struct {
	name  string
	ttl   int
	addrs []string
	port  int
	cfg   int
	bare  bool
}

type rzone struct {
	origin string
	ttl    int
	ns     []string // raw yaml entries
	svcs   []*rsvc
}

// rlabels make the random names: nested (empty non-terminals come and
// go), and some named like the nameservers (glue held by a service).
var rlabels = []string{"a", "b", "echo", "svc", "x", "ns1", "ns0"}

func rName(rng *rand.Rand) string {
	parts := make([]string, 1+rng.IntN(3))
	for i := range parts {
		parts[i] = rlabels[rng.IntN(len(rlabels))]
	}
	return strings.Join(parts, ".")
}

func rService(rng *rand.Rand, name string, zi int) *rsvc {
	s := &rsvc{name: name, ttl: 10 + rng.IntN(3)*100}
	for i := range rng.IntN(4) {
		if rng.IntN(2) == 0 {
			s.addrs = append(s.addrs, fmt.Sprintf("10.%d.0.%d", zi, i+1+rng.IntN(3)))
		} else {
			s.addrs = append(s.addrs, fmt.Sprintf(`"2001:db8:%d::%d"`, zi, i+1+rng.IntN(3)))
		}
	}
	if len(s.addrs) > 0 && rng.IntN(2) == 0 {
		s.port = 1 + rng.IntN(3)
	}
	if len(s.addrs) == 0 || rng.IntN(2) == 0 {
		s.cfg = 1 + rng.IntN(5)
		s.bare = rng.IntN(4) == 0
	}
	seen := map[string]bool{}
	var out []string
	for _, a := range s.addrs {
		if !seen[a] {
			seen[a] = true
			out = append(out, a)
		}
	}
	s.addrs = out
	return s
}

func rNS(rng *rand.Rand, origin string) []string {
	var ns []string
	for n := range 1 + rng.IntN(3) {
		switch rng.IntN(3) {
		case 0:
			ns = append(ns, fmt.Sprintf("ns%d.example.net.", n))
		case 1:
			ns = append(ns, fmt.Sprintf("{name: ns%d, addresses: [192.0.2.%d]}", n, 50+n+rng.IntN(2)))
		default:
			ns = append(ns, fmt.Sprintf("ns%d.%s", n, origin)) // its addresses a service's, if any
		}
	}
	return ns
}

func (z *rzone) yaml() string {
	var b strings.Builder
	fmt.Fprintf(&b, "  - origin: %s\n    ttl: %d\n    nameservers:\n", z.origin, z.ttl)
	for _, n := range z.ns {
		fmt.Fprintf(&b, "      - %s\n", n)
	}
	b.WriteString("    services:\n")
	for _, s := range z.svcs {
		fmt.Fprintf(&b, "      - name: %s\n        ttl: %d\n", s.name, s.ttl)
		if len(s.addrs) > 0 {
			fmt.Fprintf(&b, "        addresses: [%s]\n", strings.Join(s.addrs, ", "))
			if s.port > 0 {
				fmt.Fprintf(&b, "        port: %d\n", s.port)
			}
		}
		if s.cfg > 0 {
			fmt.Fprintf(&b, "        serviceConfig: {methodConfig: [{name: [{service: s%d}], timeout: %ds}]}\n", s.cfg, s.cfg)
			if s.bare {
				b.WriteString("        compat: {bareHost: true}\n")
			}
		}
	}
	return b.String()
}

func parseZones(t *testing.T, zs []*rzone) (*model.Config, bool) {
	var b strings.Builder
	b.WriteString("zones:\n")
	for _, z := range zs {
		b.WriteString(z.yaml())
	}
	cfg, ds := model.Parse([]byte(b.String()))
	if cfg == nil {
		_ = ds
		return nil, false
	}
	return cfg, true
}

// TestLaterRandomEdits: random zones left for later (nested names,
// addresses, SRV ports, configs, bare hosts, nameservers outside the
// zone, inside with glue, or named like a service), edited at random
// (services removed, added, replaced; nameservers replaced), answer every
// question as the tables built at once from the same versions, after
// each edit and once completed; some completed tables are edited on.
func TestLaterRandomEdits(t *testing.T) {
	seeds := 4
	if raceEnabled {
		seeds = 2
	}
	for seed := range seeds {
		rng := rand.New(rand.NewPCG(uint64(seed), 99))
		var zs []*rzone
		for zi := range 1 + rng.IntN(2) {
			z := &rzone{origin: fmt.Sprintf("z%d.test.", zi), ttl: 60}
			z.ns = rNS(rng, z.origin)
			used := map[string]bool{}
			for range 2 + rng.IntN(8) {
				n := rName(rng)
				if used[n] {
					continue
				}
				used[n] = true
				z.svcs = append(z.svcs, rService(rng, n, zi))
			}
			zs = append(zs, z)
		}
		cfg, ok := parseZones(t, zs)
		if !ok {
			continue
		}
		e := editLater(mustNew(t))
		cur := map[string]*zone.Zone{}
		for _, zc := range cfg.Zones {
			z, ch := zone.Update(nil, zc)
			z = z.WithSerial(1)
			if err := e.SetZoneLater(z, ch); err != nil {
				t.Fatal(err)
			}
			cur[zc.Origin] = z
		}
		tb := e.Table()
		names := map[string]bool{}
		wasDeferred := tb.Deferred()
		// lineage are the tables left for later since the first: any one,
		// completed, rebased on the last (Rebase) answers as it does.
		var lineage []*Table
		if wasDeferred {
			if tb.Deferred() {
				lineage = append(lineage, tb)
			}
		}
		for step := range 8 {
			for zi, z := range zs {
				switch rng.IntN(6) {
				case 0:
					z.ns = rNS(rng, z.origin)
				}
				for range 1 + rng.IntN(3) {
					switch op := rng.IntN(4); {
					case op == 0 && len(z.svcs) > 0:
						i := rng.IntN(len(z.svcs))
						z.svcs = append(z.svcs[:i:i], z.svcs[i+1:]...)
					case op == 1:
						n := rName(rng)
						dup := false
						for _, s := range z.svcs {
							dup = dup || s.name == n
						}
						if !dup {
							z.svcs = append(z.svcs, rService(rng, n, zi))
						}
					case len(z.svcs) > 0:
						i := rng.IntN(len(z.svcs))
						ns := rService(rng, z.svcs[i].name, zi)
						svcs := append([]*rsvc(nil), z.svcs...)
						svcs[i] = ns
						z.svcs = svcs
					}
				}
			}
			cfg, ok := parseZones(t, zs)
			if !ok {
				continue
			}
			e := tb.Edit()
			var all []*zone.Zone
			for _, zc := range cfg.Zones {
				prev := cur[zc.Origin]
				z, ch := zone.Update(prev, zc)
				z = z.WithSerial(prev.Serial() + 1)
				if err := e.SetZone(z, ch); err != nil {
					t.Fatal(err)
				}
				cur[zc.Origin] = z
				all = append(all, z)
			}
			tb = e.Table()
			if wasDeferred && !tb.Deferred() {
				t.Fatalf("seed %d: not deferred after edit", seed)
			}
			built, err := Build(all, Options{})
			if err != nil {
				t.Fatal(err)
			}
			for _, z := range all {
				for _, n := range z.Names() {
					names[n] = true
				}
				for _, rr := range z.Records() {
					names[rr.Header().Name] = true
				}
			}
			ctx := fmt.Sprintf("seed %d step %d deferred=%v", seed, step, tb.Deferred())
			sameAnswers(t, built, tb, names, ctx)
			done, err := tb.Complete(1)
			if err != nil {
				t.Fatal(err)
			}
			if done.Deferred() || done.nodes.Len() != built.nodes.Len() {
				t.Fatalf("%s: completed nodes %d want %d", ctx, done.nodes.Len(), built.nodes.Len())
			}
			sameAnswers(t, built, done, names, ctx+", completed")
			if len(lineage) > 0 {
				from := lineage[rng.IntN(len(lineage))]
				fromDone, err := from.Complete(1)
				if err != nil {
					t.Fatal(err)
				}
				rebased, ok := tb.Rebase(from, fromDone)
				if !ok {
					t.Fatalf("%s: an earlier version's answers could not be rebased", ctx)
				}
				if rebased.Deferred() || rebased.nodes.Len() != built.nodes.Len() {
					t.Fatalf("%s: rebased: Deferred() = %v, %d names, built at once %d", ctx, rebased.Deferred(), rebased.nodes.Len(), built.nodes.Len())
				}
				sameAnswers(t, built, rebased, names, ctx+", an earlier completion rebased")
			}
			if tb.Deferred() {
				lineage = append(lineage, tb)
			}
			// sometimes continue editing the completed one
			if rng.IntN(4) == 0 {
				tb = done
				wasDeferred = false
				lineage = nil
			}
		}
	}
}
