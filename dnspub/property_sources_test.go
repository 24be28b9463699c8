package dnspub

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/grpc-config-dns/grpc-config-dns/store"
)

// The property of the issue: whatever sequence of file edits, API writes
// and restarts a publisher goes through, after each one it serves what a
// publisher started from scratch on the same objects serves — every
// answer, byte for byte, the same records and digests — with serials that
// never go back and move when the zone does, and IXFR differences that
// turn the version a secondary holds into the served one. Both sources
// are tested: a config file (TestFileSourceMatchesScratch) and the store
// (TestStoreSourceMatchesScratch). TestIncrementalMatchesScratch checks
// the incremental build of one server across reloads; these add restarts,
// policies, labels and the store, and compare with a whole server built
// from the text rather than from the config the server holds.

// srcModel is a set of zones that random edits evolve, written either as
// a publisher config (yaml) or as store objects (the specs of its zones,
// services and policies): one description, two sources.
type srcModel struct {
	zones map[string]*srcZone // by origin
	// style is how yaml lays the config out (block or flow items, order,
	// comments): formatting only.
	style uint64
}

type srcZone struct {
	ttl      int
	minimum  int  // SOA minimum; 0 leaves the default
	glue     bool // a second nameserver, inside the zone
	wideACL  bool // transfers allowed to more than 127.0.0.1
	bareHost bool // the zone's compat default
	services map[string]*srcService
	policies map[string]*srcPolicy
}

type srcService struct {
	labels    map[string]string
	addrs     []string
	port, ttl int
	config    string // JSON; "" for none
	bareHost  bool
}

type srcPolicy struct{ target, def string } // JSON

// srcField is a member of an object, its value in JSON, which YAML reads too.
type srcField struct{ key, value string }

func srcJSON(fs []srcField) string {
	var b strings.Builder
	b.WriteByte('{')
	for i, f := range fs {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%q:%s", f.key, f.value)
	}
	b.WriteByte('}')
	return b.String()
}

func srcLabelsJSON(m map[string]string) string {
	var fs []srcField
	for _, k := range slices.Sorted(maps.Keys(m)) {
		fs = append(fs, srcField{k, strconv.Quote(m[k])})
	}
	return srcJSON(fs)
}

// fields are the zone's spec in the store, and its settings in a config.
func (z *srcZone) fields() []srcField {
	ns := `["ns1.example.net."]`
	if z.glue {
		ns = `["ns1.example.net.",{"name":"ns2","addresses":["192.0.2.53"]}]`
	}
	acl := `{"allow":["127.0.0.1"]}`
	if z.wideACL {
		acl = `{"allow":["127.0.0.1","192.0.2.0/24"]}`
	}
	fs := []srcField{{"ttl", strconv.Itoa(z.ttl)}}
	if z.minimum > 0 {
		fs = append(fs, srcField{"soa", fmt.Sprintf(`{"minimum":%d}`, z.minimum)})
	}
	fs = append(fs, srcField{"nameservers", ns}, srcField{"transfer", acl})
	if z.bareHost {
		fs = append(fs, srcField{"compat", `{"bareHost":true}`})
	}
	return fs
}

func (s *srcService) fields() []srcField {
	fs := []srcField{{"ttl", strconv.Itoa(s.ttl)}}
	if len(s.addrs) > 0 {
		q := make([]string, len(s.addrs))
		for i, a := range s.addrs {
			q[i] = strconv.Quote(a)
		}
		fs = append(fs, srcField{"addresses", "[" + strings.Join(q, ",") + "]"})
	}
	if s.port != 0 {
		fs = append(fs, srcField{"port", strconv.Itoa(s.port)})
	}
	if s.config != "" {
		fs = append(fs, srcField{"serviceConfig", s.config})
	}
	if s.bareHost {
		fs = append(fs, srcField{"compat", `{"bareHost":true}`})
	}
	return fs
}

// key identifies what the store holds of a service.
func (s *srcService) key() string { return srcLabelsJSON(s.labels) + srcJSON(s.fields()) }

func (p *srcPolicy) fields() []srcField {
	return []srcField{{"targetRef", p.target}, {"default", p.def}}
}

func (m *srcModel) clone() *srcModel {
	c := &srcModel{zones: map[string]*srcZone{}, style: m.style}
	for o, z := range m.zones {
		cz := *z
		cz.services = maps.Clone(z.services) // services and policies are replaced, never edited
		cz.policies = maps.Clone(z.policies)
		c.zones[o] = &cz
	}
	return c
}

// yaml is the model as a publisher config.
func (m *srcModel) yaml() string {
	rng := rand.New(rand.NewPCG(m.style, 7))
	flow, comments := m.style%3 == 1, m.style%3 == 2
	order := func(names []string) []string {
		if m.style%2 == 1 {
			rng.Shuffle(len(names), func(i, j int) { names[i], names[j] = names[j], names[i] })
		}
		return names
	}
	item := func(b *strings.Builder, fs []srcField) {
		if flow {
			b.WriteString("      - " + srcJSON(fs) + "\n")
			return
		}
		for i, f := range fs {
			lead := "        "
			if i == 0 {
				lead = "      - "
			}
			fmt.Fprintf(b, "%s%s: %s\n", lead, f.key, f.value)
		}
		if comments {
			b.WriteString("        # formatting only\n")
		}
	}
	var b strings.Builder
	b.WriteString("zones:\n")
	for _, o := range order(slices.Sorted(maps.Keys(m.zones))) {
		z := m.zones[o]
		fmt.Fprintf(&b, "  - origin: %s\n", o)
		for _, f := range z.fields() {
			fmt.Fprintf(&b, "    %s: %s\n", f.key, f.value)
		}
		if len(z.policies) > 0 {
			b.WriteString("    policies:\n")
			for _, name := range order(slices.Sorted(maps.Keys(z.policies))) {
				item(&b, append([]srcField{{"name", strconv.Quote(name)}}, z.policies[name].fields()...))
			}
		}
		if len(z.services) == 0 {
			b.WriteString("    services: []\n")
			continue
		}
		b.WriteString("    services:\n")
		for _, name := range order(slices.Sorted(maps.Keys(z.services))) {
			s := z.services[name]
			fs := []srcField{{"name", strconv.Quote(name)}}
			if len(s.labels) > 0 {
				fs = append(fs, srcField{"labels", srcLabelsJSON(s.labels)})
			}
			item(&b, append(fs, s.fields()...))
		}
	}
	return b.String()
}

var (
	srcLabels      = []string{"a", "b", "echo", "svc", "x"}
	srcPolicyNames = []string{"all", "team-a", "tier", "one", "two"}
	// srcDefaults are policy defaults that leave every service valid.
	srcDefaults = []string{
		`{"loadBalancingConfig":[{"round_robin":{}}]}`,
		`{"loadBalancingConfig":[{"pick_first":{}}]}`,
		`{"methodConfig":[{"name":[{"service":"s%d"}],"timeout":"%ds"}]}`,
		`{"methodConfig":[{"name":[{"service":"p.P"}],"waitForReady":true}]}`,
		`{"retryThrottling":{"maxTokens":10,"tokenRatio":0.5}}`,
	}
)

// srcBadPolicyName sorts after the names of srcPolicyNames: merged last of
// the policies that select a service by name, nothing overrides it.
const srcBadPolicyName = "zz-bad"

// badPolicy returns a policy that makes a service of z invalid, if z has
// a service with a config.
func (z *srcZone) badPolicy() (*srcPolicy, bool) {
	for _, name := range slices.Sorted(maps.Keys(z.services)) {
		if name != "@" && z.services[name].config != "" {
			return &srcPolicy{target: fmt.Sprintf(`{"kind":"Service","name":%q}`, name), def: `{"retryThrottling":{"maxTokens":-1,"tokenRatio":0.1}}`}, true
		}
	}
	return nil, false
}

func randomSrcName(rng *rand.Rand) string {
	if rng.IntN(8) == 0 {
		return "@"
	}
	parts := make([]string, 1+rng.IntN(3))
	for i := range parts {
		parts[i] = srcLabels[rng.IntN(len(srcLabels))]
	}
	return strings.Join(parts, ".")
}

func randomSrcService(rng *rand.Rand, zi int) *srcService {
	s := &srcService{ttl: 10 + rng.IntN(300)}
	for i := range rng.IntN(4) {
		if rng.IntN(2) == 0 {
			s.addrs = append(s.addrs, fmt.Sprintf("10.%d.%d.%d", zi, rng.IntN(3), i+1))
		} else {
			s.addrs = append(s.addrs, fmt.Sprintf("2001:db8:%d::%d", rng.IntN(3), i+1))
		}
	}
	if len(s.addrs) > 0 && rng.IntN(2) == 0 {
		s.port = 1 + rng.IntN(65535)
	}
	if len(s.addrs) == 0 || rng.IntN(2) == 0 {
		switch rng.IntN(10) {
		case 0:
			s.config = "{}" // its config from policies alone
		case 2:
			// Larger than a UDP answer without EDNS, or with.
			s.config = fmt.Sprintf(`{"methodConfig":[{"name":[{"service":"s%s"}],"timeout":"1s"}]}`, strings.Repeat("x", 300+rng.IntN(1200)))
		case 1:
			s.config = `{"loadBalancingConfig":[{"pick_first":{}}]}`
		default:
			s.config = fmt.Sprintf(`{"methodConfig":[{"name":[{"service":"s%d"}],"timeout":"%ds"}]}`, rng.IntN(5), 1+rng.IntN(9))
		}
		s.bareHost = rng.IntN(4) == 0
	}
	s.labels = randomSrcLabels(rng)
	return s
}

func randomSrcLabels(rng *rand.Rand) map[string]string {
	l := map[string]string{}
	if rng.IntN(3) > 0 {
		l["team"] = []string{"a", "b"}[rng.IntN(2)]
	}
	if rng.IntN(2) == 0 {
		l["tier"] = []string{"x", "y"}[rng.IntN(2)]
	}
	return l
}

func randomSrcPolicy(rng *rand.Rand) *srcPolicy {
	p := &srcPolicy{def: srcDefaults[rng.IntN(len(srcDefaults))]}
	if strings.Contains(p.def, "%d") {
		p.def = fmt.Sprintf(p.def, rng.IntN(5), 1+rng.IntN(9))
	}
	switch rng.IntN(4) {
	case 0:
		p.target = `{"kind":"Zone"}`
	case 1:
		p.target = `{"kind":"Service","labels":{"team":"a"}}`
	case 2:
		p.target = `{"kind":"Service","labels":{"team":"b","tier":"x"}}`
	default:
		name := randomSrcName(rng)
		if name == "@" {
			name = "echo"
		}
		p.target = fmt.Sprintf(`{"kind":"Service","name":%q}`, name)
	}
	return p
}

// mutate makes one random edit and says what it did.
func (m *srcModel) mutate(rng *rand.Rand) string {
	origins := slices.Sorted(maps.Keys(m.zones))
	zi := rng.IntN(len(origins))
	o := origins[zi]
	z := m.zones[o]
	names := slices.Sorted(maps.Keys(z.services))
	switch op := rng.IntN(26); {
	case op == 0 && len(m.zones) < 3:
		o := fmt.Sprintf("z%d.test.", rng.IntN(4))
		if m.zones[o] != nil {
			return "nothing"
		}
		z := &srcZone{ttl: 60, services: map[string]*srcService{}, policies: map[string]*srcPolicy{}}
		for range rng.IntN(8) {
			z.services[randomSrcName(rng)] = randomSrcService(rng, len(origins))
		}
		m.zones[o] = z
		return "add zone " + o
	case op == 1 && len(m.zones) > 1:
		delete(m.zones, o)
		return "remove zone " + o
	case op == 2:
		z.ttl = 30 + rng.IntN(600)
		return fmt.Sprintf("%s ttl %d", o, z.ttl)
	case op == 3:
		z.glue = !z.glue
		return fmt.Sprintf("%s glue %v", o, z.glue)
	case op == 4:
		z.minimum = []int{0, 5, 30, 300}[rng.IntN(4)]
		return fmt.Sprintf("%s SOA minimum %d", o, z.minimum)
	case op == 5:
		z.wideACL = !z.wideACL
		return fmt.Sprintf("%s transfer ACL wide %v", o, z.wideACL)
	case op == 6:
		z.bareHost = !z.bareHost
		return fmt.Sprintf("%s compat.bareHost %v", o, z.bareHost)
	case op <= 10:
		name := srcPolicyNames[rng.IntN(len(srcPolicyNames))]
		if z.policies[name] != nil && rng.IntN(3) == 0 {
			delete(z.policies, name)
			return fmt.Sprintf("%s remove policy %s", o, name)
		}
		z.policies[name] = randomSrcPolicy(rng)
		return fmt.Sprintf("%s policy %s %s %s", o, name, z.policies[name].target, z.policies[name].def)
	case op == 11 && len(names) > 0:
		name := names[rng.IntN(len(names))]
		s := *z.services[name]
		s.labels = randomSrcLabels(rng)
		z.services[name] = &s
		return fmt.Sprintf("%s labels of %s %v", o, name, s.labels)
	case op == 12 && len(names) > 0:
		from, to := names[rng.IntN(len(names))], randomSrcName(rng)
		if z.services[to] != nil {
			return "nothing"
		}
		z.services[to] = z.services[from]
		delete(z.services, from)
		return fmt.Sprintf("%s rename %s to %s", o, from, to)
	case op == 13:
		m.style++
		return "reformat"
	default:
		name := randomSrcName(rng)
		if _, ok := z.services[name]; ok && rng.IntN(3) == 0 {
			delete(z.services, name)
			return fmt.Sprintf("%s remove %s", o, name)
		}
		z.services[name] = randomSrcService(rng, zi)
		return fmt.Sprintf("%s set %s %s", o, name, z.services[name].key())
	}
}

// newSrcModel is a zone of a few services to start from.
func newSrcModel(rng *rand.Rand) *srcModel {
	z := &srcZone{ttl: 60, services: map[string]*srcService{"@": {ttl: 60, addrs: []string{"192.0.2.1"}}}, policies: map[string]*srcPolicy{}}
	for range 16 {
		z.services[randomSrcName(rng)] = randomSrcService(rng, 0)
	}
	return &srcModel{zones: map[string]*srcZone{"z0.test.": z}}
}

// propVersion is what a version of a zone holds.
type propVersion struct {
	soa     string
	records []string // recordSet of its records, the SOA aside
}

func propVersionOf(ze *zoneEntry) propVersion {
	return propVersion{ze.cur.SOA.String(), recordSet(ze.cur.Records())}
}

// propCheck follows one server through a run (and its restarts) and
// checks each version it serves.
type propCheck struct {
	t     *testing.T
	rng   *rand.Rand
	where string
	// storeSerials says serials follow the store's revisions; else they
	// follow content (the state file).
	storeSerials bool
	// last is the last snapshot checked, nil after a restart (the new
	// server has no IXFR history).
	last *snapshot
	// served is every version served of each zone, by serial, across
	// restarts: a serial names one content.
	served map[string]map[uint32]propVersion
	// latest is the serial and digest last served of each zone, removed
	// zones included.
	latest map[string]propServed
	// present are the zones served at the last check (restarts or not).
	present map[string]bool
	// counts are what was checked, logged at the end of a run.
	counts map[string]int
}

type propServed struct {
	serial uint32
	digest [32]byte
}

func newPropCheck(t *testing.T, rng *rand.Rand, storeSerials bool) *propCheck {
	return &propCheck{t: t, rng: rng, storeSerials: storeSerials, served: map[string]map[uint32]propVersion{}, latest: map[string]propServed{}, counts: map[string]int{}}
}

// count counts the kinds of operations of a step.
func (c *propCheck) count(ops []string) {
	for _, op := range ops {
		for _, kind := range []string{"add zone", "remove zone", "policy", "labels", "rename", "reformat", "refused", "restart", "down", "resync", "unchanged"} {
			if strings.Contains(op, kind) {
				c.counts["op "+kind]++
			}
		}
	}
}

func (c *propCheck) fatalf(format string, args ...any) {
	c.t.Helper()
	c.t.Fatalf("%s: %s", c.where, fmt.Sprintf(format, args...))
}

// propScratch makes, in a fresh directory, a publisher of text whose
// serial state holds the serials and digests served: a zone it builds
// with the served digest gets the served serial, so that its answers can
// be compared byte for byte. It is not started (its table is answered in
// process) and keeps no state file.
func propScratch(t *testing.T, text string, served *snapshot) *Server {
	t.Helper()
	file := filepath.Join(t.TempDir(), "publisher.yaml")
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := newServer(Options{ConfigFile: file, StateFile: "-", WatchInterval: -1, Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	for o, ze := range served.zones {
		d := ze.cur.Digest()
		s.serials.zones[o] = serialState{Serial: ze.cur.Serial(), Digest: hex.EncodeToString(d[:]), Expire: ze.cfg.SOA.Expire}
	}
	if err := s.loadFirst(); err != nil {
		t.Fatalf("a scratch server does not start on the config:\n%v\n%s", err, text)
	}
	return s
}

var propTypes = []uint16{dns.TypeA, dns.TypeAAAA, dns.TypeTXT, dns.TypeSRV, dns.TypeNS, dns.TypeSOA, dns.TypeANY, dns.TypeMX}

// propQuery is a query with a fixed ID, by variant: over UDP without
// EDNS, over UDP with EDNS, over TCP; and whether it is over TCP.
func propQuery(name string, qtype uint16, variant int) ([]byte, bool) {
	q := new(dns.Msg)
	q.SetQuestion(name, qtype)
	q.Id = 0x5ca1
	switch variant % 3 {
	case 1:
		q.SetEdns0(1232, false)
	case 2:
		q.SetEdns0(4096, false)
	}
	raw, _ := q.Pack()
	return raw, variant%3 == 2
}

// check compares the served snapshot with a scratch publisher of text,
// and checks its serials and IXFR against the versions served before.
// addr is the server's address; want, in store mode, the serial each
// zone must have.
func (c *propCheck) check(snap *snapshot, text, addr string, want map[string]uint32) {
	c.t.Helper()
	fresh := propScratch(c.t, text, snap).snap.Load()
	got := slices.Sorted(maps.Keys(snap.zones))
	if w := slices.Sorted(maps.Keys(fresh.zones)); !slices.Equal(got, w) {
		c.fatalf("serves zones %v, a scratch build %v", got, w)
	}
	for _, o := range got {
		ze, fe := snap.zones[o], fresh.zones[o]
		v := propVersionOf(ze)
		if ze.cur.Digest() != fe.cur.Digest() {
			c.fatalf("%s: digest differs from a scratch build", o)
		}
		if fv := propVersionOf(fe); v.soa != fv.soa || !slices.Equal(v.records, fv.records) {
			c.fatalf("%s: records differ from a scratch build:\n%s\n%s\nwant:\n%s\n%s", o, v.soa, strings.Join(v.records, "\n"), fv.soa, strings.Join(fv.records, "\n"))
		}
		c.answers(snap, fresh, o)
		c.serial(o, ze, want)
		c.history(o, ze)
		c.transfers(o, ze, addr)
		if c.served[o] == nil {
			c.served[o] = map[uint32]propVersion{}
		}
		if old, ok := c.served[o][ze.cur.Serial()]; ok && (old.soa != v.soa || !slices.Equal(old.records, v.records)) {
			c.fatalf("%s: serial %d served for two contents:\n%s\n%s\nthen\n%s\n%s", o, ze.cur.Serial(), old.soa, strings.Join(old.records, "\n"), v.soa, strings.Join(v.records, "\n"))
		}
		if _, ok := c.served[o][ze.cur.Serial()]; !ok {
			c.counts["zone versions"]++
		}
		c.served[o][ze.cur.Serial()] = v
		c.latest[o] = propServed{ze.cur.Serial(), ze.cur.Digest()}
	}
	// Zones removed are refused.
	for o := range c.present {
		if snap.zones[o] == nil {
			raw, _ := propQuery(o, dns.TypeSOA, 1)
			if _, r := snap.table.Respond(nil, raw, false); r.Rcode != dns.RcodeRefused {
				c.fatalf("removed zone %s answers rcode %d", o, r.Rcode)
			}
		}
	}
	raw, tcp := propQuery("example.org.", dns.TypeA, 0)
	if a, _ := snap.table.Respond(nil, raw, tcp); string(a) != string(propRespond(fresh, raw, tcp)) {
		c.fatalf("a name outside the zones is answered otherwise than by a scratch build")
	}
	c.udp(snap, fresh, addr)
	c.last = snap
	c.present = map[string]bool{}
	for o := range snap.zones {
		c.present[o] = true
	}
}

func propRespond(s *snapshot, raw []byte, tcp bool) []byte {
	b, _ := s.table.Respond(nil, raw, tcp)
	return b
}

// answers asks both tables every name of zone o (and around them) for
// every type.
func (c *propCheck) answers(snap, fresh *snapshot, o string) {
	c.t.Helper()
	names := map[string]bool{o: true, "nope." + o: true}
	for _, z := range []*snapshot{snap, fresh} {
		for _, n := range z.zones[o].cur.Names() {
			names[n] = true
			names["child."+n] = true
		}
		for _, rr := range z.zones[o].cur.AXFR() {
			names[rr.Header().Name] = true
		}
	}
	for i, name := range slices.Sorted(maps.Keys(names)) {
		if i%4 == 0 {
			name = strings.ToUpper(name[:1]) + name[1:] // answers keep the question's case
		}
		for j, qtype := range propTypes {
			raw, tcp := propQuery(name, qtype, i+j)
			c.counts["answers"]++
			if a, b := propRespond(snap, raw, tcp), propRespond(fresh, raw, tcp); string(a) != string(b) {
				var ma, mb dns.Msg
				ma.Unpack(a)
				mb.Unpack(b)
				c.fatalf("%s %s (tcp %v): the answer differs from a scratch build's:\n%v\nwant:\n%v", name, dns.TypeToString[qtype], tcp, &ma, &mb)
			}
		}
	}
}

// udp asks the server itself, over UDP, the SOA of each zone and the TXT
// of one of its names: the bytes are the scratch build's.
func (c *propCheck) udp(snap, fresh *snapshot, addr string) {
	c.t.Helper()
	conn, err := net.Dial("udp", addr)
	if err != nil {
		c.t.Fatal(err)
	}
	defer conn.Close()
	buf := make([]byte, 65535)
	for _, o := range slices.Sorted(maps.Keys(snap.zones)) {
		names := slices.Sorted(slices.Values(snap.zones[o].cur.Names()))
		for _, q := range []struct {
			name  string
			qtype uint16
		}{{o, dns.TypeSOA}, {"_grpc_config." + names[c.rng.IntN(len(names))], dns.TypeTXT}} {
			raw, _ := propQuery(q.name, q.qtype, 1)
			var n int
			for attempt := 0; ; attempt++ { // a datagram may be lost, even here
				if _, err := conn.Write(raw); err != nil {
					c.t.Fatal(err)
				}
				conn.SetReadDeadline(time.Now().Add(2 * time.Second))
				if n, err = conn.Read(buf); err == nil {
					break
				} else if attempt == 4 {
					c.fatalf("%s %s over UDP: %v", q.name, dns.TypeToString[q.qtype], err)
				}
			}
			if want := propRespond(fresh, raw, false); string(buf[:n]) != string(want) {
				c.fatalf("%s %s over UDP: the server answers otherwise than a scratch build", q.name, dns.TypeToString[q.qtype])
			}
		}
	}
}

// serial checks zone o's serial against the one served before: in file
// mode it moves exactly when the content does, and only forward; in
// store mode it is the one the store's revisions give (want).
func (c *propCheck) serial(o string, ze *zoneEntry, want map[string]uint32) {
	c.t.Helper()
	s := ze.cur.Serial()
	prev, known := c.latest[o]
	if known && s != prev.serial && !serialGreater(s, prev.serial) {
		c.fatalf("%s: serial went back from %d to %d", o, prev.serial, s)
	}
	if c.storeSerials {
		if s != want[o] {
			c.fatalf("%s: serial %d, want %d (the base and the revision of the zone's last write)", o, s, want[o])
		}
		if known && prev.digest != ze.cur.Digest() && s == prev.serial {
			c.fatalf("%s: the content changed and serial %d did not", o, s)
		}
		return
	}
	if !known || !c.present[o] {
		// A zone served again starts at its last serial, or above it
		// (once removed longer than its SOA expire it is forgotten).
		return
	}
	if changed := prev.digest != ze.cur.Digest(); changed != (s != prev.serial) {
		c.fatalf("%s: content changed %v, serial %d -> %d", o, changed, prev.serial, s)
	}
}

// history checks the IXFR steps from the version checked last (of this
// server) to the current one: a chain of steps whose differences turn
// that version's records into the current ones.
func (c *propCheck) history(o string, ze *zoneEntry) {
	c.t.Helper()
	if c.last == nil || c.last.zones[o] == nil {
		return
	}
	from := c.last.zones[o].cur.Serial()
	if from == ze.cur.Serial() {
		return
	}
	start := slices.IndexFunc(ze.history, func(st *ixfrStep) bool { return st.from.Serial == from })
	if start < 0 {
		if len(ze.history) >= c.last.cfg.Server.IXFRHistory {
			return // trimmed
		}
		c.fatalf("%s: no IXFR step from serial %d (history of %d)", o, from, len(ze.history))
	}
	v := c.served[o][from]
	if ze.history[start].from.String() != v.soa {
		c.fatalf("%s: the IXFR step starts at %v, the version served was %s", o, ze.history[start].from, v.soa)
	}
	have := map[string]int{}
	for _, r := range v.records {
		have[r]++
	}
	serial := from
	c.counts["IXFR histories"]++
	for _, st := range ze.history[start:] {
		if st.from.Serial != serial {
			c.fatalf("%s: IXFR steps are not a chain: one ends at %d, the next starts at %d", o, serial, st.from.Serial)
		}
		for _, r := range recordSet(st.deleted) {
			if have[r]--; have[r] < 0 {
				c.fatalf("%s: the IXFR step %d→%d deletes %s, which its version lacks", o, st.from.Serial, st.to.Serial, r)
			}
		}
		for _, r := range recordSet(st.added) {
			have[r]++
		}
		serial = st.to.Serial
	}
	if serial != ze.cur.Serial() || ze.history[len(ze.history)-1].to.String() != ze.cur.SOA.String() {
		c.fatalf("%s: the IXFR steps end at %d, the zone is at %d", o, serial, ze.cur.Serial())
	}
	if after := propExpand(have); !slices.Equal(after, recordSet(ze.cur.Records())) {
		c.fatalf("%s: the IXFR steps from %d do not lead to the records served", o, from)
	}
}

func propExpand(counts map[string]int) []string {
	var out []string
	for r, n := range counts {
		for range n {
			out = append(out, r)
		}
	}
	slices.Sort(out)
	return out
}

// transfers runs IXFR over TCP as a secondary would, from the serial
// checked last (which must be answered with differences when the server
// has served both), from an older serial served (differences or the whole
// zone), and from the current one (the SOA alone); each must give the
// current version.
func (c *propCheck) transfers(o string, ze *zoneEntry, addr string) {
	c.t.Helper()
	cur := propVersionOf(ze)
	froms := map[uint32]bool{}
	if prev, ok := c.latest[o]; ok {
		froms[prev.serial] = true
	}
	if older := slices.Sorted(maps.Keys(c.served[o])); len(older) > 0 {
		froms[older[c.rng.IntN(len(older))]] = true
	}
	froms[ze.cur.Serial()] = true
	for _, from := range slices.Sorted(maps.Keys(froms)) {
		q := new(dns.Msg)
		q.SetIxfr(o, from, "ns1.example.net.", "hostmaster."+o)
		rrs, err := transferIn(c.t, addr, q, "")
		if err != nil {
			c.fatalf("%s: IXFR from %d: %v", o, from, err)
		}
		c.counts["transfers"]++
		if from == ze.cur.Serial() {
			if len(rrs) != 1 || rrs[0].String() != cur.soa {
				c.fatalf("%s: IXFR from the current serial %d answers %v", o, from, rrs)
			}
			continue
		}
		soa, records, full, err := propApplyIXFR(c.served[o][from].records, from, rrs)
		if err != nil {
			c.fatalf("%s: IXFR from %d: %v\n%v", o, from, err, rrs)
		}
		if soa != cur.soa || !slices.Equal(records, cur.records) {
			c.fatalf("%s: IXFR from %d (full %v) leads to\n%s\n%s\nnot\n%s\n%s", o, from, full, soa, strings.Join(records, "\n"), cur.soa, strings.Join(cur.records, "\n"))
		}
		if full {
			c.counts["whole-zone IXFR"]++
		} else {
			c.counts["IXFR differences"]++
		}
		if full && c.last != nil && c.last.zones[o] != nil && c.last.zones[o].cur.Serial() == from && len(ze.history) < c.last.cfg.Server.IXFRHistory {
			c.fatalf("%s: IXFR from %d, the version served before, sends the whole zone", o, from)
		}
	}
}

// propApplyIXFR applies an IXFR answer (RFC 1995: differences, or the whole
// zone) to the records of version from, and returns the SOA and records
// it leads to, and whether it was the whole zone.
func propApplyIXFR(records []string, from uint32, rrs []dns.RR) (string, []string, bool, error) {
	if len(rrs) < 3 {
		return "", nil, false, fmt.Errorf("%d records", len(rrs))
	}
	first, ok1 := rrs[0].(*dns.SOA)
	last, ok2 := rrs[len(rrs)-1].(*dns.SOA)
	if !ok1 || !ok2 || first.String() != last.String() {
		return "", nil, false, errors.New("not framed by the current SOA")
	}
	body := rrs[1 : len(rrs)-1]
	if _, ok := body[0].(*dns.SOA); !ok {
		for _, rr := range body {
			if _, ok := rr.(*dns.SOA); ok {
				return "", nil, false, errors.New("an SOA inside a full transfer")
			}
		}
		return first.String(), recordSet(body), true, nil
	}
	have := map[string]int{}
	for _, r := range records {
		have[r]++
	}
	serial := from
	for i := 0; i < len(body); {
		old, ok := body[i].(*dns.SOA)
		if !ok || old.Serial != serial {
			return "", nil, false, fmt.Errorf("a difference starts at %v, the client is at %d", body[i], serial)
		}
		for i++; i < len(body); i++ {
			if _, ok := body[i].(*dns.SOA); ok {
				break
			}
			if r := body[i].String(); have[r] == 0 {
				return "", nil, false, fmt.Errorf("deletes %s, which version %d lacks", r, serial)
			} else {
				have[r]--
			}
		}
		if i == len(body) {
			return "", nil, false, errors.New("a difference without its new SOA")
		}
		serial = body[i].(*dns.SOA).Serial
		for i++; i < len(body); i++ {
			if _, ok := body[i].(*dns.SOA); ok {
				break
			}
			have[body[i].String()]++
		}
	}
	if serial != first.Serial {
		return "", nil, false, fmt.Errorf("the differences end at %d, not %d", serial, first.Serial)
	}
	return first.String(), propExpand(have), false, nil
}

// propRun is what a run of either source shares: its server and logs.
type propRun struct {
	t    *testing.T
	srv  *Server
	addr string
	logs *syncBuffer
	// after runs at the end of the test, once the server stopped.
	after func()
}

func (r *propRun) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := r.srv.Shutdown(ctx); err != nil {
		r.t.Errorf("shutdown: %v", err)
	}
	r.srv = nil
}

func (r *propRun) start(opts Options) {
	r.t.Helper()
	opts.Listen = "127.0.0.1:0"
	opts.Logger = slog.New(slog.NewTextHandler(r.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	s, err := New(opts)
	if err != nil {
		r.t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		r.t.Fatal(err)
	}
	r.srv, r.addr = s, s.Addr().String()
}

func newPropRun(t *testing.T) *propRun {
	r := &propRun{t: t, logs: &syncBuffer{}}
	t.Cleanup(func() {
		if r.srv != nil {
			r.stop()
		}
		if r.after != nil {
			r.after()
		}
		if t.Failed() {
			l := r.logs.String()
			t.Logf("server log (the end):\n%s", l[max(0, len(l)-16<<10):])
		}
	})
	return r
}

func propSize() (seeds, steps int) {
	if raceEnabled {
		return 3, 16
	}
	return 12, 40
}

// TestFileSourceMatchesScratch: random edits of a config file (zones,
// their settings, services, labels, policies, formatting), each followed
// by a reload or a restart on the same file and state file (or by a
// config that a policy makes invalid, which changes nothing), serve what
// a publisher started from scratch on the file serves; serials move
// exactly when a zone's content does, never back, across restarts; IXFR
// leads from any version served to the current one.
func TestFileSourceMatchesScratch(t *testing.T) {
	seeds, steps := propSize()
	for seed := range uint64(seeds) {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 11))
			m := newSrcModel(rng)
			file := filepath.Join(t.TempDir(), "publisher.yaml")
			if err := os.WriteFile(file, []byte(m.yaml()), 0o644); err != nil {
				t.Fatal(err)
			}
			var clock atomic.Int64
			clock.Store(2_000_000_000)
			opts := Options{ConfigFile: file, WatchInterval: -1, Now: func() time.Time { return time.Unix(clock.Load(), 0) }}
			run := newPropRun(t)
			run.start(opts)
			c := newPropCheck(t, rng, false)
			c.where = fmt.Sprintf("seed %d, start", seed)
			c.check(run.srv.snap.Load(), m.yaml(), run.addr, nil)
			ts := &testServer{t: t, file: file}
			for step := range steps {
				var ops []string
				for range 1 + rng.IntN(4) {
					ops = append(ops, m.mutate(rng))
				}
				switch tick := rng.IntN(20); tick {
				case 0:
					// Past the SOA expire (14 days) of the zones removed:
					// they are forgotten.
					clock.Add(15 * 86400)
					ops = append(ops, "clock +15d")
				case 1:
					clock.Add(-86400) // serials still go forward
					ops = append(ops, "clock -1d")
				default:
					clock.Add(int64(tick % 2))
				}
				text := m.yaml()
				action := rng.IntN(10)
				c.where = fmt.Sprintf("seed %d step %d (%s)", seed, step, strings.Join(ops, "; "))
				if action == 0 {
					// A policy that makes a service invalid: refused,
					// nothing published.
					for _, o := range slices.Sorted(maps.Keys(m.zones)) {
						p, ok := m.zones[o].badPolicy()
						if !ok {
							continue
						}
						bad := m.clone()
						bad.zones[o].policies[srcBadPolicyName] = p
						before := run.srv.snap.Load()
						ts.write(bad.yaml())
						var ce *ConfigError
						if err := run.srv.Reload(); !errors.As(err, &ce) {
							c.fatalf("a config whose policy breaks a service of %s: %v, want a ConfigError", o, err)
						}
						if run.srv.snap.Load() != before {
							c.fatalf("a refused config published a version")
						}
						ops = append(ops, "refused "+o)
						break
					}
				}
				ts.write(text)
				if action == 1 || action == 2 {
					run.stop()
					run.start(opts)
					c.last = nil
					ops = append(ops, "restart")
				} else if err := run.srv.Reload(); err != nil {
					c.fatalf("reload: %v\n%s", err, text)
				}
				c.where = fmt.Sprintf("seed %d step %d (%s)", seed, step, strings.Join(ops, "; "))
				c.check(run.srv.snap.Load(), text, run.addr, nil)
				c.count(ops)
			}
			t.Logf("checked: %v", c.counts)
		})
	}
}

// propStoreRun drives a store with API writes, mirroring in stored what it
// holds.
type propStoreRun struct {
	*propRun
	c      *propCheck
	rng    *rand.Rand
	dir    string
	st     *store.Store
	stored *srcModel
	rev    int64            // the store's revision
	last   map[string]int64 // the revision of each zone's last write
	// resyncing is the server asked to read the store whole again, and
	// resyncs how many times it had read it before.
	resyncing *Server
	resyncs   float64
}

func (r *propStoreRun) revision() int64 {
	r.t.Helper()
	rev, err := r.st.Revision(context.Background())
	if err != nil {
		r.c.fatalf("revision: %v", err)
	}
	return rev
}

// write runs one API write to zone o that must store something (or,
// unchanged, nothing) and notes its revision.
func (r *propStoreRun) write(o, what string, unchanged bool, f func(ctx context.Context) error) {
	r.t.Helper()
	if err := f(context.Background()); err != nil {
		r.c.fatalf("%s: %v", what, err)
	}
	rev := r.revision()
	switch {
	case unchanged && rev != r.rev:
		r.c.fatalf("%s stored an unchanged object: revision %d -> %d", what, r.rev, rev)
	case !unchanged && rev <= r.rev:
		r.c.fatalf("%s stored nothing: revision %d", what, rev)
	case !unchanged:
		r.rev, r.last[o] = rev, rev
	}
}

func srcServiceObject(o, name string, s *srcService) *store.Object {
	return &store.Object{Metadata: store.Metadata{Name: name, Zone: strings.TrimSuffix(o, "."), Labels: s.labels}, Spec: json.RawMessage(srcJSON(s.fields()))}
}

// sync writes to the store what differs between what it holds and want,
// in a random order, some services in batches.
func (r *propStoreRun) sync(want *srcModel) {
	r.t.Helper()
	origins := slices.Sorted(maps.Keys(r.stored.zones))
	for o := range want.zones {
		if r.stored.zones[o] == nil {
			origins = append(origins, o)
		}
	}
	r.rng.Shuffle(len(origins), func(i, j int) { origins[i], origins[j] = origins[j], origins[i] })
	for _, o := range origins {
		have, w := r.stored.zones[o], want.zones[o]
		zone := strings.TrimSuffix(o, ".")
		if w == nil {
			for _, name := range slices.Sorted(maps.Keys(have.policies)) {
				r.write(o, "delete policy "+name, false, func(ctx context.Context) error { _, err := r.st.DeletePolicy(ctx, zone, name, ""); return err })
			}
			for _, name := range slices.Sorted(maps.Keys(have.services)) {
				r.write(o, "delete service "+name, false, func(ctx context.Context) error { _, err := r.st.DeleteService(ctx, zone, name, ""); return err })
			}
			r.write(o, "delete zone "+o, false, func(ctx context.Context) error { _, err := r.st.DeleteZone(ctx, zone, ""); return err })
			continue
		}
		if spec := srcJSON(w.fields()); have == nil || srcJSON(have.fields()) != spec {
			r.write(o, "put zone "+o, false, func(ctx context.Context) error {
				_, _, err := r.st.PutZone(ctx, zone, &store.Object{Spec: json.RawMessage(spec)})
				return err
			})
		}
		if have == nil {
			have = &srcZone{}
		}
		var writes []func()
		var changed []string
		for _, name := range slices.Sorted(maps.Keys(w.services)) {
			if s := have.services[name]; s == nil || s.key() != w.services[name].key() {
				changed = append(changed, name)
			}
		}
		if len(changed) >= 2 && r.rng.IntN(2) == 0 {
			batch := slices.Clone(changed)
			writes = append(writes, func() {
				var objs []*store.Object
				for _, name := range batch {
					objs = append(objs, srcServiceObject(o, name, w.services[name]))
				}
				r.write(o, fmt.Sprintf("put services %v", batch), false, func(ctx context.Context) error {
					res, err := r.st.PutServices(ctx, zone, objs)
					if err == nil && res.Created+res.Configured != len(batch) {
						err = fmt.Errorf("%+v", res)
					}
					return err
				})
			})
			changed = nil
		}
		for _, name := range changed {
			writes = append(writes, func() {
				r.write(o, "put service "+name, false, func(ctx context.Context) error {
					_, _, err := r.st.PutService(ctx, zone, name, srcServiceObject(o, name, w.services[name]))
					return err
				})
			})
		}
		for _, name := range slices.Sorted(maps.Keys(have.services)) {
			if w.services[name] == nil {
				writes = append(writes, func() {
					r.write(o, "delete service "+name, false, func(ctx context.Context) error { _, err := r.st.DeleteService(ctx, zone, name, ""); return err })
				})
			}
		}
		for _, name := range slices.Sorted(maps.Keys(w.policies)) {
			if p := have.policies[name]; p == nil || *p != *w.policies[name] {
				spec := srcJSON(w.policies[name].fields())
				writes = append(writes, func() {
					r.write(o, "put policy "+name, false, func(ctx context.Context) error {
						_, _, err := r.st.PutPolicy(ctx, zone, name, &store.Object{Spec: json.RawMessage(spec)})
						return err
					})
				})
			}
		}
		for _, name := range slices.Sorted(maps.Keys(have.policies)) {
			if w.policies[name] == nil {
				writes = append(writes, func() {
					r.write(o, "delete policy "+name, false, func(ctx context.Context) error { _, err := r.st.DeletePolicy(ctx, zone, name, ""); return err })
				})
			}
		}
		r.rng.Shuffle(len(writes), func(i, j int) { writes[i], writes[j] = writes[j], writes[i] })
		for _, f := range writes {
			f()
		}
	}
	r.stored = want.clone()
}

// extras are writes that must change nothing: a service or zone written
// again as stored, a policy that makes a service invalid (refused).
func (r *propStoreRun) extras() []string {
	r.t.Helper()
	var ops []string
	origins := slices.Sorted(maps.Keys(r.stored.zones))
	o := origins[r.rng.IntN(len(origins))]
	z, zone := r.stored.zones[o], strings.TrimSuffix(o, ".")
	if r.rng.IntN(4) == 0 {
		spec := srcJSON(z.fields())
		r.write(o, "put zone "+o+" unchanged", true, func(ctx context.Context) error {
			_, created, err := r.st.PutZone(ctx, zone, &store.Object{Spec: json.RawMessage(spec)})
			if err == nil && created {
				err = errors.New("created")
			}
			return err
		})
		ops = append(ops, "unchanged zone")
	}
	if names := slices.Sorted(maps.Keys(z.services)); len(names) > 0 && r.rng.IntN(4) == 0 {
		name := names[r.rng.IntN(len(names))]
		r.write(o, "put service "+name+" unchanged", true, func(ctx context.Context) error {
			_, _, err := r.st.PutService(ctx, zone, name, srcServiceObject(o, name, z.services[name]))
			return err
		})
		ops = append(ops, "unchanged "+name)
	}
	if p, ok := z.badPolicy(); ok && r.rng.IntN(8) == 0 {
		r.write(o, "put policy bad", true, func(ctx context.Context) error {
			_, _, err := r.st.PutPolicy(ctx, zone, srcBadPolicyName, &store.Object{Spec: json.RawMessage(srcJSON(p.fields()))})
			if err == nil {
				return errors.New("a policy that makes a service invalid was stored")
			}
			return nil
		})
		ops = append(ops, "refused policy")
	}
	return ops
}

func (r *propStoreRun) open() {
	st, err := store.Open(context.Background(), store.Options{Location: r.dir, History: 100})
	if err != nil {
		r.t.Fatal(err)
	}
	r.st = st
}

func (r *propStoreRun) startServer() {
	r.t.Helper()
	r.start(Options{Store: r.st, StorePing: time.Second})
	r.c.last = nil
}

// caughtUp waits until the server serves the store's revision, and has
// read the store whole again if asked to.
func (r *propStoreRun) caughtUp() *snapshot {
	r.t.Helper()
	if r.resyncing == r.srv {
		for deadline := time.Now().Add(20 * time.Second); testCounter(r.t, r.srv.feed.resyncs) <= r.resyncs || r.srv.Ready() != nil; time.Sleep(2 * time.Millisecond) {
			if time.Now().After(deadline) {
				r.c.fatalf("the store was not read again after a SIGHUP (%v)", r.srv.Ready())
			}
		}
	}
	r.resyncing = nil
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(2 * time.Millisecond) {
		snap := r.srv.snap.Load()
		if snap.storeRev >= r.rev {
			if snap.storeRev != r.rev {
				r.c.fatalf("serves revision %d, beyond the store's %d", snap.storeRev, r.rev)
			}
			return snap
		}
		if time.Now().After(deadline) {
			r.c.fatalf("serves revision %d, the store is at %d", snap.storeRev, r.rev)
		}
	}
}

// TestStoreSourceMatchesScratch: random API writes to a store (zones,
// services one by one and in batches, deletions, labels, policies; writes
// that store nothing, writes refused), with restarts of the server and of
// the store, now and then while writes go on, and full reads of the store
// (SIGHUP): once the server serves the store's revision, it serves what a
// publisher started from scratch on a config file of the same objects
// serves, byte for byte; each zone's serial is the store's base plus the
// revision of the zone's last write (so it never goes back, moves with
// every write to the zone and with no other); IXFR leads from any version
// served to the current one.
func TestStoreSourceMatchesScratch(t *testing.T) {
	seeds, steps := propSize()
	for seed := range uint64(seeds) {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 13))
			r := &propStoreRun{propRun: newPropRun(t), rng: rng, dir: t.TempDir(), stored: &srcModel{zones: map[string]*srcZone{}}, last: map[string]int64{}}
			r.open()
			r.after = func() { r.st.Close() }
			r.c = newPropCheck(t, rng, true)
			r.c.where = fmt.Sprintf("seed %d, start", seed)
			base, err := r.st.SerialBase(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			m := newSrcModel(rng)
			r.sync(m)
			r.startServer()
			check := func() {
				t.Helper()
				snap := r.caughtUp()
				if err := r.srv.Ready(); err != nil {
					r.c.fatalf("not ready: %v", err)
				}
				want := map[string]uint32{}
				for o := range m.zones {
					want[o] = base + uint32(r.last[o])
				}
				r.c.check(snap, m.yaml(), r.addr, want)
			}
			check()
			for step := range steps {
				var ops []string
				for range 1 + rng.IntN(4) {
					ops = append(ops, m.mutate(rng))
				}
				r.c.where = fmt.Sprintf("seed %d step %d (%s)", seed, step, strings.Join(ops, "; "))
				restart := rng.IntN(10)
				reopen := rng.IntN(2) == 0
				if restart == 0 {
					// Written while the server is down.
					r.stop()
					if reopen {
						r.st.Close()
						r.open()
					}
					ops = append(ops, "down")
				}
				if rng.IntN(8) == 0 && r.srv != nil {
					// SIGHUP: the whole store is read again, beside the
					// writes.
					r.resyncing, r.resyncs = r.srv, testCounter(t, r.srv.feed.resyncs)
					r.srv.Reload()
					ops = append(ops, "resync")
				}
				r.sync(m)
				ops = append(ops, r.extras()...)
				if restart == 1 {
					// Stopped at once after the writes, whether it had
					// followed them or not.
					r.stop()
					if reopen {
						r.st.Close()
						r.open()
					}
					ops = append(ops, "restart")
				}
				if r.srv == nil {
					r.startServer()
				}
				r.c.where = fmt.Sprintf("seed %d step %d (%s)", seed, step, strings.Join(ops, "; "))
				check()
				r.c.count(ops)
			}
			t.Logf("checked: %v", r.c.counts)
		})
	}
}
