package resolver

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strings"
	"sync/atomic"
	"time"
)

// ednsSize is the UDP payload size we advertise: the DNS flag day 2020
// value, which avoids IP fragmentation. Larger answers come back truncated
// and are asked again over TCP.
const ednsSize = 1232

// maxCNAMEHops bounds how many aliases are followed, inside one answer and
// across re-asked targets together.
const maxCNAMEHops = 8

// dnsClient asks a list of nameservers, in order, the way the resolver
// needs: UDP with EDNS0, TCP when truncated, the next server on failure.
type dnsClient struct {
	servers  []string // IP:PORT
	timeout  time.Duration
	attempts int
	// rotate starts each query at the next server in turn (resolv.conf
	// options rotate), spreading the load.
	rotate bool
	next   *atomic.Uint32
	// net carries the queries; nil is the network (netTransport).
	net transport
	// val validates the answers (Options.Validator); nil when off.
	val Validator
	// ad requires the AD bit of every answer
	// (Options.RequireAuthenticatedData).
	ad bool
}

// transport carries one DNS message, in wire format, to one server and
// back, over "udp" or "tcp", until ctx ends. The resolver's is the network;
// tests give it an in-memory one (internal/dnstest.Network), so that they
// run under testing/synctest, whose clock only moves when every goroutine
// waits on something it controls, which a socket is not.
type transport interface {
	Exchange(ctx context.Context, network, server string, query []byte) ([]byte, error)
}

// netTransport is the network.
type netTransport struct{}

// Exchange sends query over a new connection that is closed when ctx
// ends, so a resolver that is closed does not wait for a query's timeout.
func (netTransport) Exchange(ctx context.Context, network, server string, query []byte) ([]byte, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, network, server)
	if err != nil {
		return nil, err
	}
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer func() {
		if stop() {
			conn.Close()
		}
	}()
	if dl, ok := ctx.Deadline(); ok {
		conn.SetDeadline(dl)
	}
	if network == "tcp" {
		return exchangeTCP(conn, query)
	}
	return exchangeUDP(conn, query)
}

// exchangeUDP sends query and reads datagrams until one carries its ID (an
// answer to an earlier query that timed out may come first).
func exchangeUDP(conn net.Conn, query []byte) ([]byte, error) {
	if _, err := conn.Write(query); err != nil {
		return nil, err
	}
	buf := make([]byte, 65535)
	for {
		n, err := conn.Read(buf)
		if err != nil {
			return nil, err
		}
		if n >= 2 && buf[0] == query[0] && buf[1] == query[1] {
			return buf[:n:n], nil
		}
	}
}

// exchangeTCP sends query with its length prefix and reads one reply.
func exchangeTCP(conn net.Conn, query []byte) ([]byte, error) {
	out := make([]byte, 2+len(query))
	binary.BigEndian.PutUint16(out, uint16(len(query)))
	copy(out[2:], query)
	if _, err := conn.Write(out); err != nil {
		return nil, err
	}
	var l [2]byte
	if _, err := io.ReadFull(conn, l[:]); err != nil {
		return nil, err
	}
	buf := make([]byte, binary.BigEndian.Uint16(l[:]))
	if _, err := io.ReadFull(conn, buf); err != nil {
		return nil, err
	}
	return buf, nil
}

// answer is the outcome of one lookup of one type at one name.
type answer struct {
	// name is where the records were found: the asked name, or the end of
	// its CNAME chain (fully qualified, lower case).
	name string
	// addrs are the addresses of an A or AAAA answer; txt the records of
	// a TXT answer, each a list of raw strings as on the wire.
	addrs []netip.Addr
	txt   [][]string
	// ttl is the shortest TTL of the records and aliases, or for a negative
	// answer the SOA's negative-caching TTL (RFC 2308); hasTTL is false when
	// the answer carried no TTL at all.
	ttl    time.Duration
	hasTTL bool
	// nxdomain is set when the name does not exist.
	nxdomain bool
	// server answered; tcp is set when it took TCP (after truncation).
	server string
	tcp    bool
	// secure is set when DNSSEC validated every answer of the chain;
	// expires is when the first signature validated expires.
	secure  bool
	expires time.Time
}

// empty reports whether the answer holds no record of the type asked.
func (a *answer) empty() bool { return len(a.addrs) == 0 && len(a.txt) == 0 }

// lookupError is a lookup that got no usable answer from any nameserver.
type lookupError struct {
	name  string
	qtype uint16
	// errs holds the last failure of each server.
	errs []error
}

func (e *lookupError) Error() string {
	parts := make([]string, len(e.errs))
	for i, err := range e.errs {
		parts[i] = err.Error()
	}
	return fmt.Sprintf("%s lookup of %s failed at every nameserver: %s", typeName(e.qtype), e.name, strings.Join(parts, "; "))
}

// serverError is one nameserver's failure to answer one query.
type serverError struct {
	server string
	msg    string
}

func (e *serverError) Error() string { return e.server + ": " + e.msg }

// lookup asks for the records of qtype at name, following CNAMEs: those in
// the answer, and, when a server answers with an alias whose target it does
// not serve (an authoritative server for another zone), the target again.
func (c *dnsClient) lookup(ctx context.Context, name string, qtype uint16) (*answer, error) {
	name = strings.ToLower(fqdn(name))
	hops := 0
	var res *answer
	for {
		r, server, tcp, err := c.query(ctx, name, qtype)
		var secure bool
		var expires time.Time
		switch {
		case err != nil:
		case c.ad:
			if secure = r.authenticData; !secure {
				err = &notAuthenticated{name: name, qtype: qtype}
			}
		case c.val != nil:
			secure, expires, err = c.val.Validate(ctx, r.raw, name, qtype, c.ask)
		}
		if err != nil {
			if res != nil {
				// The alias was found, its target could not be asked.
				return nil, fmt.Errorf("following the CNAME of %s: %w", res.name, err)
			}
			return nil, err
		}
		a, next, err := parseAnswer(r, name, qtype, &hops)
		if err != nil {
			return nil, &serverError{server, err.Error()}
		}
		a.server, a.tcp = server, tcp
		a.secure, a.expires = secure && (res == nil || res.secure), expires
		if res != nil && !res.expires.IsZero() && (a.expires.IsZero() || res.expires.Before(a.expires)) {
			a.expires = res.expires
		}
		if res != nil && res.hasTTL && (!a.hasTTL || res.ttl < a.ttl) {
			a.ttl, a.hasTTL = res.ttl, true
		}
		res = a
		if next == "" {
			return res, nil
		}
		name = next
	}
}

// parseAnswer reads the records of qtype at name from r, following the
// aliases r holds. next is set when the chain leaves r without an answer
// for its end, so the caller asks again for next.
func parseAnswer(r *message, name string, qtype uint16, hops *int) (a *answer, next string, err error) {
	a = &answer{name: name}
	cur := name
	followed := false
	for {
		found, alias := a.addRecordsAt(r, cur, qtype)
		if found || alias == "" {
			break
		}
		*hops++
		if *hops > maxCNAMEHops {
			return nil, "", fmt.Errorf("CNAME chain from %s is longer than %d aliases (or loops)", name, maxCNAMEHops)
		}
		cur, followed = alias, true
	}
	a.name = cur
	if !a.empty() {
		return a, "", nil
	}
	a.nxdomain = r.rcode == rcodeNameError
	hasSOA := a.addNegativeTTL(r)
	if followed && !a.nxdomain && !hasSOA && !r.recursionAvail {
		// An authoritative server gave the alias and nothing about its
		// target: the target is elsewhere, ask for it.
		return a, cur, nil
	}
	return a, "", nil
}

// addRecordsAt adds to a the records of qtype at name cur in r's answer
// section, and reports whether there was one; if not, alias is the first
// alias (CNAME) of cur there, to follow, or "".
func (a *answer) addRecordsAt(r *message, cur string, qtype uint16) (found bool, alias string) {
	for i := range r.answers {
		rr := &r.answers[i]
		if rr.class != classINET || !strings.EqualFold(rr.name, cur) {
			continue
		}
		switch {
		case rr.rtype == qtype:
			switch qtype {
			case typeA, typeAAAA:
				a.addrs = append(a.addrs, rr.addr)
			case typeTXT:
				a.txt = append(a.txt, rr.txt)
			}
			a.lowerTTL(rr.ttl)
			found = true
		case rr.rtype == typeCNAME && qtype != typeCNAME && alias == "":
			alias = strings.ToLower(rr.alias)
			a.lowerTTL(rr.ttl)
		}
	}
	return found, alias
}

// addNegativeTTL gives a, a negative answer, the TTL of the SOA records in
// r's authority section, and reports whether there was one. RFC 2308 §5:
// negative answers are cached for the smaller of the SOA's TTL and its
// MINIMUM field.
func (a *answer) addNegativeTTL(r *message) (hasSOA bool) {
	for _, rr := range r.authorities {
		if rr.rtype == typeSOA {
			a.lowerTTL(min(rr.ttl, rr.minimum))
			hasSOA = true
		}
	}
	return hasSOA
}

// lowerTTL makes a's TTL that of a record or alias of TTL ttl seconds
// when it is shorter, or when a has none yet.
func (a *answer) lowerTTL(ttl uint32) {
	d := time.Duration(ttl) * time.Second
	if !a.hasTTL || d < a.ttl {
		a.ttl, a.hasTTL = d, true
	}
}

// classINET is the Internet class.
const classINET = 1

// query sends one question to the servers in turn until one answers
// usefully. A definite answer (NOERROR or NXDOMAIN) ends the search; a
// timeout, network error, SERVFAIL, REFUSED or malformed reply tries the
// next server. The list is walked c.attempts times.
func (c *dnsClient) query(ctx context.Context, name string, qtype uint16) (*message, string, bool, error) {
	if len(c.servers) == 0 {
		return nil, "", false, &lookupError{name: name, qtype: qtype, errs: []error{errors.New("no nameservers configured")}}
	}
	last := make([]error, len(c.servers))
	first := 0
	if c.rotate && c.next != nil {
		first = int(c.next.Add(1)-1) % len(c.servers)
	}
	for range max(c.attempts, 1) {
		for j := range c.servers {
			i := (first + j) % len(c.servers)
			server := c.servers[i]
			if err := ctx.Err(); err != nil {
				return nil, "", false, err
			}
			r, tcp, err := c.exchange(ctx, server, name, qtype)
			if err == nil {
				return r, server, tcp, nil
			}
			last[i] = &serverError{server, err.Error()}
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, "", false, err
	}
	return nil, "", false, &lookupError{name: name, qtype: qtype, errs: last}
}

// exchange asks one server: over UDP with EDNS0, again over TCP if the
// answer is truncated, and again without EDNS0 if the server rejects it
// with FORMERR (RFC 6891 §7: old servers).
func (c *dnsClient) exchange(ctx context.Context, server, name string, qtype uint16) (*message, bool, error) {
	q := query{id: newID(), name: name, qtype: qtype, edns: true, do: c.val != nil || c.ad, ad: c.ad}
	r, err := c.exchangeOver(ctx, "udp", server, q)
	if err != nil {
		if ctx.Err() != nil || !errors.Is(err, errUnreadable) {
			return nil, false, err
		}
		// A reply that does not parse, such as one larger than the
		// buffer we advertised (a server that ignores EDNS): TCP has no
		// such limit.
		q.id = newID()
		r, err = c.exchangeOver(ctx, "tcp", server, q)
		if err != nil {
			return nil, true, fmt.Errorf("over TCP after an unreadable UDP answer: %v", err)
		}
		if err := checkReply(q, r, true); err != nil {
			return nil, true, err
		}
		return r, true, nil
	}
	if r.rcode == rcodeFormErr && !r.edns {
		q.edns, q.id = false, newID()
		if r, err = c.exchangeOver(ctx, "udp", server, q); err != nil {
			return nil, false, err
		}
	}
	tcp := false
	if r.truncated {
		q.id = newID()
		if r, err = c.exchangeOver(ctx, "tcp", server, q); err != nil {
			return nil, true, fmt.Errorf("over TCP after a truncated UDP answer: %v", err)
		}
		tcp = true
	}
	if err := checkReply(q, r, tcp); err != nil {
		return nil, tcp, err
	}
	return r, tcp, nil
}

// exchangeOver sends q over one network, waiting at most the query
// timeout, and parses the reply. Over UDP, a reply longer than the buffer
// q advertised is unreadable, as the datagram would be cut short.
func (c *dnsClient) exchangeOver(ctx context.Context, network, server string, q query) (*message, error) {
	wire, err := q.pack()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	var t transport = netTransport{}
	if c.net != nil {
		t = c.net
	}
	b, err := t.Exchange(ctx, network, server, wire)
	if err != nil {
		if ctx.Err() != nil {
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return nil, fmt.Errorf("no answer over %s within %v", network, c.timeout)
			}
			return nil, ctx.Err()
		}
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return nil, fmt.Errorf("no answer over %s within %v", network, c.timeout)
		}
		return nil, err
	}
	if network == "udp" && len(b) > q.udpSize() {
		return nil, fmt.Errorf("%w: a %d-byte answer over UDP to a query advertising %d bytes", errUnreadable, len(b), q.udpSize())
	}
	r, err := parseMessage(b)
	if err != nil {
		return nil, err
	}
	r.raw = b
	if r.id != q.id {
		return nil, fmt.Errorf("reply has message ID %d, the query %d", r.id, q.id)
	}
	return r, nil
}

// checkReply rejects replies that do not answer q: a server that is
// broken, or a spoofed packet that matched the ID by chance. Over TCP a
// truncated reply is a failure too: there is no bigger transport to retry
// on, and its missing records say nothing about the name (taken as "no
// record", it would withdraw a channel's config; gRFC A21 keeps it).
func checkReply(q query, r *message, tcp bool) error {
	if !r.response {
		return errors.New("reply is not a response (QR clear)")
	}
	if tcp && r.truncated {
		return errors.New("answer truncated (TC) over TCP")
	}
	if len(r.questions) != 1 || !strings.EqualFold(r.questions[0].name, q.name) ||
		r.questions[0].qtype != q.qtype || r.questions[0].class != classINET {
		return errors.New("reply is for another question")
	}
	switch r.rcode {
	case rcodeSuccess:
		if len(r.answers) == 0 && !r.authoritative && !r.recursionAvail {
			// A lame delegation or a referral: a server that neither
			// serves the name nor recurses. Its empty answer says nothing
			// about the name; ask the next server (as Go's resolver does).
			return errors.New("lame referral: no answer, not authoritative, no recursion")
		}
		return nil
	case rcodeNameError:
		return nil
	}
	return fmt.Errorf("answered %s", rcodeName(r.rcode))
}

// ask asks the servers another question for a Validator: the message
// they answered with.
func (c *dnsClient) ask(ctx context.Context, name string, qtype uint16) ([]byte, error) {
	r, _, _, err := c.query(ctx, name, qtype)
	if err != nil {
		return nil, err
	}
	return r.raw, nil
}

// Validator checks the answers of lookups: package resolver/dnssec makes
// one that validates DNSSEC from trust anchors (Options.Validator).
type Validator interface {
	// Validate checks msg, the answer (a DNS message) to qtype at name;
	// ask asks the same nameservers another question. It reports whether
	// the answer was validated (false for a name it does not validate)
	// and when its first signature expires. An error is a failed lookup;
	// one with a method Bogus() bool returning true is counted as
	// "bogus" in State.Problems.
	Validate(ctx context.Context, msg []byte, name string, qtype uint16, ask func(ctx context.Context, name string, qtype uint16) ([]byte, error)) (secure bool, expires time.Time, err error)
}

// notAuthenticated is an answer without the AD bit when
// Options.RequireAuthenticatedData wants it.
type notAuthenticated struct {
	name  string
	qtype uint16
}

func (e *notAuthenticated) Error() string {
	return fmt.Sprintf("bogus DNSSEC answer for %s %s: the nameserver did not mark it authenticated (AD): it does not validate, or the answer is not signed (resolver.Options.RequireAuthenticatedData)", e.name, typeName(e.qtype))
}

func (e *notAuthenticated) Bogus() bool { return true }

// isBogus reports whether err says an answer failed validation.
func isBogus(err error) bool {
	var b interface{ Bogus() bool }
	return errors.As(err, &b) && b.Bogus()
}
