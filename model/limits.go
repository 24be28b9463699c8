package model

import (
	"fmt"

	sc "github.com/grpc-config-dns/grpc-config-dns/serviceconfig"
)

// The limits of what Parse reads. A DNS message caps each record at 64 KB,
// but a publisher config holds many: 100 000 services of a few hundred
// bytes each are a 30-50 MB file, about 5 million YAML nodes, estimated
// (nodeEstimate) at 6 million written as YAML and 10 million as JSON. The
// limits leave room for that and stop there, so that no config, however
// written, costs much more than the largest legitimate one.
const (
	// MaxConfigSize is the longest config text read: the longest input
	// of any tool (serviceconfig.MaxInputSize), so that the CLI reads what
	// the publisher reads, and no more.
	MaxConfigSize = sc.MaxInputSize
	// MaxConfigNodes bounds the YAML nodes of a config, estimated before
	// the YAML parser runs: the parser keeps about 250 bytes per node, so
	// a file of one-character values would cost a hundred times its size
	// (7-10 GB for 60 MB), where the configs above cost twenty. The worst
	// file found within the limits (64 MB of "key: v" lines, an estimate
	// that is exact) takes lint 16 s and 3.1 GB: about what a 64 MiB
	// config of realistic services (130 000) costs.
	MaxConfigNodes = 12_000_000
)

// readLimits are the thresholds a doc reads a config with. Each doc
// carries its own, rather than the package holding them, so that a test
// can lower them for the texts it reads (to reach them with a few
// kilobytes) without changing what any other reading, in parallel tests
// too, is held to.
type readLimits struct {
	// maxExpansion and maxMergedPairs bound what aliases and merge keys
	// may make of a config: the JSON of every service config converted,
	// in bytes, and the members merge keys copy. Each use of an alias is
	// converted and checked again, so without a bound a small file could
	// make the publisher check gigabytes.
	maxExpansion, maxMergedPairs int
	// compactAbove is the number of items read at once past which their
	// readings are moved by a keeper (see compactAbove, the constant).
	compactAbove int
}

// defaultLimits are the limits every reading outside tests has: a config
// may expand to no more than the largest it may be written as.
func defaultLimits() readLimits {
	return readLimits{maxExpansion: MaxConfigSize, maxMergedPairs: MaxConfigNodes, compactAbove: compactAbove}
}

// tooLarge says why text is beyond the limits, or "".
func tooLarge(text []byte) string {
	if len(text) > MaxConfigSize {
		return fmt.Sprintf("the config is %d bytes, more than the %d (64 MiB) the publisher reads", len(text), MaxConfigSize)
	}
	if n := nodeEstimate(text); n > MaxConfigNodes {
		return tooManyNodes(n)
	}
	return ""
}

// tooManyNodes says that a text of an estimated n YAML values is too many.
func tooManyNodes(n int) string {
	if n == MaxConfigNodes+1 {
		return fmt.Sprintf("the config holds more than the %d YAML values (keys, scalars, lists and mappings) the publisher reads (reading it would take gigabytes)", MaxConfigNodes)
	}
	return fmt.Sprintf("the config holds about %d YAML values (keys, scalars, lists and mappings), more than the %d the publisher reads (reading it would take gigabytes)", n, MaxConfigNodes)
}

// nodeEstimate returns an upper bound of the nodes the YAML parser builds
// for text, from one pass without allocation. Every node is introduced by
// a mark this counts: the start of a line (a key, a list item, a scalar or
// its continuation), "- " or "-" before a line end (a block list item),
// ": " or ":" before a line end (a mapping value, possibly null), "? "
// (an explicit key and its value), '[' (a flow list and, for "[a: b]",
// the mapping of its first item), '{' (a flow mapping and its first key's
// value, possibly implicit), ',' (the next flow item or key and its
// value), a ':' right after a quote ("a":1), and a document and its root
// (at the start, and at each "---"). The marks inside quoted strings and
// comments are counted too: an overestimate, which only matters for files
// near the limit. FuzzNodeEstimate checks the bound against the parser.
func nodeEstimate(text []byte) int {
	n := 2
	lineStart := true
	for i := 0; i < len(text); i++ {
		c := text[i]
		if lineStart {
			if c == ' ' || c == '\t' || c == '\r' || c == '\n' {
				continue
			}
			n++
			if c == '-' && i+2 < len(text) && text[i+1] == '-' && text[i+2] == '-' {
				n += 2
			}
			lineStart = false
		}
		// Most bytes are none of the marks: one table lookup each (a
		// fleet's config is 30 MB, read at every reload).
		if !estimateMark[c] {
			continue
		}
		switch c {
		case '\n':
			lineStart = true
		case '-', '?', ':':
			next := byte('\n')
			if i+1 < len(text) {
				next = text[i+1]
			}
			blank := next == ' ' || next == '\t' || next == '\r' || next == '\n'
			switch {
			case c == '-' && blank:
				n++
			case c == '?' && blank:
				n += 2
			case c == ':' && (blank || i > 0 && (text[i-1] == '"' || text[i-1] == '\'')):
				n++
			}
		default: // '[', '{', ','
			n += 2
		}
	}
	return n
}

// estimateMark holds the bytes nodeEstimate counts or acts on.
var estimateMark = func() (m [256]bool) {
	for _, c := range []byte("\n-?:[{,") {
		m[c] = true
	}
	return m
}()
