package resolver

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"strings"

	"github.com/grpc-config-dns/grpc-config-dns/resolver/internal/dnswire"
)

// DNS messages in wire format, written and read here for the five record
// types the resolver needs. github.com/miekg/dns, which the publisher uses,
// knows every type and brings DNSSEC and TLS with it, and
// golang.org/x/net/dns/dnsmessage would be a second copy of the one the
// standard library vendors: each costs every gRPC client more than this
// file does (TestClientSize).

// The record types and response codes the resolver reads.
const (
	typeA     uint16 = 1
	typeCNAME uint16 = 5
	typeSOA   uint16 = 6
	typeTXT   uint16 = 16
	typeAAAA  uint16 = 28
	typeOPT   uint16 = 41

	rcodeSuccess   = 0
	rcodeFormErr   = 1
	rcodeNameError = 3

	// minMsgSize is the UDP payload a query without EDNS0 may get.
	minMsgSize = 512
	// headerLen is the length of the fixed message header.
	headerLen = 12
)

// typeName is the mnemonic of a record type, for messages.
func typeName(t uint16) string {
	switch t {
	case typeA:
		return "A"
	case typeAAAA:
		return "AAAA"
	case typeTXT:
		return "TXT"
	case typeCNAME:
		return "CNAME"
	case typeSOA:
		return "SOA"
	}
	return fmt.Sprintf("TYPE%d", t)
}

// rcodeName is the mnemonic of a response code, for messages.
func rcodeName(rc int) string {
	if names := [...]string{"NOERROR", "FORMERR", "SERVFAIL", "NXDOMAIN", "NOTIMP", "REFUSED"}; rc >= 0 && rc < len(names) {
		return names[rc]
	}
	return fmt.Sprintf("RCODE%d", rc)
}

// fqdn returns name with a final dot.
func fqdn(name string) string {
	if strings.HasSuffix(name, ".") {
		return name
	}
	return name + "."
}

// newID returns a random message ID: an off-path attacker must guess it to
// spoof an answer.
func newID() uint16 { return uint16(rand.Uint32()) }

// query is one question, as sent.
type query struct {
	id    uint16
	name  string // fully qualified
	qtype uint16
	edns  bool // with an OPT record advertising ednsSize
	// do asks for DNSSEC records (the DO bit, RFC 3225); ad asks whether
	// the answer was validated (the AD bit, RFC 6840 §5.7).
	do, ad bool
}

// pack writes q in wire format, recursion desired.
func (q query) pack() ([]byte, error) {
	b := make([]byte, headerLen, 64)
	binary.BigEndian.PutUint16(b, q.id)
	b[2] = 1 // RD
	if q.ad {
		b[3] = 0x20
	}
	b[5] = 1 // QDCOUNT
	var err error
	if b, err = appendName(b, q.name); err != nil {
		return nil, err
	}
	b = binary.BigEndian.AppendUint16(b, q.qtype)
	b = binary.BigEndian.AppendUint16(b, classINET)
	if q.edns {
		b[11] = 1 // ARCOUNT
		// OPT (RFC 6891 §6.1.2): root owner, class = UDP payload size,
		// TTL = extended RCODE, version 0, no flags; no options.
		b = append(b, 0)
		b = binary.BigEndian.AppendUint16(b, typeOPT)
		b = binary.BigEndian.AppendUint16(b, ednsSize)
		var do byte
		if q.do {
			do = 0x80
		}
		b = append(b, 0, 0, do, 0, 0, 0)
	}
	return b, nil
}

// appendName appends a fully qualified name in wire format, uncompressed.
func appendName(b []byte, name string) ([]byte, error) {
	if name == "." {
		return append(b, 0), nil
	}
	if !strings.HasSuffix(name, ".") {
		return nil, fmt.Errorf("name %q is not fully qualified", name)
	}
	if len(name) > 254 {
		return nil, fmt.Errorf("name %q is %d bytes, longer than DNS allows (253)", name, len(name)-1)
	}
	for _, label := range strings.Split(name[:len(name)-1], ".") {
		if label == "" || len(label) > 63 {
			return nil, fmt.Errorf("name %q: a label is empty or longer than 63 bytes", name)
		}
		b = append(b, byte(len(label)))
		b = append(b, label...)
	}
	return append(b, 0), nil
}

// udpSize is the largest UDP reply q may get.
func (q query) udpSize() int {
	if q.edns {
		return ednsSize
	}
	return minMsgSize
}

// record is a resource record of a reply, with the data of the types the
// resolver reads.
type record struct {
	name  string // as in the message, fully qualified
	rtype uint16
	class uint16
	ttl   uint32
	addr  netip.Addr // A, AAAA
	txt   []string   // TXT: the strings, raw bytes
	alias string     // CNAME: the target
	// minimum is the SOA's negative-caching TTL.
	minimum uint32
}

// question is the question of a reply.
type question struct {
	name         string // fully qualified
	qtype, class uint16
}

// message is a reply, parsed.
type message struct {
	id                                                 uint16
	response, authoritative, truncated, recursionAvail bool
	// authenticData is the AD bit: the nameserver validated the answer.
	authenticData bool
	// raw is the message as received, for a Validator.
	raw                  []byte
	rcode                int
	questions            []question
	answers, authorities []record
	// edns is set when the reply carries an OPT record.
	edns bool
}

// errUnreadable marks a reply that does not parse: a datagram cut short
// (larger than the buffer the query advertised) or a broken server.
var errUnreadable = errors.New("unreadable reply")

// wireReader reads a message; every read checks its bounds, so no input
// makes it panic (FuzzParseAnswer).
type wireReader struct {
	msg []byte
	off int
}

var errShort = errors.New("message ends early")

func (r *wireReader) bytes(n int) ([]byte, error) {
	if n < 0 || len(r.msg)-r.off < n {
		return nil, errShort
	}
	b := r.msg[r.off : r.off+n]
	r.off += n
	return b, nil
}

func (r *wireReader) u16() (uint16, error) {
	b, err := r.bytes(2)
	if err != nil {
		return 0, err
	}
	return binary.BigEndian.Uint16(b), nil
}

func (r *wireReader) u32() (uint32, error) {
	b, err := r.bytes(4)
	if err != nil {
		return 0, err
	}
	return binary.BigEndian.Uint32(b), nil
}

// name reads a possibly compressed name (RFC 1035 §4.1.4) at the reader's
// offset and moves past it.
func (r *wireReader) name() (string, error) {
	n, next, err := dnswire.ReadName(r.msg, r.off)
	if err != nil {
		return "", err
	}
	r.off = next
	return n, nil
}

// parseMessage reads a reply.
func parseMessage(b []byte) (*message, error) {
	m, err := readMessage(b)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errUnreadable, err)
	}
	return m, nil
}

func readMessage(b []byte) (*message, error) {
	r := &wireReader{msg: b}
	h, err := r.bytes(headerLen)
	if err != nil {
		return nil, err
	}
	flags := binary.BigEndian.Uint16(h[2:])
	m := &message{id: binary.BigEndian.Uint16(h), response: flags&0x8000 != 0, authoritative: flags&0x0400 != 0,
		truncated: flags&0x0200 != 0, recursionAvail: flags&0x0080 != 0, authenticData: flags&0x0020 != 0, rcode: int(flags & 0xF)}
	qd, an, ns, ar := binary.BigEndian.Uint16(h[4:]), binary.BigEndian.Uint16(h[6:]), binary.BigEndian.Uint16(h[8:]), binary.BigEndian.Uint16(h[10:])
	for range qd {
		var q question
		if q.name, err = r.name(); err != nil {
			return nil, fmt.Errorf("question: %v", err)
		}
		if q.qtype, err = r.u16(); err != nil {
			return nil, fmt.Errorf("question: %v", err)
		}
		if q.class, err = r.u16(); err != nil {
			return nil, fmt.Errorf("question: %v", err)
		}
		m.questions = append(m.questions, q)
	}
	if m.answers, err = readSection(r, an); err != nil {
		return nil, fmt.Errorf("answer section: %v", err)
	}
	if m.authorities, err = readSection(r, ns); err != nil {
		return nil, fmt.Errorf("authority section: %v", err)
	}
	extra, err := readSection(r, ar)
	if err != nil {
		return nil, fmt.Errorf("additional section: %v", err)
	}
	for _, rr := range extra {
		if rr.rtype == typeOPT {
			m.edns = true
			// The upper bits of an extended RCODE (BADVERS…) are the
			// first byte of the OPT record's TTL (RFC 6891 §6.1.3).
			m.rcode |= int(rr.ttl>>24) << 4
		}
	}
	return m, nil
}

// readSection reads count records, the types the resolver uses with their
// data, others with their header only.
func readSection(r *wireReader, count uint16) ([]record, error) {
	var out []record
	for range count {
		var rr record
		var err error
		if rr.name, err = r.name(); err != nil {
			return nil, err
		}
		if rr.rtype, err = r.u16(); err != nil {
			return nil, err
		}
		if rr.class, err = r.u16(); err != nil {
			return nil, err
		}
		if rr.ttl, err = r.u32(); err != nil {
			return nil, err
		}
		n, err := r.u16()
		if err != nil {
			return nil, err
		}
		start := r.off
		data, err := r.bytes(int(n))
		if err != nil {
			return nil, err
		}
		if err := rr.readData(r.msg, start, data); err != nil {
			return nil, fmt.Errorf("%s record of %s: %v", typeName(rr.rtype), rr.name, err)
		}
		out = append(out, rr)
	}
	return out, nil
}

// readData reads the data of the record types the resolver uses; data is
// msg[start:start+len(data)], as names in it may point into msg.
func (rr *record) readData(msg []byte, start int, data []byte) error {
	var err error
	switch rr.rtype {
	case typeA:
		if len(data) != 4 {
			return fmt.Errorf("%d bytes of data, want 4", len(data))
		}
		rr.addr = netip.AddrFrom4([4]byte(data))
	case typeAAAA:
		if len(data) != 16 {
			return fmt.Errorf("%d bytes of data, want 16", len(data))
		}
		rr.addr = netip.AddrFrom16([16]byte(data))
	case typeTXT:
		rr.txt, err = txtStrings(data)
	case typeCNAME:
		rr.alias, err = cnameTarget(msg, start, len(data))
	case typeSOA:
		rr.minimum, err = soaMinimum(msg, start, len(data))
	}
	return err
}

// txtStrings reads the data of a TXT record: one string at least, each
// after its length byte.
func txtStrings(data []byte) ([]string, error) {
	var txt []string
	for i := 0; i < len(data); {
		l := int(data[i])
		if i+1+l > len(data) {
			return nil, errShort
		}
		txt = append(txt, string(data[i+1:i+1+l]))
		i += 1 + l
	}
	if len(txt) == 0 {
		return nil, errors.New("no strings")
	}
	return txt, nil
}

// cnameTarget reads the data of a CNAME record, msg[start:start+n], which
// is a name and nothing else.
func cnameTarget(msg []byte, start, n int) (string, error) {
	name, end, err := dnswire.ReadName(msg, start)
	if err != nil {
		return "", err
	}
	if end != start+n {
		return "", errors.New("data longer than the name")
	}
	return name, nil
}

// soaMinimum reads the MINIMUM field of the data of an SOA record,
// msg[start:start+n].
func soaMinimum(msg []byte, start, n int) (uint32, error) {
	r := &wireReader{msg: msg[:start+n], off: start}
	if _, err := r.name(); err != nil { // MNAME
		return 0, err
	}
	if _, err := r.name(); err != nil { // RNAME
		return 0, err
	}
	if _, err := r.bytes(16); err != nil { // SERIAL REFRESH RETRY EXPIRE
		return 0, err
	}
	return r.u32()
}
