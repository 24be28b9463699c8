package dnssec

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
)

// Anchor is the trust anchor of one zone: DS records, DNSKEY records, or
// both; a DNSKEY of the zone that matches one vouches for its RRset.
type Anchor = anchor

type anchor struct {
	zone string // lower case, fully qualified
	ds   []dsRecord
	keys [][]byte // DNSKEY data
}

type dsRecord struct {
	tag        uint16
	alg        uint8
	digestType uint8
	digest     []byte
}

// vouches reports whether the anchor vouches for k, a DNSKEY of zone.
func (a *anchor) vouches(zone string, k dnskey) bool {
	if k.flags&0x0100 == 0 {
		return false // not a zone key
	}
	for _, key := range a.keys {
		if bytes.Equal(key, k.rdata) {
			return true
		}
	}
	for _, ds := range a.ds {
		if ds.tag != k.tag || ds.alg != k.alg {
			continue
		}
		data := append(wireLower(zone), k.rdata...)
		var sum []byte
		switch ds.digestType {
		case 2:
			s := sha256.Sum256(data)
			sum = s[:]
		case 4:
			s := sha512.Sum384(data)
			sum = s[:]
		default:
			continue // SHA-1 (1) and others are not trusted
		}
		if bytes.Equal(sum, ds.digest) {
			return true
		}
	}
	return false
}

// ParseAnchors reads trust anchors: DS or DNSKEY records in presentation
// format, one a line ("example.test. 3600 IN DS 12345 13 2 ABCD…", as
// dnssec ds, dig and Unbound's trust-anchor-file write them), or BIND's
// trust-anchors { }, managed-keys { } and trusted-keys { } clauses
// ("example.test. static-ds 12345 13 2 "ABCD…";", static-key, initial-key,
// initial-ds). where names the input in errors.
func ParseAnchors(text, where string) ([]*anchor, error) {
	byZone := map[string]*anchor{}
	var order []string
	add := func(zone string) *anchor {
		zone = strings.ToLower(fqdn(zone))
		a := byZone[zone]
		if a == nil {
			a = &anchor{zone: zone}
			byZone[zone] = a
			order = append(order, zone)
		}
		return a
	}
	// BIND's clause syntax becomes one record a statement.
	if strings.Contains(text, "{") {
		text = bindAnchors(text)
	}
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	line := 0
	for sc.Scan() {
		line++
		l := sc.Text()
		if i := strings.IndexByte(l, ';'); i >= 0 {
			l = l[:i]
		}
		f := strings.Fields(l)
		if len(f) == 0 {
			continue
		}
		if err := parseAnchorRecord(f, add); err != nil {
			return nil, fmt.Errorf("%s:%d: %v", where, line, err)
		}
	}
	if len(order) == 0 {
		return nil, fmt.Errorf("%s holds no trust anchor: write DS or DNSKEY records, like the output of grpc-config-dns dnssec ds", where)
	}
	out := make([]*anchor, 0, len(order))
	for _, z := range order {
		out = append(out, byZone[z])
	}
	// The longest zone first: a name's anchor is the closest one.
	slices.SortStableFunc(out, func(a, b *anchor) int { return len(labels(b.zone)) - len(labels(a.zone)) })
	return out, nil
}

// parseAnchorRecord reads one record: OWNER [TTL] [CLASS] TYPE DATA….
func parseAnchorRecord(f []string, add func(string) *anchor) error {
	owner := f[0]
	f = f[1:]
	for len(f) > 0 && (isNumber(f[0]) || strings.EqualFold(f[0], "IN")) {
		f = f[1:]
	}
	if len(f) == 0 {
		return fmt.Errorf("%s: no record type: write OWNER IN DS … or OWNER IN DNSKEY …", owner)
	}
	typ, data := strings.ToUpper(f[0]), f[1:]
	switch typ {
	case "DS":
		if len(data) < 4 {
			return fmt.Errorf("%s DS: want KEYTAG ALGORITHM DIGESTTYPE DIGEST", owner)
		}
		tag, err1 := strconv.ParseUint(data[0], 10, 16)
		alg, err2 := strconv.ParseUint(data[1], 10, 8)
		dt, err3 := strconv.ParseUint(data[2], 10, 8)
		digest, err4 := hex.DecodeString(strings.Join(data[3:], ""))
		if err1 != nil || err2 != nil || err3 != nil || err4 != nil {
			return fmt.Errorf("%s DS %s: not KEYTAG ALGORITHM DIGESTTYPE HEX-DIGEST", owner, strings.Join(data, " "))
		}
		if dt != 2 && dt != 4 {
			return fmt.Errorf("%s DS: digest type %d is not trusted: give a SHA-256 (2) or SHA-384 (4) DS", owner, dt)
		}
		a := add(owner)
		a.ds = append(a.ds, dsRecord{uint16(tag), uint8(alg), uint8(dt), digest})
	case "DNSKEY":
		if len(data) < 4 {
			return fmt.Errorf("%s DNSKEY: want FLAGS PROTOCOL ALGORITHM BASE64-KEY", owner)
		}
		flags, err1 := strconv.ParseUint(data[0], 10, 16)
		proto, err2 := strconv.ParseUint(data[1], 10, 8)
		alg, err3 := strconv.ParseUint(data[2], 10, 8)
		key, err4 := base64.StdEncoding.DecodeString(strings.Join(data[3:], ""))
		if err1 != nil || err2 != nil || err3 != nil || err4 != nil || proto != 3 {
			return fmt.Errorf("%s DNSKEY %s: not FLAGS 3 ALGORITHM BASE64-KEY", owner, strings.Join(data, " "))
		}
		rdata := binary.BigEndian.AppendUint16(nil, uint16(flags))
		rdata = append(rdata, 3, uint8(alg))
		a := add(owner)
		a.keys = append(a.keys, append(rdata, key...))
	default:
		return fmt.Errorf("%s %s: a trust anchor is a DS or DNSKEY record", owner, typ)
	}
	return nil
}

func isNumber(s string) bool {
	_, err := strconv.ParseUint(s, 10, 32)
	return err == nil
}

// bindAnchors rewrites BIND's anchor clauses as records, one a line.
func bindAnchors(text string) string {
	var out strings.Builder
	// Statements end at ';'; the clause names and braces go.
	for _, st := range strings.Split(text, ";") {
		st = strings.NewReplacer("{", " ", "}", " ", "\"", " ").Replace(st)
		f := strings.Fields(st)
		for len(f) > 0 && (f[0] == "trust-anchors" || f[0] == "managed-keys" || f[0] == "trusted-keys") {
			f = f[1:]
		}
		if len(f) < 2 {
			continue
		}
		switch strings.ToLower(f[1]) {
		case "static-ds", "initial-ds":
			fmt.Fprintf(&out, "%s DS %s\n", f[0], strings.Join(f[2:], " "))
		case "static-key", "initial-key":
			fmt.Fprintf(&out, "%s DNSKEY %s\n", f[0], strings.Join(f[2:], " "))
		default: // trusted-keys: NAME FLAGS PROTOCOL ALGORITHM KEY
			fmt.Fprintf(&out, "%s DNSKEY %s\n", f[0], strings.Join(f[1:], " "))
		}
	}
	return out.String()
}

// ReadAnchorFile reads a file of trust anchors in the format of Unbound's
// trust-anchor-file (DS or DNSKEY records, one a line) or BIND's
// trust-anchors { } clause.
func ReadAnchorFile(path string) ([]*Anchor, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() || fi.Size() > 1<<20 {
		return nil, fmt.Errorf("%s is not a trust anchor file (a regular file of at most 1 MiB)", path)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return ParseAnchors(string(b), path)
}

// fqdn returns name with a final dot.
func fqdn(name string) string {
	if strings.HasSuffix(name, ".") {
		return name
	}
	return name + "."
}

// Zone is the name of the zone the anchor is for.
func (a *anchor) Zone() string { return a.zone }
