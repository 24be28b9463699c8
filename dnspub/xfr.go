package dnspub

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"net/netip"
	"strings"
	"time"

	"github.com/miekg/dns"

	"github.com/grpc-config-dns/grpc-config-dns/dnspub/internal/wire"
	"github.com/grpc-config-dns/grpc-config-dns/model"
)

// The slow path: zone transfers and TSIG-signed queries. They are rare,
// so they use miekg/dns messages and Pack.

// slow answers a query the table handed back (r.Action Transfer or
// Signed). Over TCP, transfers are written to w directly and the returned
// response is empty; otherwise the response is returned.
func (s *Server) slow(snap *snapshot, out, msg []byte, r wire.Result, tcp bool, from netip.Addr, w *bufio.Writer) ([]byte, wire.Result) {
	r.Action = wire.Reply
	req := new(dns.Msg)
	if err := req.Unpack(msg); err != nil || len(req.Question) != 1 {
		r.Rcode = dns.RcodeFormatError
		m := &dns.Msg{MsgHdr: dns.MsgHdr{Response: true, Rcode: dns.RcodeFormatError}}
		if len(msg) >= 2 {
			m.Id = binary.BigEndian.Uint16(msg)
		}
		return packOrNothing(out, m), r
	}
	var key *model.Key
	var mac string
	var origID uint16
	if t := req.IsTsig(); t != nil {
		if !tsigIntact(msg, r.Query.TSIG) {
			// RFC 8945 §5.2: a TSIG record that cannot be interpreted makes
			// the message corrupt. An error reply's TSIG would copy its
			// fields, and an empty algorithm name does not even pack.
			r.Rcode = dns.RcodeFormatError
			m := new(dns.Msg)
			m.SetRcode(req, dns.RcodeFormatError)
			s.echoOPT(snap, m, req)
			return packOrNothing(out, m), r
		}
		k, terr := verifyTSIG(snap, msg, t)
		if terr != dns.RcodeSuccess {
			s.metrics.tsigFailures.WithLabelValues(dns.RcodeToString[int(terr)]).Inc()
			if ok, n := s.limiter.allow("tsig"); ok {
				s.log.Warn("TSIG check failed", "peer", from, "key", t.Hdr.Name, "error", dns.RcodeToString[int(terr)], "qname", req.Question[0].Name, "similar_suppressed", n)
			}
			r.Rcode = dns.RcodeNotAuth
			return tsigErrorReply(out, req, t, terr, k), r
		}
		key, mac, origID = k, t.MAC, t.OrigId
	}
	if qt := req.Question[0].Qtype; qt == dns.TypeAXFR || qt == dns.TypeIXFR {
		return s.transfer(snap, out, req, tsigChain{key, mac, origID}, tcp, from, w, r)
	}
	// A signed ordinary query: answer it without its TSIG, then sign.
	stripped := append([]byte(nil), msg[:r.Query.TSIG]...)
	binary.BigEndian.PutUint16(stripped[10:], binary.BigEndian.Uint16(stripped[10:])-1)
	resp, r2 := snap.table.Respond(out, stripped, tcp)
	if r2.Action != wire.Reply {
		r2.Action = wire.Drop
		return out[:0], r2
	}
	m := new(dns.Msg)
	if err := m.Unpack(resp); err != nil {
		return out[:0], wire.Result{Action: wire.Drop}
	}
	// Compressed as the unsigned answer was: validation sized it so.
	m.Compress = true
	chain := tsigChain{key, mac, origID}
	signed, err := chain.sign(m, false)
	if err == nil && !tcp && len(signed) > udpLimit(&r2.Query, snap.table.MaxUDPSize()) {
		chain = tsigChain{key, mac, origID} // sign the new reply to the same request
		// The TSIG record pushed the answer over the client's limit:
		// send it truncated (and signed), and the client retries over TCP.
		m.Answer, m.Ns, m.Extra = nil, nil, keepOPT(m.Extra)
		m.Truncated = true
		r2.Truncated = true
		signed, err = chain.sign(m, false)
	}
	if err == nil && len(signed) > wire.MaxTCPSize {
		// Validation sizes answers with the largest TSIG record; a bug
		// guard, as over UDP: never a message its length cannot describe.
		err = fmt.Errorf("the signed answer is %d bytes, more than a DNS message holds", len(signed))
	}
	if err != nil {
		s.log.Error("signing a response failed", "err", err)
		return out[:0], wire.Result{Action: wire.Drop}
	}
	return append(out[:0], signed...), r2
}

// udpLimit is the largest UDP answer the client of q accepts.
func udpLimit(q *wire.Query, maxUDP int) int {
	if !q.EDNS {
		return wire.MinUDPSize
	}
	return min(max(int(q.UDPSize), wire.MinUDPSize), maxUDP)
}

// keepOPT returns the OPT record of an additional section, if any.
func keepOPT(extra []dns.RR) []dns.RR {
	for _, rr := range extra {
		if rr.Header().Rrtype == dns.TypeOPT {
			return []dns.RR{rr}
		}
	}
	return nil
}

// tsigIntact reports whether the record at off in msg, a TSIG record,
// holds every field of its RDATA and nothing more (RFC 8945 §4.2).
// miekg/dns reads a record that ends with the message as far as it goes,
// leaving the missing fields empty.
func tsigIntact(msg []byte, off int) bool {
	_, off, err := dns.UnpackDomainName(msg, off)
	if err != nil || off+10 > len(msg) {
		return false
	}
	end := off + 10 + int(binary.BigEndian.Uint16(msg[off+8:]))
	if end > len(msg) {
		return false
	}
	if _, off, err = dns.UnpackDomainName(msg[:end], off+10); err != nil {
		return false
	}
	off += 6 + 2 + 2 // time signed, fudge, MAC size
	if off > end {
		return false
	}
	off += int(binary.BigEndian.Uint16(msg[off-2:])) + 2 + 2 + 2 // MAC, original ID, error, other len
	if off > end {
		return false
	}
	return off+int(binary.BigEndian.Uint16(msg[off-2:])) == end
}

// verifyTSIG checks the TSIG of a raw message against our keys and
// returns the key and a TSIG error code (RFC 8945 §5.2).
func verifyTSIG(snap *snapshot, raw []byte, t *dns.TSIG) (*model.Key, uint16) {
	k := snap.keys[strings.ToLower(t.Hdr.Name)]
	if k == nil || !strings.EqualFold(dns.CanonicalName(t.Algorithm), k.Algorithm) {
		return nil, dns.RcodeBadKey
	}
	// TsigVerify rewrites the header of the buffer it is given: verify a copy.
	switch err := dns.TsigVerify(append([]byte(nil), raw...), k.Secret, "", false); err {
	case nil:
		return k, dns.RcodeSuccess
	case dns.ErrTime:
		return k, dns.RcodeBadTime
	default:
		return k, dns.RcodeBadSig
	}
}

// tsigChain signs the replies to one request: with the request's key
// (none for an unsigned request), each MAC chained to the previous one
// (the request's, then each message's in a transfer, RFC 8945 §5.3.1).
type tsigChain struct {
	key *model.Key
	mac string
	// origID is the request's original ID, from its TSIG record. It
	// differs from the header ID when a forwarder rewrote the latter.
	origID uint16
}

// sign packs m and, with a key, signs it and advances the chain.
// timersOnly signs all but the first message of a transfer that way.
func (c *tsigChain) sign(m *dns.Msg, timersOnly bool) ([]byte, error) {
	if c.key == nil {
		return m.Pack()
	}
	m.SetTsig(c.key.Name, c.key.Algorithm, 300, time.Now().Unix())
	m.Extra[len(m.Extra)-1].(*dns.TSIG).OrigId = c.origID
	b, mac, err := generateTSIG(m, c.key.Secret, c.mac, timersOnly)
	if err != nil {
		return nil, err
	}
	c.mac = mac
	return b, nil
}

// generateTSIG is dns.TsigGenerate, keeping m's header ID. The MAC covers
// the message with the TSIG's original ID in place of the header ID (RFC
// 8945 §4.3.1), and TsigGenerate leaves that ID in the message it returns;
// but the reply must carry the ID of the query as received, or a
// forwarder that rewrote it cannot match the reply and drops it.
func generateTSIG(m *dns.Msg, secret, prevMAC string, timersOnly bool) ([]byte, string, error) {
	b, mac, err := dns.TsigGenerate(m, secret, prevMAC, timersOnly)
	if err != nil {
		return nil, "", err
	}
	binary.BigEndian.PutUint16(b, m.Id)
	return b, mac, nil
}

// tsigErrorReply answers NOTAUTH with the TSIG error (RFC 8945 §5.2):
// unsigned for BADKEY and BADSIG, signed for BADTIME.
func tsigErrorReply(out []byte, req *dns.Msg, t *dns.TSIG, code uint16, k *model.Key) []byte {
	m := new(dns.Msg)
	m.SetRcode(req, dns.RcodeNotAuth)
	m.SetTsig(t.Hdr.Name, t.Algorithm, t.Fudge, time.Now().Unix())
	rr := m.Extra[len(m.Extra)-1].(*dns.TSIG)
	rr.Error = code
	rr.OrigId = t.OrigId
	secret, mac := "", ""
	if code == dns.RcodeBadTime && k != nil {
		secret, mac = k.Secret, t.MAC
		rr.OtherLen = 6
		rr.OtherData = fmt.Sprintf("%012x", uint64(time.Now().Unix())&(1<<48-1))
	}
	b, _, err := generateTSIG(m, secret, mac, false)
	if err != nil {
		return out[:0]
	}
	return append(out[:0], b...)
}

// echoOPT gives m an OPT record when req had one (RFC 6891 §6.1.1): our
// buffer size and the query's DO bit, as the fast path writes it.
func (s *Server) echoOPT(snap *snapshot, m, req *dns.Msg) {
	if o := req.IsEdns0(); o != nil {
		m.SetEdns0(uint16(snap.table.MaxUDPSize()), o.Do())
	}
}

func packOrNothing(out []byte, m *dns.Msg) []byte {
	b, err := m.Pack()
	if err != nil {
		return out[:0]
	}
	return append(out[:0], b...)
}

// transfer serves AXFR (RFC 5936) and IXFR (RFC 1995).
func (s *Server) transfer(snap *snapshot, out []byte, req *dns.Msg, chain tsigChain, tcp bool, from netip.Addr, w *bufio.Writer, r wire.Result) ([]byte, wire.Result) {
	key := chain.key
	q := req.Question[0]
	origin := strings.ToLower(q.Name)
	kind := "axfr"
	if q.Qtype == dns.TypeIXFR {
		kind = "ixfr"
	}
	ze := snap.zones[origin]
	if ze != nil {
		r.Zone = ze.cfg.Origin // counted with the zone's queries
	}
	refuse := func(rcode int, why string) ([]byte, wire.Result) {
		if ok, n := s.limiter.allow("transfer-refused"); ok {
			s.log.Warn("zone transfer refused", "zone", origin, "type", strings.ToUpper(kind), "peer", from, "why", why, "similar_suppressed", n)
		}
		s.metrics.transfers.WithLabelValues(kind, strings.ToLower(dns.RcodeToString[rcode])).Inc()
		m := new(dns.Msg)
		m.SetRcode(req, rcode)
		s.echoOPT(snap, m, req)
		r.Rcode = rcode
		b, err := chain.sign(m, false)
		if err != nil {
			return out[:0], r
		}
		if tcp && w != nil {
			writeFramed(w, b)
			return out[:0], r
		}
		return append(out[:0], b...), r
	}
	if rcode, why := transferRefusal(snap, ze, q, origin, key, from, tcp); why != "" {
		return refuse(rcode, why)
	}
	rrs, kind, why := transferRecords(ze, req, kind, tcp)
	if why != "" {
		return refuse(dns.RcodeFormatError, why)
	}
	return s.sendTransfer(snap, out, req, chain, tcp, w, r, outgoingTransfer{origin: origin, kind: kind, rrs: rrs, serial: ze.cur.Serial(), peer: from})
}

// transferRefusal says why a transfer request is refused, with its rcode,
// or "" when it is allowed.
func transferRefusal(snap *snapshot, ze *zoneEntry, q dns.Question, origin string, key *model.Key, from netip.Addr, tcp bool) (int, string) {
	switch {
	case q.Qclass != dns.ClassINET:
		return dns.RcodeRefused, "class " + dns.Class(q.Qclass).String() + ": only IN is served"
	case ze == nil && snap.inZones(origin):
		return dns.RcodeNotAuth, "not a zone apex"
	case ze == nil:
		return dns.RcodeRefused, "not our zone"
	case !ze.cfg.Transfer.Allowed(from):
		return dns.RcodeRefused, "address not in transfer allow"
	case ze.cfg.Transfer.Key != "" && (key == nil || key.Name != ze.cfg.Transfer.Key):
		return dns.RcodeRefused, "transfers need TSIG key " + ze.cfg.Transfer.Key
	case q.Qtype == dns.TypeAXFR && !tcp:
		return dns.RcodeNotImplemented, "AXFR over UDP (RFC 5936 §4.2)"
	}
	return 0, ""
}

// transferRecords chooses the records a transfer sends: the whole zone
// for AXFR; for IXFR the differences since the client's serial, or the
// whole zone when the history does not reach back to it, or over UDP only
// the current SOA. why is set when the IXFR request is malformed.
func transferRecords(ze *zoneEntry, req *dns.Msg, kind string, tcp bool) (rrs []dns.RR, _ string, why string) {
	cur := ze.cur
	if req.Question[0].Qtype == dns.TypeAXFR {
		return cur.AXFR(), kind, ""
	}
	var soa *dns.SOA
	if len(req.Ns) == 1 {
		soa, _ = req.Ns[0].(*dns.SOA)
	}
	if soa == nil {
		return nil, kind, "IXFR without the client's SOA"
	}
	if !tcp {
		// RFC 1995 §2: over UDP, the current SOA tells the client to come
		// back over TCP if it is behind.
		return []dns.RR{cur.SOA}, "ixfr_udp", ""
	}
	rrs, kind = ixfrRecords(ze, soa.Serial)
	return rrs, kind, ""
}

// outgoingTransfer is a transfer that was allowed: what to send, and what
// to log about it.
type outgoingTransfer struct {
	origin, kind string
	rrs          []dns.RR
	serial       uint32
	peer         netip.Addr
}

// sendTransfer sends the records of a transfer in as many messages as
// they need, each signed in the TSIG chain of the request.
func (s *Server) sendTransfer(snap *snapshot, out []byte, req *dns.Msg, chain tsigChain, tcp bool, w *bufio.Writer, r wire.Result, x outgoingTransfer) ([]byte, wire.Result) {
	key := chain.key
	first := true
	var sent int
	for _, chunk := range chunks(x.rrs, messageOverhead(req, key)) {
		m := &dns.Msg{Compress: true} // as validation sized the records
		m.SetReply(req)
		m.Authoritative = true
		m.Answer = chunk
		s.echoOPT(snap, m, req)
		b, err := chain.sign(m, !first)
		if err == nil && len(b) > wire.MaxTCPSize {
			// Config validation sizes every record with the largest TSIG
			// record, so this is a bug guard: a message longer than its
			// two-byte length prefix would corrupt the stream.
			err = fmt.Errorf("a transfer message of %d bytes does not fit a DNS message", len(b))
		}
		if err != nil {
			s.log.Error("zone transfer failed", "zone", x.origin, "err", err)
			s.metrics.transfers.WithLabelValues(x.kind, "error").Inc()
			r.Rcode = dns.RcodeServerFailure
			return out[:0], r
		}
		first = false
		if !tcp {
			out = append(out[:0], b...)
			break
		}
		if err := writeFramed(w, b); err != nil {
			s.metrics.transfers.WithLabelValues(x.kind, "error").Inc()
			return out[:0], r
		}
		sent++
	}
	if tcp {
		if err := w.Flush(); err != nil {
			s.metrics.transfers.WithLabelValues(x.kind, "error").Inc()
			return out[:0], r
		}
		out = out[:0]
	}
	s.metrics.transfers.WithLabelValues(x.kind, "ok").Inc()
	if tcp {
		// Over TCP the peer's address is proven: its gauges say what it
		// holds (an IXFR that found it up to date counts too).
		s.metrics.transferred.WithLabelValues(x.origin, x.peer.String()).Set(float64(x.serial))
		s.metrics.transferredTime.WithLabelValues(x.origin, x.peer.String()).SetToCurrentTime()
		s.log.Info("zone transfer", "zone", x.origin, "type", x.kind, "serial", x.serial, "records", len(x.rrs), "messages", sent, "peer", x.peer, "tsig", key != nil)
	} else if ok, n := s.limiter.allow("transfer-udp"); ok {
		// Over UDP the peer's address is not proven: anyone can send
		// these from an allowed address, as fast as they like.
		s.log.Info("zone transfer", "zone", x.origin, "type", x.kind, "serial", x.serial, "records", len(x.rrs), "messages", 1, "peer", x.peer, "tsig", key != nil, "similar_suppressed", n)
	}
	return out, r
}

// writeFramed writes one message over TCP with its length prefix (RFC
// 1035 §4.2.2). A message the prefix cannot describe is refused rather
// than sent with a wrapped length.
func writeFramed(w *bufio.Writer, b []byte) error {
	if len(b) > wire.MaxTCPSize {
		return fmt.Errorf("a message of %d bytes does not fit a TCP length prefix", len(b))
	}
	var l [2]byte
	binary.BigEndian.PutUint16(l[:], uint16(len(b)))
	w.Write(l[:])
	_, err := w.Write(b)
	return err
}

// inZones reports whether name lies inside one of the zones.
func (s *snapshot) inZones(name string) bool {
	for o := range s.zones {
		if dns.IsSubDomain(o, name) {
			return true
		}
	}
	return false
}

// ixfrRecords returns the IXFR answer for a client at serial client: the
// current SOA alone when it is up to date; the differences from its
// version to ours when its version is in the history; else the whole zone
// (RFC 1995 §4 allows a full transfer in the IXFR format).
func ixfrRecords(ze *zoneEntry, client uint32) ([]dns.RR, string) {
	cur := ze.cur
	if client == cur.Serial() || serialGreater(client, cur.Serial()) {
		return []dns.RR{cur.SOA}, "ixfr_current"
	}
	start := -1
	for i, step := range ze.history {
		if step.from.Serial == client {
			start = i
		}
	}
	if start < 0 {
		return cur.AXFR(), "ixfr_full"
	}
	rrs := []dns.RR{cur.SOA}
	for _, step := range ze.history[start:] {
		rrs = append(rrs, step.from)
		rrs = append(rrs, step.deleted...)
		rrs = append(rrs, step.to)
		rrs = append(rrs, step.added...)
	}
	return append(rrs, cur.SOA), "ixfr"
}

// messageOverhead is what a transfer message holds besides its records:
// the header, the question, the OPT record when the query had one, and
// the TSIG record when signed.
func messageOverhead(req *dns.Msg, key *model.Key) int {
	n := 12 + len(req.Question[0].Name) + 1 + 4
	if req.IsEdns0() != nil {
		n += 11
	}
	if key != nil {
		n += key.SignatureLen()
	}
	return n
}

// chunks splits records into groups that fit a message with overhead
// bytes of other content, each record counted without compression so that
// the sum is an upper bound. A record too large to share a message gets
// one of its own; validation makes sure it fits (compressed) there.
func chunks(rrs []dns.RR, overhead int) [][]dns.RR {
	budget := wire.MaxTCPSize - overhead
	var out [][]dns.RR
	start, size := 0, 0
	for i, rr := range rrs {
		l := dns.Len(rr)
		if size+l > budget && i > start {
			out = append(out, rrs[start:i])
			start, size = i, 0
		}
		size += l
	}
	return append(out, rrs[start:])
}
