package wire

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/grpc-config-dns/grpc-config-dns/dnspub/internal/cow"
)

// A table is written as bytes so that a restart can answer from it at once,
// before the config it was built from is read again (a fleet's config takes
// seconds to read and validate; its table a fraction of that to load).
//
// The layout, all integers big-endian:
//
//	"GCDT" version(1) maxUDP(2)
//	zones(4)  { keyLen(1) key  originLen(2) origin  nxSOALen(2) nxSOA }
//	nodes(4)  { keyLen(1) key  apex(1)  answers(1)
//	            { qtype(2) minLen(2) fullLen(2) full } }
//
// It carries no checksum: the file that holds it does.

const (
	tableMagic   = "GCDT"
	tableVersion = 1
)

// WriteTo writes t in the layout above.
func (t *Table) WriteTo(w io.Writer) (int64, error) {
	if t.deferred {
		return 0, errors.New("wire: the table has answers left for later: Complete it before writing it")
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	var n int64
	put := func(b ...byte) {
		k, _ := bw.Write(b)
		n += int64(k)
	}
	putStr := func(s string) {
		k, _ := bw.WriteString(s)
		n += int64(k)
	}
	u16 := func(v int) { put(byte(v>>8), byte(v)) }
	u32 := func(v int) { put(byte(v>>24), byte(v>>16), byte(v>>8), byte(v)) }
	putStr(tableMagic)
	put(tableVersion)
	u16(t.maxUDP)
	u32(len(t.zones))
	for key, zi := range t.zones {
		put(byte(len(key)))
		putStr(key)
		u16(len(zi.origin))
		putStr(zi.origin)
		u16(len(zi.nxSOA))
		put(zi.nxSOA...)
	}
	u32(t.nodes.Len())
	for key, nd := range t.nodes.All() {
		put(byte(len(key)), nd.apex, byte(len(nd.answers)))
		putStr(key)
		for _, a := range nd.answers {
			u16(int(a.qtype))
			u16(int(a.minLen))
			u16(len(a.full))
			putStr(a.full)
		}
	}
	return n, bw.Flush()
}

// errTable is what ReadTable says of bytes that are not a table.
var errTable = errors.New("wire: not a table")

// ReadTable reads a table that WriteTo wrote. It checks what answering
// relies on (lengths, the zone of every name, the order of its answers),
// so that bytes that are not a table are refused rather than served; it
// cannot tell a table from another valid one.
func ReadTable(b []byte) (*Table, error) {
	// One string for every name and answer: the table is then a handful
	// of allocations, as a large build's is after compactNodes.
	r := tableReader{s: string(b)}
	if r.str(4) != tableMagic || r.u8() != tableVersion {
		return nil, fmt.Errorf("%w: unknown format", errTable)
	}
	maxUDP := r.u16()
	if r.err == nil && (maxUDP < MinUDPSize || maxUDP > MaxTCPSize) {
		return nil, fmt.Errorf("%w: EDNS buffer cap %d", errTable, maxUDP)
	}
	nz := r.count(1 + 2 + 2)
	zones := make(map[string]*zoneInfo, nz)
	for range nz {
		key := r.str(r.u8())
		origin := r.str(r.u16())
		nx := r.str(r.u16())
		if r.err != nil {
			break
		}
		if !validWireName(key) || zones[key] != nil || len(nx) < 10 {
			return nil, fmt.Errorf("%w: zone %q", errTable, origin)
		}
		// The origin is handed out (Result.Zone, kept by the per-zone
		// metrics): a copy, so that it does not keep the whole table's
		// bytes alive once the table is gone.
		zones[key] = &zoneInfo{origin: strings.Clone(origin), nxSOA: []byte(nx)}
	}
	nn := r.count(3)
	nodes := make([]node, nn)
	var answers []answer
	e := cow.NewEditor[*node](nn)
	for i := range nn {
		keyLen, apex, na := r.u8(), r.u8(), r.u8()
		key := r.str(keyLen)
		if r.err != nil {
			break
		}
		if !validWireName(key) || apex > len(key) || zones[key[apex:]] == nil || !labelStart(key, apex) {
			return nil, fmt.Errorf("%w: name %q", errTable, key)
		}
		if len(answers) < na {
			answers = make([]answer, max(na, 4096))
		}
		nd := &nodes[i]
		nd.apex = uint8(apex)
		nd.answers, answers = answers[:na:na], answers[na:]
		for j := range nd.answers {
			a := &nd.answers[j]
			a.qtype, a.minLen = uint16(r.u16()), uint16(r.u16())
			a.full = r.str(r.u16())
			if r.err != nil {
				break
			}
			if len(a.full) < headerLen || a.minLen != 0 && (a.minLen < headerLen || int(a.minLen) > len(a.full)) ||
				j > 0 && a.qtype <= nd.answers[j-1].qtype {
				return nil, fmt.Errorf("%w: answer %d at %q", errTable, a.qtype, key)
			}
		}
		if !e.Add(key, nd) {
			return nil, fmt.Errorf("%w: name %q twice", errTable, key)
		}
	}
	if r.err != nil {
		return nil, r.err
	}
	if len(r.s) != 0 {
		return nil, fmt.Errorf("%w: %d bytes after it", errTable, len(r.s))
	}
	return newTable(e.Map(), zones, maxUDP), nil
}

// tableReader reads the layout; the first error sticks and every read
// after it returns zero values.
type tableReader struct {
	s   string
	err error
}

func (r *tableReader) str(n int) string {
	if r.err != nil || n > len(r.s) {
		r.err = cmpErr(r.err, fmt.Errorf("%w: cut short", errTable))
		return ""
	}
	v := r.s[:n]
	r.s = r.s[n:]
	return v
}

func (r *tableReader) u8() int {
	if v := r.str(1); v != "" {
		return int(v[0])
	}
	return 0
}

func (r *tableReader) u16() int {
	if v := r.str(2); v != "" {
		return int(v[0])<<8 | int(v[1])
	}
	return 0
}

// count reads a count of items of at least minSize bytes each, refusing
// one that the rest of the bytes cannot hold (so that a corrupt count
// does not allocate).
func (r *tableReader) count(minSize int) int {
	v := r.str(4)
	if v == "" {
		return 0
	}
	n := int(v[0])<<24 | int(v[1])<<16 | int(v[2])<<8 | int(v[3])
	if n > len(r.s)/minSize {
		r.err = fmt.Errorf("%w: %d items in %d bytes", errTable, n, len(r.s))
		return 0
	}
	return n
}

func cmpErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// validWireName reports whether key is an uncompressed wire-format name
// in lower case, as table keys are.
func validWireName(key string) bool {
	if len(key) == 0 || len(key) > 255 {
		return false
	}
	for i := 0; i < len(key); {
		l := int(key[i])
		switch {
		case l == 0:
			return i == len(key)-1
		case l > 63 || i+1+l > len(key):
			return false
		}
		for _, c := range []byte(key[i+1 : i+1+l]) {
			if 'A' <= c && c <= 'Z' {
				return false
			}
		}
		i += 1 + l
	}
	return false
}

// labelStart reports whether offset i of a valid wire name starts a label.
func labelStart(key string, i int) bool {
	for j := 0; j < len(key); j += int(key[j]) + 1 {
		if j == i {
			return true
		}
	}
	return false
}
