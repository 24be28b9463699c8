package dnspub

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/grpc-config-dns/grpc-config-dns/dnspub/dnssec"
	"github.com/grpc-config-dns/grpc-config-dns/model"
)

// testParent is the parent zone of a rollover test: it serves the DS
// RRset of its child (a parental agent), and, as a registry that polls
// its children (RFC 7344), copies the child's CDS records into it some
// time after they change.
type testParent struct {
	mu   sync.Mutex
	ds   []*dns.DS
	ttl  uint32
	addr string
}

func startTestParent(t *testing.T, ttl uint32) *testParent {
	p := &testParent{ttl: ttl}
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p.addr = pc.LocalAddr().String()
	srv := &dns.Server{PacketConn: pc, Handler: dns.HandlerFunc(func(w dns.ResponseWriter, q *dns.Msg) {
		m := new(dns.Msg)
		m.SetReply(q)
		m.Authoritative = true
		p.mu.Lock()
		for _, ds := range p.ds {
			if q.Question[0].Qtype == dns.TypeDS && strings.EqualFold(q.Question[0].Name, ds.Hdr.Name) {
				c := *ds
				c.Hdr.Ttl = p.ttl
				m.Answer = append(m.Answer, &c)
			}
		}
		p.mu.Unlock()
		w.WriteMsg(m)
	})}
	go srv.ActivateAndServe()
	t.Cleanup(func() { srv.Shutdown() })
	return p
}

func (p *testParent) set(ds []*dns.DS) {
	p.mu.Lock()
	p.ds = ds
	p.mu.Unlock()
}

// TestSEPRollover follows a signed zone through rollovers of the key its
// parent's DS names (kskLifetime), with a parent that polls the zone's
// CDS and publishes a DS two hours after it changes, on a clock moved 20
// minutes at a time, as a validating resolver caching every record for
// its TTL would see it: whatever DS RRset it may hold, the DNSKEY RRset
// is signed by a key it names; a key signs other RRsets only once its
// DNSKEY has been published longer than that RRset's TTL; a key leaves
// the DNSKEY RRset only once no signature it made can still be cached;
// the old key goes only after the parent named the new one. For a CSK,
// for a KSK whose ZSK rolls too, and for a ZSK alone; with a restart in
// the middle (the key files keep the timing).
func TestSEPRollover(t *testing.T) {
	for _, tc := range []struct {
		name, dnssec string
		parent       string
		zsks         int // zone-signing keys that sign in 25 days, at least
	}{
		{"csk", "{kskLifetime: 10d, parentalAgents: [%s]}", "agent", 0},
		// The ZSK rolls too, every 4 days (RFC 7583 §3.2, pre-publication).
		{"ksk-zsk", "{keys: ksk-zsk, zskLifetime: 4d, kskLifetime: 10d, parentalAgents: [%s]}", "agent", 6},
		// A parent that never publishes the new DS: the old key stays.
		{"silent-parent", "{kskLifetime: 10d, parentalAgents: [%s]}", "silent", 0},
		// No parental agents: the operator runs dnssec ds-seen once the
		// parent publishes the DS.
		{"by-hand", "{kskLifetime: 10d}%.0s", "operator", 0},
		// The ZSK alone rolls; the KSK stays.
		{"zsk-only", "{keys: ksk-zsk, zskLifetime: 10d}%.0s", "silent", 3},
	} {
		t.Run(tc.name, func(t *testing.T) { testSEPRollover(t, tc.dnssec, tc.parent, tc.zsks) })
	}
}

func testSEPRollover(t *testing.T, dnssecYAML string, parentKind string, wantZSKs int) {
	silent := parentKind == "silent"
	const ttl, dsTTL, registryDelay = 300, 3600, 2 * 3600
	parent := startTestParent(t, dsTTL)
	dir := t.TempDir()
	file := filepath.Join(dir, "p.yaml")
	os.WriteFile(file, []byte(strings.Replace(string(model.Example), "    ttl: 30s\n", fmt.Sprintf("    ttl: %d\n    dnssec: %s\n", ttl, fmt.Sprintf(dnssecYAML, parent.addr)), 1)), 0o644)
	var clock atomic.Int64
	t0 := int64(2_000_000_000)
	clock.Store(t0)
	now := func() time.Time { return time.Unix(clock.Load(), 0) }
	start := func() *Server {
		s, err := New(Options{ConfigFile: file, Listen: "127.0.0.1:0", WatchInterval: -1, Logger: discardLogger(), Now: now})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	s := start()
	origin := "example.test."

	type dsAt struct {
		from int64
		tags []uint16
	}
	var dsHistory []dsAt // the parent's DS RRsets, from when
	var cdsSince int64
	var cdsTags []uint16
	firstSeen := map[uint16]int64{}
	lastSigned := map[uint16]int64{}
	var published map[uint16]bool
	seps := map[uint16]bool{}
	signedData := map[uint16]bool{} // keys that signed other RRsets than DNSKEY
	step := func() {
		t.Helper()
		s.checkParents()
		if err := s.refreshDue(); err != nil {
			t.Fatal(err)
		}
		at := clock.Load()
		z := s.snap.Load().zones[origin].cur
		keys := map[uint16]bool{}
		var cds []*dns.CDS
		for _, rr := range z.RecordsAt(origin) {
			switch rr := rr.(type) {
			case *dns.DNSKEY:
				keys[rr.KeyTag()] = true
				if rr.Flags&dns.SEP != 0 {
					seps[rr.KeyTag()] = true
				}
				if _, ok := firstSeen[rr.KeyTag()]; !ok {
					firstSeen[rr.KeyTag()] = at
				}
			case *dns.CDS:
				cds = append(cds, rr)
			}
		}
		// The registry: the DS RRset follows the CDS RRset after a delay.
		var tags []uint16
		for _, c := range cds {
			tags = append(tags, c.KeyTag)
		}
		slices.Sort(tags)
		if !slices.Equal(tags, cdsTags) {
			cdsTags, cdsSince = tags, at
		}
		if len(dsHistory) == 0 || !silent && !slices.Equal(dsHistory[len(dsHistory)-1].tags, cdsTags) && at-cdsSince >= registryDelay {
			var ds []*dns.DS
			for _, c := range cds {
				ds = append(ds, &dns.DS{Hdr: dns.RR_Header{Name: c.Hdr.Name, Rrtype: dns.TypeDS, Class: dns.ClassINET}, KeyTag: c.KeyTag, Algorithm: c.Algorithm, DigestType: c.DigestType, Digest: c.Digest})
			}
			parent.set(ds)
			dsHistory = append(dsHistory, dsAt{at, cdsTags})
			if parentKind == "operator" && len(cdsTags) > 1 {
				if _, err := dnssec.MarkDSSeen(file+".keys", origin, now()); err != nil {
					t.Logf("at +%ds: dnssec ds-seen: %v", at-t0, err)
				}
			}
		}
		var dnskeySigners []uint16
		for _, rr := range z.Records() {
			sig, ok := rr.(*dns.RRSIG)
			if !ok {
				continue
			}
			if !keys[sig.KeyTag] {
				t.Fatalf("at +%ds: %s %s signed by key %d, not in the DNSKEY RRset", at-t0, sig.Hdr.Name, dns.TypeToString[sig.TypeCovered], sig.KeyTag)
			}
			if sig.TypeCovered == dns.TypeDNSKEY {
				dnskeySigners = append(dnskeySigners, sig.KeyTag)
				continue
			}
			if firstSeen[sig.KeyTag] != t0 && at-firstSeen[sig.KeyTag] < ttl {
				t.Fatalf("at +%ds: key %d signs %s %s %ds after it was published, less than the DNSKEY TTL", at-t0, sig.KeyTag, sig.Hdr.Name, dns.TypeToString[sig.TypeCovered], at-firstSeen[sig.KeyTag])
			}
			lastSigned[sig.KeyTag] = at
			signedData[sig.KeyTag] = true
		}
		// Every DS RRset a resolver may hold (the parent's now, and those
		// it served within the DS TTL) names a key that signs the DNSKEY
		// RRset.
		for i, h := range dsHistory {
			if i+1 < len(dsHistory) && dsHistory[i+1].from <= at-dsTTL {
				continue
			}
			if !slices.ContainsFunc(h.tags, func(tag uint16) bool { return slices.Contains(dnskeySigners, tag) }) {
				t.Fatalf("at +%ds: a resolver holding the DS RRset %v (from +%ds) finds the DNSKEY RRset signed by %v only", at-t0, h.tags, h.from-t0, dnskeySigners)
			}
		}
		for tag := range published {
			if !keys[tag] && at-lastSigned[tag] < ttl {
				t.Fatalf("at +%ds: key %d left the DNSKEY RRset %ds after its last signature, less than the TTL", at-t0, tag, at-lastSigned[tag])
			}
		}
		published = keys
	}
	for clock.Load() < t0+25*86400 {
		step()
		clock.Add(20 * 60)
		if clock.Load() == t0+15*86400 {
			s.Shutdown(context.Background())
			s = start()
		}
	}
	s.Shutdown(context.Background())
	var changes []string
	for _, h := range dsHistory {
		changes = append(changes, fmt.Sprintf("+%dh %v", (h.from-t0)/3600, h.tags))
	}
	t.Logf("parent's DS RRsets: %s; keys published at the end: %v", strings.Join(changes, ", "), published)
	zsks := 0
	for tag := range signedData {
		if !seps[tag] {
			zsks++
		}
	}
	if zsks < wantZSKs {
		t.Errorf("%d zone-signing keys signed in 25 days, want %d or more", zsks, wantZSKs)
	}
	first := dsHistory[0].tags[0]
	if silent {
		if !published[first] || len(dsHistory) != 1 {
			t.Errorf("the parent never named a new key, yet the zone's first key %d is gone", first)
		}
		return
	}
	if len(seps) < 3 {
		t.Errorf("%d SEP keys in 25 days with a 10-day lifetime, want 3", len(seps))
	}
	if len(dsHistory) < 5 {
		t.Errorf("the parent's DS changed %d times, want 4 (two double-DS rollovers)", len(dsHistory)-1)
	}
	if published[first] {
		t.Errorf("the zone's first key %d is still published after two rollovers", first)
	}
}

// TestRolloverKeyWriteFails: when a rollover's key files cannot be
// written (here the key directory is gone, a file in its place, as a
// full or lost volume would fail it), the server keeps serving the
// version it had, with its serial, and says why; once the directory is
// back, the next refresh rolls the key and publishes a higher serial.
func TestRolloverKeyWriteFails(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "p.yaml")
	os.WriteFile(file, []byte(strings.Replace(string(model.Example), "    ttl: 30s\n", "    ttl: 300\n    dnssec: {keys: ksk-zsk, zskLifetime: 1d}\n", 1)), 0o644)
	var clock atomic.Int64
	clock.Store(2_000_000_000)
	s, err := New(Options{ConfigFile: file, Listen: "127.0.0.1:0", WatchInterval: -1, Logger: discardLogger(), Now: func() time.Time { return time.Unix(clock.Load(), 0) }})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown(context.Background())
	origin := "example.test."
	served := func() (uint32, string) {
		z := s.snap.Load().zones[origin].cur
		var keys []string
		for _, rr := range z.RecordsAt(origin) {
			if k, ok := rr.(*dns.DNSKEY); ok {
				keys = append(keys, fmt.Sprint(k.KeyTag()))
			}
		}
		return z.Serial(), strings.Join(keys, " ")
	}
	serial0, keys0 := served()
	keyDir := file + ".keys"
	os.Rename(keyDir, keyDir+".away")
	os.WriteFile(keyDir, []byte("not a directory"), 0o644)
	clock.Add(86400)
	if err := s.refreshDue(); err == nil {
		t.Fatal("a rollover whose key files cannot be written succeeded")
	}
	if serial, keys := served(); serial != serial0 || keys != keys0 {
		t.Fatalf("after the failed rollover: serial %d keys %s; before: %d %s", serial, keys, serial0, keys0)
	}
	os.Remove(keyDir)
	os.Rename(keyDir+".away", keyDir)
	if err := s.refreshDue(); err != nil {
		t.Fatal(err)
	}
	if serial, keys := served(); serial <= serial0 || keys == keys0 {
		t.Errorf("after the directory came back: serial %d keys %s; before: %d %s", serial, keys, serial0, keys0)
	}
}
