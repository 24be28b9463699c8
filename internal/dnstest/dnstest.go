// Package dnstest is a programmable DNS server for tests: records and TTLs
// set per name, and faults injected per query type (delay, drop, SERVFAIL,
// forced truncation), so that resolver code can be tested against a real
// UDP and TCP server on 127.0.0.1 without an authoritative server, or,
// under testing/synctest, against the same server in memory (Network).
//
// It answers as a simple authoritative server: AA set, NXDOMAIN for names it
// has nothing at, NODATA with an SOA for names that exist without the asked
// type, CNAMEs followed inside its own data, EDNS0 echoed, and answers that do
// not fit the client's UDP buffer truncated (TC) so the client retries over
// TCP. It is not the project's publisher (dnspub); it is a test double whose
// every behaviour a test can control.
package dnstest

import (
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"

	sc "github.com/grpc-config-dns/grpc-config-dns/serviceconfig"
)

// Fault is what the server does instead of answering normally.
type Fault int

const (
	// NoFault answers normally.
	NoFault Fault = iota
	// Drop reads the query and never answers.
	Drop
	// ServFail answers SERVFAIL.
	ServFail
	// Refused answers REFUSED.
	Refused
	// Truncate answers over UDP with TC set and no records, whatever the size;
	// TCP is answered normally.
	Truncate
	// Oversize answers over UDP in full, ignoring the client's EDNS size
	// (a broken server); TCP is answered normally.
	Oversize
	// TruncateAll answers with TC set and no records over UDP and TCP
	// alike: a server (or a middlebox) that cannot send the answer at all.
	TruncateAll
)

// Query is one query the server received.
type Query struct {
	Name string // as asked, lower-cased, fully qualified
	Type uint16
	Net  string // "udp" or "tcp"
	// EDNSSize is the UDP payload size the client advertised, or 0 without
	// EDNS.
	EDNSSize uint16
	RD       bool
	At       time.Time
}

type key struct {
	name  string
	qtype uint16
}

// Server is a running test DNS server, listening on UDP and TCP at the same
// 127.0.0.1 port (or the address given to Listen).
type Server struct {
	// Addr is "127.0.0.1:PORT", for both UDP and TCP.
	Addr string

	udp, tcp *dns.Server
	done     chan struct{}
	wg       sync.WaitGroup

	mu      sync.Mutex
	rrs     map[key][]dns.RR
	names   map[string]int // names with records (for NODATA vs NXDOMAIN)
	delay   map[uint16]time.Duration
	hold    map[uint16]<-chan struct{}
	fault   map[uint16]Fault
	queries []Query
}

// Start starts a server on 127.0.0.1 and stops it when the test ends.
func Start(tb testing.TB) *Server {
	tb.Helper()
	s, err := New()
	if err != nil {
		tb.Fatalf("dnstest: %v", err)
	}
	tb.Cleanup(s.Close)
	return s
}

// New starts a server on 127.0.0.1; Close stops it.
func New() (*Server, error) {
	// UDP and TCP must share a port: clients retry a truncated UDP answer
	// over TCP at the same address. Another process may hold the TCP port
	// of a fresh UDP port, so try a few.
	var pc net.PacketConn
	var l net.Listener
	var err error
	for range 20 {
		pc, err = net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		l, err = net.Listen("tcp", pc.LocalAddr().String())
		if err == nil {
			break
		}
		pc.Close()
	}
	if err != nil {
		return nil, fmt.Errorf("no free port for both UDP and TCP: %v", err)
	}
	return serve(pc, l), nil
}

// Listen starts a server on addr (UDP and TCP), for a test that needs a
// given address, such as port 53 for a resolv.conf file; Close stops it.
func Listen(addr string) (*Server, error) {
	pc, err := net.ListenPacket("udp", addr)
	if err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", pc.LocalAddr().String())
	if err != nil {
		pc.Close()
		return nil, err
	}
	return serve(pc, l), nil
}

// serve starts a server on pc and l.
func serve(pc net.PacketConn, l net.Listener) *Server {
	s := &Server{
		done:  make(chan struct{}),
		rrs:   map[key][]dns.RR{},
		names: map[string]int{},
		delay: map[uint16]time.Duration{},
		hold:  map[uint16]<-chan struct{}{},
		fault: map[uint16]Fault{},
	}
	s.Addr = pc.LocalAddr().String()
	h := dns.HandlerFunc(s.serve)
	s.udp = &dns.Server{PacketConn: pc, Handler: h}
	s.tcp = &dns.Server{Listener: l, Handler: h}
	for _, srv := range []*dns.Server{s.udp, s.tcp} {
		started := make(chan struct{})
		srv.NotifyStartedFunc = func() { close(started) }
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			srv.ActivateAndServe()
		}()
		<-started
	}
	return s
}

// Close stops the server and waits for its goroutines, including answers
// held back by a delay.
func (s *Server) Close() {
	select {
	case <-s.done:
		return
	default:
	}
	close(s.done)
	if s.udp != nil { // not an in-memory server
		s.udp.Shutdown()
		s.tcp.Shutdown()
	}
	s.wg.Wait()
}

func canon(name string) string { return strings.ToLower(dns.Fqdn(name)) }

// set replaces the records of one type at name.
func (s *Server) set(name string, qtype uint16, rrs []dns.RR) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := key{canon(name), qtype}
	if old := len(s.rrs[k]) > 0; old {
		s.names[k.name]--
	}
	if len(rrs) == 0 {
		delete(s.rrs, k)
	} else {
		s.rrs[k] = rrs
		s.names[k.name]++
	}
	if s.names[k.name] <= 0 {
		delete(s.names, k.name)
	}
}

func hdr(name string, qtype uint16, ttl uint32) dns.RR_Header {
	return dns.RR_Header{Name: canon(name), Rrtype: qtype, Class: dns.ClassINET, Ttl: ttl}
}

// SetAddrs sets the A and AAAA records at name from ips (IPv4 and IPv6
// literals mixed); an empty list removes them.
func (s *Server) SetAddrs(name string, ttl uint32, ips ...string) {
	var a, aaaa []dns.RR
	for _, ip := range ips {
		p := net.ParseIP(ip)
		if p == nil {
			panic("dnstest: not an IP address: " + ip)
		}
		if v4 := p.To4(); v4 != nil {
			a = append(a, &dns.A{Hdr: hdr(name, dns.TypeA, ttl), A: v4})
		} else {
			aaaa = append(aaaa, &dns.AAAA{Hdr: hdr(name, dns.TypeAAAA, ttl), AAAA: p})
		}
	}
	s.set(name, dns.TypeA, a)
	s.set(name, dns.TypeAAAA, aaaa)
}

// SetTXT sets the TXT records at name. Each record is a list of raw
// strings (bytes as on the wire, at most 255 each); no records removes them.
func (s *Server) SetTXT(name string, ttl uint32, records ...[]string) {
	rrs := make([]dns.RR, 0, len(records))
	for _, r := range records {
		esc := make([]string, len(r))
		for i, str := range r {
			esc[i] = sc.EscapeTXTString(str)
		}
		rrs = append(rrs, &dns.TXT{Hdr: hdr(name, dns.TypeTXT, ttl), Txt: esc})
	}
	s.set(name, dns.TypeTXT, rrs)
}

// SetConfig publishes value (a grpc_config JSON list of choices, used as
// is, valid or not) as the TXT record at _grpc_config.<host>, replacing any
// TXT records there. An empty value removes them.
func (s *Server) SetConfig(host string, ttl uint32, value string) {
	if value == "" {
		s.SetTXT(sc.OwnerPrefix+host, ttl)
		return
	}
	s.SetTXT(sc.OwnerPrefix+host, ttl, sc.EncodeTXT([]byte(value)))
}

// SetCNAME makes name an alias of target.
func (s *Server) SetCNAME(name, target string, ttl uint32) {
	s.set(name, dns.TypeCNAME, []dns.RR{&dns.CNAME{Hdr: hdr(name, dns.TypeCNAME, ttl), Target: canon(target)}})
}

// SetDelay holds back every answer to queries of qtype by d.
func (s *Server) SetDelay(qtype uint16, d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.delay[qtype] = d
}

// SetHold holds back every answer to queries of qtype until release is
// closed (nil: no more), after any delay: a test that needs one answer to
// come after something else happened says so, instead of guessing a delay.
func (s *Server) SetHold(qtype uint16, release <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hold[qtype] = release
}

// SetFault makes the server misbehave for queries of qtype.
func (s *Server) SetFault(qtype uint16, f Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fault[qtype] = f
}

// Queries returns the queries received so far.
func (s *Server) Queries() []Query {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Query(nil), s.queries...)
}

// Count returns how many queries of qtype arrived over network ("udp",
// "tcp", or "" for both).
func (s *Server) Count(qtype uint16, network string) int {
	n := 0
	for _, q := range s.Queries() {
		if q.Type == qtype && (network == "" || q.Net == network) {
			n++
		}
	}
	return n
}

// ResetQueries forgets the queries received so far.
func (s *Server) ResetQueries() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queries = nil
}

func (s *Server) serve(w dns.ResponseWriter, req *dns.Msg) {
	network := "udp"
	if _, ok := w.RemoteAddr().(*net.TCPAddr); ok {
		network = "tcp"
	}
	m, delay, hold := s.respond(network, req)
	if delay > 0 {
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-s.done:
			t.Stop()
			return
		}
	}
	select {
	case <-hold:
	case <-s.done:
		return
	}
	if m != nil {
		w.WriteMsg(m)
	}
}

// respond is the server's reply to req over network ("udp" or "tcp"), how
// long to hold it back, and what it waits for then (nil: nothing); a nil
// reply means none at all (Drop).
func (s *Server) respond(network string, req *dns.Msg) (*dns.Msg, time.Duration, <-chan struct{}) {
	if len(req.Question) != 1 {
		m := new(dns.Msg)
		m.SetRcode(req, dns.RcodeFormatError)
		return m, 0, closed
	}
	q := req.Question[0]
	var ednsSize uint16
	opt := req.IsEdns0()
	if opt != nil {
		ednsSize = opt.UDPSize()
	}

	s.mu.Lock()
	s.queries = append(s.queries, Query{Name: canon(q.Name), Type: q.Qtype, Net: network, EDNSSize: ednsSize, RD: req.RecursionDesired, At: time.Now()})
	delay, fault, hold := s.delay[q.Qtype], s.fault[q.Qtype], s.hold[q.Qtype]
	if hold == nil {
		hold = closed
	}
	m := s.answerLocked(req)
	s.mu.Unlock()

	switch fault {
	case Drop:
		return nil, delay, hold
	case ServFail, Refused:
		m = new(dns.Msg)
		rc := dns.RcodeServerFailure
		if fault == Refused {
			rc = dns.RcodeRefused
		}
		m.SetRcode(req, rc)
	case Truncate, TruncateAll:
		if network == "udp" || fault == TruncateAll {
			m.Answer, m.Ns, m.Extra = nil, nil, nil
			m.Truncated = true
		}
	}
	if opt != nil {
		m.SetEdns0(dns.DefaultMsgSize, false)
	}
	if network == "udp" && fault != Oversize {
		size := dns.MinMsgSize
		if ednsSize > dns.MinMsgSize {
			size = int(ednsSize)
		}
		m.Truncate(size)
	}
	return m, delay, hold
}

// closed is a channel that is ready: an answer not held back.
var closed = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

// answerLocked builds the answer from the records, following CNAMEs.
func (s *Server) answerLocked(req *dns.Msg) *dns.Msg {
	q := req.Question[0]
	m := new(dns.Msg)
	m.SetReply(req)
	m.Authoritative = true
	name := canon(q.Name)
	for hops := 0; hops < 16; hops++ {
		if rrs := s.rrs[key{name, q.Qtype}]; len(rrs) > 0 {
			m.Answer = append(m.Answer, copyRRs(rrs, q.Name, hops)...)
			return m
		}
		if q.Qtype != dns.TypeCNAME {
			if c := s.rrs[key{name, dns.TypeCNAME}]; len(c) > 0 {
				m.Answer = append(m.Answer, copyRRs(c, q.Name, hops)...)
				name = c[0].(*dns.CNAME).Target
				continue
			}
		}
		break
	}
	if s.names[name] == 0 {
		m.Rcode = dns.RcodeNameError
	}
	m.Ns = []dns.RR{&dns.SOA{Hdr: hdr(zoneOf(name), dns.TypeSOA, 60), Ns: "ns.test.", Mbox: "hostmaster.test.",
		Serial: 1, Refresh: 60, Retry: 60, Expire: 600, Minttl: 30}}
	return m
}

// copyRRs copies records so that a later change of the zone cannot race
// with packing; the first owner keeps the case the client asked in.
func copyRRs(rrs []dns.RR, asked string, hops int) []dns.RR {
	out := make([]dns.RR, len(rrs))
	for i, rr := range rrs {
		out[i] = dns.Copy(rr)
		if hops == 0 {
			out[i].Header().Name = asked
		}
	}
	return out
}

func zoneOf(name string) string {
	labels := dns.SplitDomainName(name)
	if len(labels) < 2 {
		return "."
	}
	return dns.Fqdn(strings.Join(labels[len(labels)-2:], "."))
}

// DeadUDP returns the address of a UDP port on 127.0.0.1 where nothing
// listens: queries to it fail at once with "connection refused".
func DeadUDP(tb testing.TB) string {
	tb.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	addr := pc.LocalAddr().String()
	pc.Close()
	return addr
}

// SilentUDP returns the address of a UDP socket on 127.0.0.1 that reads
// queries and never answers: queries to it time out.
func SilentUDP(tb testing.TB) string {
	tb.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 65535)
		for {
			if _, _, err := pc.ReadFrom(buf); err != nil {
				return // closed
			}
		}
	}()
	tb.Cleanup(func() { pc.Close(); <-done })
	return pc.LocalAddr().String()
}
