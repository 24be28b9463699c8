//go:build tooltest

package tooltest

import (
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/grpc-config-dns/grpc-config-dns/dnspub/dnssec"
)

// signedParent is a signed parent zone test. for example.test.: its
// DNSKEY, the child's DS and delegation, and NSEC denial, signed as
// asked (a test's own authoritative server: no tool serves a zone whose
// DS RRset a test changes every second). It is the registry too: it
// polls the child's CDS RRset and publishes it as the DS RRset a while
// after it changes (RFC 7344).
type signedParent struct {
	keys *dnssec.KeySet
	port string
	mu   sync.Mutex
	ds   []dns.RR
}

func startSignedParent(t *testing.T) *signedParent {
	t.Helper()
	keys, err := dnssec.Load(t.TempDir(), "test.", dnssec.Options{Algorithm: dns.ECDSAP256SHA256, Generate: true})
	if err != nil {
		t.Fatal(err)
	}
	pc, l := listenBoth(t)
	_, port, _ := net.SplitHostPort(pc.LocalAddr().String())
	p := &signedParent{keys: keys, port: port}
	h := dns.HandlerFunc(p.answer)
	udp := &dns.Server{PacketConn: pc, Handler: h}
	tcp := &dns.Server{Listener: l, Handler: h}
	go udp.ActivateAndServe()
	go tcp.ActivateAndServe()
	t.Cleanup(func() { udp.Shutdown(); tcp.Shutdown() })
	return p
}

// anchor is the parent's DS, as Unbound's trust-anchor-file takes it.
func (p *signedParent) anchor() string {
	var b strings.Builder
	for _, ds := range p.keys.DS(3600) {
		b.WriteString(ds.String() + "\n")
	}
	return b.String()
}

// answer answers from the parent zone with every RRset signed.
func (p *signedParent) answer(w dns.ResponseWriter, q *dns.Msg) {
	m := new(dns.Msg)
	m.SetReply(q)
	m.Authoritative = true
	name, qtype := strings.ToLower(q.Question[0].Name), q.Question[0].Qtype
	mk := func(text string) dns.RR { rr, _ := dns.NewRR(text); return rr }
	soa := mk("test. 1 IN SOA ns.test. admin.test. 1 3600 600 86400 1")
	nsecs := []dns.RR{mk("test. 1 IN NSEC example.test. NS SOA RRSIG NSEC DNSKEY"), mk("example.test. 1 IN NSEC test. NS DS RRSIG NSEC")}
	signed := func(rrs ...dns.RR) []dns.RR {
		if len(rrs) == 0 {
			return nil
		}
		now := uint32(time.Now().Unix())
		sigs, err := p.keys.Sign(rrs, now-3600, now+3600)
		if err != nil {
			panic(err)
		}
		return append(rrs, sigs...)
	}
	p.mu.Lock()
	ds := slices.Clone(p.ds)
	p.mu.Unlock()
	switch {
	case name == "test." && qtype == dns.TypeSOA:
		m.Answer = signed(soa)
	case name == "test." && qtype == dns.TypeNS:
		m.Answer = signed(mk("test. 1 IN NS ns.test."))
	case name == "test." && qtype == dns.TypeDNSKEY:
		m.Answer = signed(p.keys.DNSKEYs(1)...)
	case name == "example.test." && qtype == dns.TypeDS:
		m.Answer = signed(ds...)
	case name == "test.":
		m.Ns = append(signed(soa), signed(nsecs[0])...)
	case name == "example.test." || strings.HasSuffix(name, ".example.test."):
		// A referral to the child (Unbound asks the child itself: a stub).
		m.Authoritative = false
		m.Ns = append([]dns.RR{mk("example.test. 1 IN NS ns1.example.test.")}, signed(ds...)...)
	default:
		m.Rcode = dns.RcodeNameError
		m.Ns = slices.Concat(signed(soa), signed(nsecs[0]), signed(nsecs[1]))
	}
	w.WriteMsg(m)
}

// register copies the child's CDS RRset (asked of addr) into the DS
// RRset delay after it changes, until stop is closed.
func (p *signedParent) register(t *testing.T, addr string, delay time.Duration, stop chan struct{}, changes *[]string) {
	var want []dns.RR
	var since time.Time
	tags := func(rrs []dns.RR) string {
		var out []string
		for _, rr := range rrs {
			out = append(out, strings.Fields(rr.String())[4])
		}
		slices.Sort(out)
		return strings.Join(out, ",")
	}
	for {
		select {
		case <-stop:
			return
		case <-time.After(200 * time.Millisecond):
		}
		m := new(dns.Msg)
		m.SetQuestion("example.test.", dns.TypeCDS)
		r, _, err := (&dns.Client{Net: "tcp", Timeout: time.Second}).Exchange(m, addr)
		if err != nil {
			continue
		}
		var cds []dns.RR
		for _, rr := range r.Answer {
			if c, ok := rr.(*dns.CDS); ok {
				cds = append(cds, &dns.DS{Hdr: dns.RR_Header{Name: "example.test.", Rrtype: dns.TypeDS, Class: dns.ClassINET, Ttl: 1}, KeyTag: c.KeyTag, Algorithm: c.Algorithm, DigestType: c.DigestType, Digest: c.Digest})
			}
		}
		if tags(cds) != tags(want) {
			want, since = cds, time.Now()
		}
		p.mu.Lock()
		if tags(p.ds) != tags(want) && (len(p.ds) == 0 || time.Since(since) >= delay) {
			p.ds = want
			*changes = append(*changes, tags(want))
		}
		p.mu.Unlock()
	}
}

// TestUnboundThroughCSKRollover: Unbound, trusting only the parent
// zone's key, validates the zone without a single SERVFAIL while its CSK
// is rolled by double-DS, timings shortened by configuration (a TTL of
// 1 s, a key lifetime of 6 s): the publisher publishes the new key, names
// it in CDS, the parent (which polls CDS) publishes its DS a second
// later, the publisher sees it there (parentalAgents) and retires the
// old key.
func TestUnboundThroughCSKRollover(t *testing.T) {
	need(t, "unbound")
	parent := startSignedParent(t)
	cfg := strings.Replace(signedConfig("", []string{"api"}), "    ttl: 60\n    dnssec: {algorithm: ecdsap256sha256, keys: csk}\n",
		"    ttl: 1\n    soa: {minimum: 1}\n    dnssec: {keys: csk, kskLifetime: 6s, parentalAgents: [127.0.0.1:"+parent.port+"], signatureValidity: 1h, signatureRefresh: 30m}\n", 1)
	if cfg == signedConfig("", []string{"api"}) {
		t.Fatal("the config was not changed")
	}
	p := startPublisher(t, cfg)
	stop := make(chan struct{})
	var changes []string
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); parent.register(t, p.addr, time.Second, stop, &changes) }()
	defer func() { close(stop); wg.Wait() }()
	waitFor(t, "the parent to publish the first DS", 5*time.Second, func() bool {
		parent.mu.Lock()
		defer parent.mu.Unlock()
		return len(parent.ds) > 0
	})
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "anchor.ds"), []byte(parent.anchor()), 0o644)
	port := startUnbound(t, dir, p.port, "stub-zone:\n\tname: \"test\"\n\tstub-addr: 127.0.0.1@"+parent.port+"\n")
	addr := "127.0.0.1:" + port
	ask := resolverAt(addr)
	waitFor(t, "unbound to answer", 10*time.Second, func() bool { return ask("example.test.", dns.TypeSOA) != nil })
	first := map[uint16]bool{}
	for _, rr := range askDO(t, p.addr, "example.test.", dns.TypeDNSKEY).Answer {
		if k, ok := rr.(*dns.DNSKEY); ok {
			first[k.KeyTag()] = true
		}
	}
	signers := map[uint16]bool{}
	deadline := time.Now().Add(20 * time.Second)
	asked := 0
	for time.Now().Before(deadline) {
		for _, q := range []struct {
			name  string
			qtype uint16
		}{{"_grpc_config.echo.example.test.", dns.TypeTXT}, {"api.example.test.", dns.TypeA}, {"_grpc_config.nope.example.test.", dns.TypeTXT}, {"example.test.", dns.TypeDNSKEY}} {
			r := ask(q.name, q.qtype)
			asked++
			if r == nil || r.Rcode == dns.RcodeServerFailure || !r.AuthenticatedData {
				parent.mu.Lock()
				defer parent.mu.Unlock()
				t.Fatalf("after %d answers, %s %s: %v\nparent's DS RRsets: %v\npublisher log:\n%s", asked, q.name, dns.TypeToString[q.qtype], r, changes, p.logs.String())
			}
		}
		for _, rr := range askDO(t, p.addr, "_grpc_config.echo.example.test.", dns.TypeTXT).Answer {
			if sig, ok := rr.(*dns.RRSIG); ok {
				signers[sig.KeyTag] = true
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	var now []uint16
	for _, rr := range askDO(t, p.addr, "example.test.", dns.TypeDNSKEY).Answer {
		if k, ok := rr.(*dns.DNSKEY); ok {
			now = append(now, k.KeyTag())
			if first[k.KeyTag()] {
				t.Errorf("the first CSK %d is still published after 20 s with a lifetime of 6 s", k.KeyTag())
			}
		}
	}
	parent.mu.Lock()
	t.Logf("%d answers validated; CSKs that signed: %d; the parent's DS RRsets in turn: %v; DNSKEY now %v", asked, len(signers), changes, now)
	parent.mu.Unlock()
	if len(signers) < 2 {
		t.Errorf("%d CSKs signed in 20 s with a lifetime of 6 s, want 2 or more", len(signers))
	}
}
