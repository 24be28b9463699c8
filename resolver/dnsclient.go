package resolver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/miekg/dns"

	sc "github.com/grpc-config-dns/grpc-config-dns/serviceconfig"
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
}

// answer is the outcome of one lookup of one type at one name.
type answer struct {
	// name is where the records were found: the asked name, or the end of
	// its CNAME chain (fully qualified, lower case).
	name string
	rrs  []dns.RR
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
}

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
	return fmt.Sprintf("%s lookup of %s failed at every nameserver: %s", dns.TypeToString[e.qtype], e.name, strings.Join(parts, "; "))
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
	name = strings.ToLower(dns.Fqdn(name))
	hops := 0
	var res *answer
	for {
		r, server, tcp, err := c.query(ctx, name, qtype)
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
func parseAnswer(r *dns.Msg, name string, qtype uint16, hops *int) (a *answer, next string, err error) {
	a = &answer{name: name}
	minTTL := func(ttl uint32) {
		d := time.Duration(ttl) * time.Second
		if !a.hasTTL || d < a.ttl {
			a.ttl, a.hasTTL = d, true
		}
	}
	cur := name
	followed := false
	for {
		found := false
		var alias string
		for _, rr := range r.Answer {
			h := rr.Header()
			if h.Class != dns.ClassINET || !strings.EqualFold(h.Name, cur) {
				continue
			}
			switch {
			case h.Rrtype == qtype:
				a.rrs = append(a.rrs, rr)
				minTTL(h.Ttl)
				found = true
			case h.Rrtype == dns.TypeCNAME && qtype != dns.TypeCNAME && alias == "":
				alias = strings.ToLower(rr.(*dns.CNAME).Target)
				minTTL(h.Ttl)
			}
		}
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
	if len(a.rrs) > 0 {
		return a, "", nil
	}
	a.nxdomain = r.Rcode == dns.RcodeNameError
	hasSOA := false
	for _, rr := range r.Ns {
		if soa, ok := rr.(*dns.SOA); ok {
			// RFC 2308 §5: negative answers are cached for the smaller of
			// the SOA's TTL and its MINIMUM field.
			minTTL(min(soa.Hdr.Ttl, soa.Minttl))
			hasSOA = true
		}
	}
	if followed && !a.nxdomain && !hasSOA && !r.RecursionAvailable {
		// An authoritative server gave the alias and nothing about its
		// target: the target is elsewhere, ask for it.
		return a, cur, nil
	}
	return a, "", nil
}

// query sends one question to the servers in turn until one answers
// usefully. A definite answer (NOERROR or NXDOMAIN) ends the search; a
// timeout, network error, SERVFAIL, REFUSED or malformed reply tries the
// next server. The list is walked c.attempts times.
func (c *dnsClient) query(ctx context.Context, name string, qtype uint16) (*dns.Msg, string, bool, error) {
	if len(c.servers) == 0 {
		return nil, "", false, &lookupError{name: name, qtype: qtype, errs: []error{errors.New("no nameservers configured")}}
	}
	last := make([]error, len(c.servers))
	for range max(c.attempts, 1) {
		for i, server := range c.servers {
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
func (c *dnsClient) exchange(ctx context.Context, server, name string, qtype uint16) (*dns.Msg, bool, error) {
	m := new(dns.Msg)
	m.SetQuestion(name, qtype)
	m.RecursionDesired = true
	m.SetEdns0(ednsSize, false)
	r, err := c.exchangeOver(ctx, "udp", server, m)
	if err != nil {
		var de *dns.Error
		if ctx.Err() != nil || !errors.As(err, &de) {
			return nil, false, err
		}
		// A reply that does not unpack, such as one larger than the
		// buffer we advertised (a server that ignores EDNS): TCP has no
		// such limit.
		m.Id = dns.Id()
		r, err = c.exchangeOver(ctx, "tcp", server, m)
		if err != nil {
			return nil, true, fmt.Errorf("over TCP after an unreadable UDP answer: %v", err)
		}
		if err := checkReply(m, r, true); err != nil {
			return nil, true, err
		}
		return r, true, nil
	}
	if r.Rcode == dns.RcodeFormatError && r.IsEdns0() == nil {
		m.Extra = nil
		m.Id = dns.Id()
		if r, err = c.exchangeOver(ctx, "udp", server, m); err != nil {
			return nil, false, err
		}
	}
	tcp := false
	if r.Truncated {
		m.Id = dns.Id()
		if r, err = c.exchangeOver(ctx, "tcp", server, m); err != nil {
			return nil, true, fmt.Errorf("over TCP after a truncated UDP answer: %v", err)
		}
		tcp = true
	}
	if err := checkReply(m, r, tcp); err != nil {
		return nil, tcp, err
	}
	return r, tcp, nil
}

// exchangeOver sends m over one network. The connection is closed when ctx
// ends, so a resolver that is closed does not wait for a query's timeout.
func (c *dnsClient) exchangeOver(ctx context.Context, network, server string, m *dns.Msg) (*dns.Msg, error) {
	cl := &dns.Client{Net: network, Timeout: c.timeout, UDPSize: ednsSize}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	conn, err := cl.DialContext(ctx, server)
	if err != nil {
		return nil, err
	}
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer func() {
		if stop() {
			conn.Close()
		}
	}()
	r, _, err := cl.ExchangeWithConnContext(ctx, m, conn)
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
	return r, nil
}

// checkReply rejects replies that do not answer m: a server that is
// broken, or a spoofed packet that matched the ID by chance. Over TCP a
// truncated reply is a failure too: there is no bigger transport to retry
// on, and its missing records say nothing about the name (taken as "no
// record", it would withdraw a channel's config; gRFC A21 keeps it).
func checkReply(m, r *dns.Msg, tcp bool) error {
	if !r.Response {
		return errors.New("reply is not a response (QR clear)")
	}
	if tcp && r.Truncated {
		return errors.New("answer truncated (TC) over TCP")
	}
	if len(r.Question) != 1 || !strings.EqualFold(r.Question[0].Name, m.Question[0].Name) ||
		r.Question[0].Qtype != m.Question[0].Qtype || r.Question[0].Qclass != m.Question[0].Qclass {
		return errors.New("reply is for another question")
	}
	switch r.Rcode {
	case dns.RcodeSuccess:
		if len(r.Answer) == 0 && !r.Authoritative && !r.RecursionAvailable {
			// A lame delegation or a referral: a server that neither
			// serves the name nor recurses. Its empty answer says nothing
			// about the name; ask the next server (as Go's resolver does).
			return errors.New("lame referral: no answer, not authoritative, no recursion")
		}
		return nil
	case dns.RcodeNameError:
		return nil
	}
	return fmt.Errorf("answered %s", dns.RcodeToString[r.Rcode])
}

// txtStrings returns the strings of a TXT record as raw bytes. miekg/dns
// unpacks them in presentation form (quotes and backslashes escaped,
// unprintable bytes as \DDD); undo that.
func txtStrings(rr *dns.TXT) []string {
	out := make([]string, len(rr.Txt))
	for i, s := range rr.Txt {
		out[i] = sc.UnescapeTXTString(s)
	}
	return out
}
