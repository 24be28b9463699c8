// Package dnswire reads the parts of DNS messages that the resolver and
// its DNSSEC validator (resolver/dnssec) both read: names, and record data
// in canonical form. Every read checks its bounds: no input makes it
// panic.
package dnswire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
)

// ErrShort is a message that ends before what it says it holds.
var ErrShort = errors.New("message ends early")

// ReadName reads the name at off in msg, following compression pointers,
// and returns it fully qualified with the offset after it. Pointers must
// point backwards, which bounds the walk.
func ReadName(msg []byte, off int) (string, int, error) {
	var sb strings.Builder
	next := -1
	for {
		if off >= len(msg) {
			return "", 0, ErrShort
		}
		c := int(msg[off])
		switch c & 0xC0 {
		case 0x00:
			if c == 0 {
				if next < 0 {
					next = off + 1
				}
				if sb.Len() == 0 {
					return ".", next, nil
				}
				return sb.String(), next, nil
			}
			if off+1+c > len(msg) {
				return "", 0, ErrShort
			}
			sb.Write(msg[off+1 : off+1+c])
			sb.WriteByte('.')
			if sb.Len() > 255 {
				return "", 0, errors.New("name longer than 255 bytes")
			}
			off += 1 + c
		case 0xC0:
			if off+1 >= len(msg) {
				return "", 0, ErrShort
			}
			ptr := int(binary.BigEndian.Uint16(msg[off:]) & 0x3FFF)
			if ptr >= off {
				return "", 0, errors.New("name compression pointer does not point backwards")
			}
			if next < 0 {
				next = off + 2
			}
			off = ptr
		default:
			return "", 0, fmt.Errorf("unknown label type %#x", c&0xC0)
		}
	}
}

// CanonicalData is the data of a record of type t, msg[start:start+len(data)],
// in canonical form (RFC 4034 §6.2, RFC 6840 §5.1): the names of the
// types that may compress them expanded and in lower case, any other
// data as it is.
func CanonicalData(msg []byte, start int, data []byte, t uint16) ([]byte, error) {
	// Where the names are: how many fixed bytes come first, how many
	// names follow, and how many fixed bytes after them.
	var pre, names int
	switch t {
	case 2, 5, 12: // NS, CNAME, PTR
		names = 1
	case 6:
		names = 2
	case 15: // MX
		pre, names = 2, 1
	case 33: // SRV
		pre, names = 6, 1
	default:
		return bytes.Clone(data), nil
	}
	if len(data) < pre {
		return nil, ErrShort
	}
	out := bytes.Clone(data[:pre])
	off := start + pre
	for range names {
		name, next, err := ReadName(msg[:start+len(data)], off)
		if err != nil {
			return nil, err
		}
		out = append(out, WireLower(name)...)
		off = next
	}
	return append(out, msg[off:start+len(data)]...), nil
}

// WireLower is a fully qualified name in lower-case wire format.
func WireLower(name string) []byte {
	var out []byte
	for _, l := range Labels(name) {
		out = append(out, byte(len(l)))
		out = append(out, l...)
	}
	return append(out, 0)
}

// Labels splits a fully qualified name into its labels, lower case.
func Labels(name string) []string {
	name = strings.TrimSuffix(strings.ToLower(name), ".")
	if name == "" {
		return nil
	}
	return strings.Split(name, ".")
}
