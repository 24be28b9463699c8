package serviceconfig

import (
	"bytes"
	"fmt"
	"regexp"
	"sort"
	"strconv"

	"github.com/grpc-config-dns/grpc-config-dns/internal/jtree"
)

// Kind is what an input text holds.
type Kind int

// The input kinds lint and select accept.
const (
	KindUnknown Kind = iota
	// KindTXT is a TXT record: the raw value (grpc_config=[…]), or records in
	// presentation format, one per line, as dig or a zone file print them.
	KindTXT
	// KindChoices is a JSON list of choices.
	KindChoices
	// KindServiceConfig is one service config object.
	KindServiceConfig
	// KindPublisher is a publisher config (YAML or JSON with "zones"); the
	// dnspub package reads it.
	KindPublisher
)

func (k Kind) String() string {
	switch k {
	case KindTXT:
		return "TXT record"
	case KindChoices:
		return "choice list"
	case KindServiceConfig:
		return "service config"
	case KindPublisher:
		return "publisher config"
	}
	return "unknown"
}

var (
	zoneLineRE  = regexp.MustCompile(`(?i)^\S+\s+(?:\d+\s+)?(?:(?:IN|CH|HS)\s+)?(?:\d+\s+)?TXT\s`)
	yamlZonesRE = regexp.MustCompile(`(?m)^zones\s*:`)
	jsonZonesRE = regexp.MustCompile(`^\{\s*"zones"\s*:`)
)

// DetectKind tells what text holds, from its first significant bytes.
func DetectKind(text []byte) Kind {
	trimmed := bytes.TrimLeft(text, " \t\r\n\ufeff")
	if len(trimmed) == 0 {
		return KindUnknown
	}
	switch trimmed[0] {
	case '[':
		return KindChoices
	case '{':
		if jsonZonesRE.Match(trimmed) || hasTopLevelZones(trimmed) {
			return KindPublisher
		}
		return KindServiceConfig
	case '"':
		return KindTXT
	}
	if _, ok, _ := attribute(firstLine(trimmed)); ok {
		return KindTXT
	}
	if zoneLineRE.Match(firstSignificantLine(trimmed)) {
		return KindTXT
	}
	if yamlZonesRE.Match(trimmed) {
		return KindPublisher
	}
	return KindUnknown
}

// hasTopLevelZones reports whether a JSON object has a top-level "zones".
// Beyond MaxRecordText the object can only be a publisher config, and
// parsing megabytes to say so costs more than the answer: a scan for the
// member name, written without escapes, decides.
func hasTopLevelZones(b []byte) bool {
	if len(b) > MaxRecordText {
		return scanTopLevelKey(b, `"zones"`)
	}
	t, err := jtree.Parse(b)
	return err == nil && t.Nodes[0].Kind == jtree.Object && t.Get(0, "zones") >= 0
}

// scanTopLevelKey reports whether the JSON object b has a member named
// key (quoted, as written) at its top level, without parsing it.
func scanTopLevelKey(b []byte, key string) bool {
	depth := 0
	expectKey := false
	for i := 0; i < len(b); i++ {
		switch c := b[i]; c {
		case '"':
			start := i
			for i++; i < len(b) && b[i] != '"'; i++ {
				if b[i] == '\\' {
					i++
				}
			}
			if depth == 1 && expectKey && i < len(b) && string(b[start:i+1]) == key {
				return true
			}
			expectKey = false
		case '{', '[':
			depth++
			expectKey = c == '{' && depth == 1
		case '}', ']':
			depth--
		case ',':
			expectKey = depth == 1
		}
	}
	return false
}

func firstLine(b []byte) []byte {
	if i := bytes.IndexByte(b, '\n'); i >= 0 {
		return b[:i]
	}
	return b
}

func firstSignificantLine(b []byte) []byte {
	for len(b) > 0 {
		line := firstLine(b)
		b = b[len(line):]
		if len(b) > 0 {
			b = b[1:]
		}
		t := bytes.TrimSpace(line)
		if len(t) > 0 && t[0] != ';' && t[0] != '#' {
			return t
		}
	}
	return nil
}

// lineIndex maps byte offsets of a text to line and column.
type lineIndex []int

func newLineIndex(text []byte) lineIndex {
	idx := lineIndex{0}
	for i, b := range text {
		if b == '\n' {
			idx = append(idx, i+1)
		}
	}
	return idx
}

// position returns the 1-based line and byte column of off.
func (idx lineIndex) position(off int) (line, col int) {
	i := sort.Search(len(idx), func(i int) bool { return idx[i] > off }) - 1
	return i + 1, off - idx[i] + 1
}

// presentation is a TXT record set read from presentation-format text.
type presentation struct {
	records [][]string
	// offs[r][s][i] is the text offset of byte i of string s of record r.
	offs [][][]int
	// recordOff[r] is the text offset where record r starts.
	recordOff []int
}

// start is the text offset where record r starts, or -1 when the
// records did not come from a text (p is nil).
func (p *presentation) start(r int) int {
	if p == nil {
		return -1
	}
	return p.recordOff[r]
}

// parsePresentation reads TXT records written as a zone file or dig prints
// them: one record per line (parentheses continue a record over lines),
// each a sequence of quoted or unquoted strings with \" \\ and \DDD
// escapes, optionally after "owner [ttl] [class] TXT". ';' starts a comment.
func parsePresentation(text []byte) (*presentation, *Diagnostic) {
	p := &presentation{}
	var rec pendingRecord
	depth := 0
	i := 0
	for i < len(text) {
		c := text[i]
		switch {
		case c == '\n':
			if depth == 0 {
				rec.flushTo(p)
			}
			i++
		case c == ' ' || c == '\t' || c == '\r':
			i++
		case c == ';':
			i = commentEnd(text, i)
		case c == '(':
			depth++
			i++
		case c == ')':
			if depth == 0 {
				return nil, txtSyntax(i, "unbalanced ')'")
			}
			depth--
			i++
		default:
			str, o, next, bad := readCharString(text, i)
			if bad != nil {
				return nil, bad
			}
			rec.add(str, o, c == '"', i)
			i = next
		}
	}
	if depth != 0 {
		return nil, txtSyntax(len(text), "unbalanced '(': add the closing ')'")
	}
	rec.flushTo(p)
	return p, nil
}

// pendingRecord is the record parsePresentation is reading: its strings,
// the text offset of each of their bytes, whether each was quoted, and
// the text offset of the first.
type pendingRecord struct {
	strs   []string
	offs   [][]int
	quoted []bool
	start  int
}

// add adds string s, read at text offset at, to the record.
func (r *pendingRecord) add(s []byte, offs []int, quoted bool, at int) {
	if len(r.strs) == 0 {
		r.start = at
	}
	r.strs, r.offs, r.quoted = append(r.strs, string(s)), append(r.offs, offs), append(r.quoted, quoted)
}

// flushTo ends the record: it adds it to p, without its zone file prefix,
// unless it has no string, and starts the next.
func (r *pendingRecord) flushTo(p *presentation) {
	if len(r.strs) > 0 {
		strs, offs := dropZonePrefix(r.strs, r.offs, r.quoted)
		p.records = append(p.records, strs)
		p.offs = append(p.offs, offs)
		p.recordOff = append(p.recordOff, r.start)
	}
	*r = pendingRecord{}
}

// commentEnd is the offset of the end of the comment that starts at i: the
// end of its line, or of the text.
func commentEnd(text []byte, i int) int {
	if j := bytes.IndexByte(text[i:], '\n'); j >= 0 {
		return i + j
	}
	return len(text)
}

// readCharString reads the <character-string> that starts at text[i],
// quoted or not, with its escapes: the bytes, the text offset each came
// from, and where the text goes on.
func readCharString(text []byte, i int) (s []byte, offs []int, next int, bad *Diagnostic) {
	isQuoted := text[i] == '"'
	tokStart := i
	if isQuoted {
		i++
	}
	for {
		if i >= len(text) {
			if isQuoted {
				return nil, nil, i, txtSyntax(tokStart, "unterminated quoted string: add the closing '\"'")
			}
			return s, offs, i, nil
		}
		c := text[i]
		switch {
		case isQuoted && c == '"':
			return s, offs, i + 1, nil
		case !isQuoted && endsUnquoted(c):
			return s, offs, i, nil
		case isQuoted && c == '\n':
			return nil, nil, i, txtSyntax(tokStart, "unterminated quoted string: add the closing '\"' before the end of the line")
		case c != '\\':
			s, offs = append(s, c), append(offs, i)
			i++
		default:
			b, n, bad := readEscape(text, i)
			if bad != nil {
				return nil, nil, i, bad
			}
			s, offs = append(s, b), append(offs, i)
			i += n
		}
	}
}

// endsUnquoted reports whether c ends an unquoted <character-string>.
func endsUnquoted(c byte) bool {
	switch c {
	case ' ', '\t', '\r', '\n', ';', '(', ')', '"':
		return true
	}
	return false
}

// readEscape reads the escape whose '\' is at text[i], \X for the byte X
// or \DDD for the byte of decimal value DDD, and returns the byte and the
// length of the escape.
func readEscape(text []byte, i int) (byte, int, *Diagnostic) {
	switch {
	case i+1 >= len(text):
		return 0, 0, txtSyntax(i, "a '\\' at the end of the input escapes nothing")
	case !isDigit(text[i+1]):
		return text[i+1], 2, nil
	case i+4 > len(text) || !isDigit(text[i+2]) || !isDigit(text[i+3]):
		return 0, 0, txtSyntax(i, "\\DDD escapes need three decimal digits")
	}
	v, _ := strconv.Atoi(string(text[i+1 : i+4]))
	if v > 255 {
		return 0, 0, txtSyntax(i, "\\%s is not a byte: \\DDD escapes go up to \\255", text[i+1:i+4])
	}
	return byte(v), 4, nil
}

func txtSyntax(off int, format string, args ...any) *Diagnostic {
	return &Diagnostic{Severity: codeTXTSyntax.severity(), Code: codeTXTSyntax.String(), Offset: off, Message: fmt.Sprintf(format, args...)}
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// dropZonePrefix removes "owner [ttl] [class] [ttl] TXT" from the front of a
// record's strings, as found in zone files and dig's output. Those words are
// never quoted there; quoted strings are always data.
func dropZonePrefix(strs []string, offs [][]int, quoted []bool) ([]string, [][]int) {
	for i := 1; i < len(strs) && i <= 4; i++ {
		if !quoted[i] && len(strs[i]) == 3 && bytes.EqualFold([]byte(strs[i]), []byte("TXT")) {
			ok := !quoted[0]
			for j, s := range strs[1:i] {
				if quoted[j+1] || (!isTTL(s) && !isClass(s)) {
					ok = false
				}
			}
			if ok {
				return strs[i+1:], offs[i+1:]
			}
		}
	}
	return strs, offs
}

func isTTL(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			return false
		}
	}
	return true
}

func isClass(s string) bool {
	switch string(bytes.ToUpper([]byte(s))) {
	case "IN", "CH", "HS":
		return true
	}
	return false
}
