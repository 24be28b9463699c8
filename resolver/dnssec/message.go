package dnssec

import (
	"encoding/binary"
	"errors"

	"github.com/grpc-config-dns/grpc-config-dns/resolver/internal/dnswire"
)

// message is what validation reads of a DNS message.
type message struct {
	rcode                int
	answers, authorities []record
}

// record is a resource record, its data in canonical form.
type record struct {
	name  string
	rtype uint16
	class uint16
	ttl   uint32
	rdata []byte
}

// parseMessage reads a DNS message; every read checks its bounds.
func parseMessage(b []byte) (*message, error) {
	if len(b) < 12 {
		return nil, dnswire.ErrShort
	}
	m := &message{rcode: int(b[3] & 0xf)}
	qd, an, ns := binary.BigEndian.Uint16(b[4:]), binary.BigEndian.Uint16(b[6:]), binary.BigEndian.Uint16(b[8:])
	off := 12
	for range qd {
		_, next, err := dnswire.ReadName(b, off)
		if err != nil {
			return nil, err
		}
		if off = next + 4; off > len(b) {
			return nil, dnswire.ErrShort
		}
	}
	var err error
	if m.answers, off, err = readSection(b, off, an); err != nil {
		return nil, err
	}
	if m.authorities, _, err = readSection(b, off, ns); err != nil {
		return nil, err
	}
	return m, nil
}

func readSection(b []byte, off int, count uint16) ([]record, int, error) {
	var out []record
	for range count {
		name, next, err := dnswire.ReadName(b, off)
		if err != nil {
			return nil, 0, err
		}
		if next+10 > len(b) {
			return nil, 0, dnswire.ErrShort
		}
		rr := record{name: name, rtype: binary.BigEndian.Uint16(b[next:]), class: binary.BigEndian.Uint16(b[next+2:]), ttl: binary.BigEndian.Uint32(b[next+4:])}
		n := int(binary.BigEndian.Uint16(b[next+8:]))
		start := next + 10
		if start+n > len(b) {
			return nil, 0, errors.New("a record's data runs past the message")
		}
		if rr.rdata, err = dnswire.CanonicalData(b, start, b[start:start+n], rr.rtype); err != nil {
			return nil, 0, err
		}
		out = append(out, rr)
		off = start + n
	}
	return out, off, nil
}
