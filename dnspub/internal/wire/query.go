// Package wire answers DNS queries from precomputed wire-format messages.
//
// A [Table] is built once per published version of the zones: for every
// name and record type it holds the complete response message, packed and
// compressed. Answering a query is then a parse of the header and question
// (no Unpack), a map lookup, a copy, and a patch of the ID, the RD and CD
// flags and the question (so that it is echoed in the case the client
// asked). Negative answers are assembled from a precomputed SOA record.
// Nothing is allocated per query.
//
// The package does no I/O. Zone transfers and TSIG-signed queries are
// recognised and handed back to the caller (see [Action]).
package wire

import "encoding/binary"

// DNS constants used on the hot path.
const (
	headerLen = 12
	optRRLen  = 11 // root owner, type, class, TTL, RDLENGTH 0

	typeOPT  = 41
	typeTSIG = 250
	typeIXFR = 251
	typeAXFR = 252
	typeANY  = 255

	classINET = 1

	// MinUDPSize is the payload every DNS client accepts (RFC 1035).
	MinUDPSize = 512
	// MaxTCPSize is the largest message over TCP.
	MaxTCPSize = 65535
)

// Response codes, as in the header (and the extended code of BADVERS).
const (
	RcodeSuccess  = 0
	RcodeFormErr  = 1
	RcodeServFail = 2
	RcodeNXDomain = 3
	RcodeNotImp   = 4
	RcodeRefused  = 5
	RcodeNotAuth  = 9
	RcodeBadVers  = 16
)

// Query is what the parse of a query message found.
type Query struct {
	Opcode uint8
	// QNameEnd is the offset just past the question name; the question
	// occupies [12, QNameEnd+4).
	QNameEnd      int
	QType, QClass uint16
	// EDNS is set when the query carries an OPT record (RFC 6891).
	EDNS    bool
	UDPSize uint16
	Version uint8
	DO      bool
	// TSIG is the offset of the TSIG record (the last additional record),
	// or 0 when the query is not signed.
	TSIG int
}

// parseResult says what to do with a message besides answering it.
type parseResult int8

const (
	parseOK parseResult = iota
	// parseDrop: not a query we may answer (too short to hold an ID, or a
	// response, which must never be answered to avoid loops).
	parseDrop
	// parseFormErr: the question could not be read.
	parseFormErr
	// parseFormErrQ: the question was read but the rest is malformed;
	// the question is echoed.
	parseFormErrQ
	// parseNotImp: an opcode other than QUERY.
	parseNotImp
)

// parse reads a query message into q: the header, the one question (its
// name, type and class), and the EDNS and TSIG records among the
// additional ones.
func parse(msg []byte, q *Query) parseResult {
	if len(msg) < headerLen || msg[2]&0x80 != 0 {
		return parseDrop
	}
	qd, skip, ar := parseHeader(msg, q)
	if q.Opcode != 0 {
		peekOPT(msg, q, qd, skip, ar)
		return parseNotImp
	}
	if qd != 1 {
		peekOPT(msg, q, qd, skip, ar)
		return parseFormErr
	}
	off := questionNameEnd(msg)
	if off < 0 || off+4 > len(msg) {
		return parseFormErr
	}
	q.QNameEnd = off
	q.QType = binary.BigEndian.Uint16(msg[off:])
	q.QClass = binary.BigEndian.Uint16(msg[off+2:])
	if skip == 0 && ar == 0 {
		return parseOK // most queries without EDNS: no call
	}
	return parseRecords(msg, q, off+4, skip, ar)
}

// parseHeader reads the opcode of a query's header into q, and returns
// its counts of questions, of answer and authority records (skipped
// alike), and of additional records.
func parseHeader(msg []byte, q *Query) (qd, skip, ar int) {
	q.Opcode = msg[2] >> 3 & 0xf
	qd = int(binary.BigEndian.Uint16(msg[4:]))
	skip = int(binary.BigEndian.Uint16(msg[6:])) + int(binary.BigEndian.Uint16(msg[8:]))
	ar = int(binary.BigEndian.Uint16(msg[10:]))
	return qd, skip, ar
}

// questionNameEnd returns the offset just past the question's name, or -1
// when it is malformed. The name is labels only: a compression pointer
// cannot point anywhere useful this early in the message.
func questionNameEnd(msg []byte) int {
	for off := headerLen; off < len(msg); {
		l := int(msg[off])
		if l == 0 {
			return off + 1
		}
		if off += 1 + l; l > 63 || off-headerLen+1 > 255 {
			return -1
		}
	}
	return -1
}

// parseRecords skips the answer and authority records from off (an IXFR
// query carries a SOA in the authority section), then reads the OPT and
// TSIG records among the additional ones into q.
func parseRecords(msg []byte, q *Query, off, skip, ar int) parseResult {
	for range skip {
		if off = skipRR(msg, off, nil); off < 0 {
			return parseFormErrQ
		}
	}
	for i := range ar {
		start := off
		var rr rrInfo
		if off = skipRR(msg, off, &rr); off < 0 {
			return parseFormErrQ
		}
		switch rr.typ {
		case typeOPT:
			// One OPT, owned by the root (RFC 6891 §6.1.1).
			if q.EDNS || msg[start] != 0 {
				return parseFormErrQ
			}
			q.EDNS = true
			q.UDPSize = rr.class
			q.Version = uint8(rr.ttl >> 16)
			q.DO = rr.ttl&0x8000 != 0
		case typeTSIG:
			// TSIG must be the last record (RFC 8945 §5.1).
			if i != ar-1 {
				return parseFormErrQ
			}
			q.TSIG = start
		}
	}
	return parseOK
}

// peekOPT looks for the OPT record of a message that is answered with an
// error before its question is read (an unknown opcode, no question or
// several), so that the answer carries an OPT when the query did (RFC 6891
// §6.1.1). A message it cannot walk is left as without EDNS.
func peekOPT(msg []byte, q *Query, qd, skip, ar int) {
	off := headerLen
	for range qd {
		if off = skipName(msg, off); off < 0 || off+4 > len(msg) {
			return
		}
		off += 4
	}
	for range skip {
		if off = skipRR(msg, off, nil); off < 0 {
			return
		}
	}
	for range ar {
		start := off
		var rr rrInfo
		if off = skipRR(msg, off, &rr); off < 0 {
			return
		}
		if rr.typ == typeOPT && msg[start] == 0 {
			q.EDNS, q.UDPSize, q.DO = true, rr.class, rr.ttl&0x8000 != 0
			return
		}
	}
}

type rrInfo struct {
	typ, class uint16
	ttl        uint32
}

// skipName returns the offset after the name at off (which may end in a
// compression pointer), or -1 when it is malformed.
func skipName(msg []byte, off int) int {
	for n := 0; ; n++ {
		if off >= len(msg) || n > 127 {
			return -1
		}
		l := int(msg[off])
		if l == 0 {
			return off + 1
		}
		if l&0xc0 == 0xc0 {
			return off + 2
		}
		if l > 63 {
			return -1
		}
		off += 1 + l
	}
}

// skipRR returns the offset after the record at off, or -1 when it is
// malformed. Names in records may use compression pointers.
func skipRR(msg []byte, off int, rr *rrInfo) int {
	if off = skipName(msg, off); off < 0 {
		return -1
	}
	if off+10 > len(msg) {
		return -1
	}
	if rr != nil {
		rr.typ = binary.BigEndian.Uint16(msg[off:])
		rr.class = binary.BigEndian.Uint16(msg[off+2:])
		rr.ttl = binary.BigEndian.Uint32(msg[off+4:])
	}
	rdlen := int(binary.BigEndian.Uint16(msg[off+8:]))
	off += 10 + rdlen
	if off > len(msg) {
		return -1
	}
	return off
}
