package serviceconfig

import (
	"bytes"
	"fmt"
	"slices"
	"sync"

	"github.com/grpc-config-dns/grpc-config-dns/internal/jtree"
)

// Source is a record as a tool has it, to check and publish: Text, else
// JSON, else Records (none at all is a name without TXT records).
type Source struct {
	// Text is a record as a user wrote it (a file, stdin): a TXT record,
	// raw or in presentation form, a choice list, or a bare service config.
	// Its kind is detected, and diagnostics are placed in it (Line,
	// Column), as [Lint] places them.
	Text []byte
	// JSON is a choice list (Kind KindChoices) or a bare service config
	// (KindServiceConfig), as JSON converted from another text (a
	// publisher config's YAML). Diagnostics carry offsets into it.
	JSON []byte
	Kind Kind
	// Records are TXT records as a DNS lookup returned them, each a list
	// of raw strings. Diagnostics carry offsets into the decoded value.
	Records [][]string
}

// PublishOptions shape the record that publishes a choice list: the
// publisher's compat: settings (docs/publisher.md), which encode's flags
// mirror.
type PublishOptions struct {
	// Owner is the record's owner name, _grpc_config.<host>., used to size
	// the DNS answer; "" assumes a typical name.
	Owner string
	// NineDigitDurations writes every duration that has a fraction with
	// nine fraction digits ("0.1s" becomes "0.100000000s"): grpc-js takes
	// the digits as nanoseconds and reads "0.1s" as 1 ns. The
	// duration-fraction warning is then not reported: the record as
	// published has none.
	NineDigitDurations bool
	// OmitNulls leaves out the members of the service configs whose value
	// is null, and the choice criteria that are null: proto3 JSON reads
	// null as the field's default, the same as an absent member (gRFC A2:
	// an absent criterion matches all clients), but grpc-java and grpc-js
	// reject the whole config (YAML writes null for an empty value). The
	// null-value warning is then not reported.
	OmitNulls bool
	// Clients are the clients declared to read the record (none: every
	// client, docs/rules.md "Clients"): a record that one of them would
	// reject, fail its channel on, or read differently from the spec is
	// refused, with the diagnostic that says which client does what.
	Clients Clients
	// AllowGrpcGoFailure takes grpc-go out of the declared clients: the
	// setting from before clients could be declared (compat.allowGrpcGoFailure,
	// encode --allow-grpc-go-failure), kept as an alias.
	AllowGrpcGoFailure bool
	// AllowMisspelledFields publishes a config with a field one typo away
	// from one gRPC defines ("timout"). Clients ignore unknown fields, so
	// the record is valid, and lint of a record only warns; but the value
	// the author meant would be dropped without a word, so the publisher
	// refuses it with misspelled-field unless allowed.
	AllowMisspelledFields bool
}

// DefaultPublishOptions are the options of a service that sets no
// compat: in the publisher config, and encode's defaults: nine-digit
// durations and nulls left out, nothing refused allowed.
func DefaultPublishOptions() PublishOptions {
	return PublishOptions{NineDigitDurations: true, OmitNulls: true}
}

// Record is a choice list as it is published.
type Record struct {
	// Value is the compact JSON choice list: dynamic parameter constraints
	// in camelCase, and durations as PublishOptions say.
	Value []byte
	// TXT is the TXT record: "grpc_config=" and Value, in strings of at
	// most 255 bytes.
	TXT []string
}

// Publish decides whether src may be published and in which form, with
// every rule: the record is checked as lint checks it, judged for the
// clients opts declares (a record one of them would reject, fail its
// channel on, or misread is refused: judge, which Lint applies too); its
// compact form is rewritten as opts says and sized as it will be served.
// It returns the record, or nil when the diagnostics hold an error. It is
// the one decision the publisher (serve, zone and the admin API, through
// package model) and the encode command make.
func Publish(src Source, opts PublishOptions) (*Record, Diagnostics) {
	r := src.read(opts)
	defer r.release()
	out := publishedDiagnostics(r.ds, opts)
	if out.HasErrors() || r.ch == nil {
		return nil, out
	}
	value, bad := r.published(opts)
	if bad != nil {
		// Lint applies every rule the rewrites do.
		return nil, append(out, r.placed(bad)...)
	}
	if bad := rebuiltProblems(value); bad != nil {
		return nil, append(out, r.placed(bad)...)
	}
	// The record as served: nine-digit durations and canonical names make
	// it longer than the config as written.
	txt := EncodeTXT(value)
	sizes := r.placed(sizeDiagnostics(opts.Owner, txt))
	out = append(out, sizes...)
	if sizes.HasErrors() {
		return nil, out
	}
	return &Record{Value: value, TXT: txt}, out
}

// publishedDiagnostics is what Publish reports of lint's diagnostics, ds
// (judged already, for the declared clients): without those of what it
// rewrites, leaves out or sizes anew as opts say.
func publishedDiagnostics(ds Diagnostics, opts PublishOptions) Diagnostics {
	out := make(Diagnostics, 0, len(ds))
	for _, d := range ds {
		switch {
		case d.Code == codeDurationFraction.String() && opts.NineDigitDurations:
			continue // rewritten by published
		case d.Code == codeNullValue.String() && opts.OmitNulls:
			continue // left out by published
		case isSizeCode(d.Code):
			continue // sized by Publish, on the record as published
		}
		out = append(out, d)
	}
	return out
}

// LintOptions are the options with which Lint judges a record served
// under opts (its TXT strings, looked up) as Publish judged it: the same
// declared clients, nothing rewritten.
func (opts PublishOptions) LintOptions() LintOptions {
	return LintOptions{Owner: opts.Owner, Clients: opts.declared(), AllowMisspelledFields: opts.AllowMisspelledFields, AsServed: true}
}

// declared is the set of clients opts declares, with the alias
// AllowGrpcGoFailure applied.
func (opts PublishOptions) declared() Clients {
	d := opts.Clients.declared()
	if opts.AllowGrpcGoFailure {
		d &^= ClientGo
	}
	return d | clientsDeclared
}

// published is the choice list's compact form rewritten as opts says, or
// the diagnostics of a rewrite that failed.
func (r reading) published(opts PublishOptions) ([]byte, Diagnostics) {
	f := r.facts
	if f == nil || !f.complete {
		return referencePublished(r.ch, opts)
	}
	// What lint found is what the rewrites would find again in the compact
	// form: the same rules over the same values.
	var drop, replace map[int32]string
	if opts.NineDigitDurations && len(f.shortFractions) > 0 {
		replace = make(map[int32]string, len(f.shortFractions))
		for _, n := range f.shortFractions {
			replace[n] = nineDigits(f.t, n)
		}
	}
	if opts.OmitNulls && len(f.nullMembers) > 0 {
		drop = make(map[int32]string, len(f.nullMembers))
		for _, k := range f.nullMembers {
			drop[k] = ""
		}
	}
	switch {
	case f.ch == nil:
		// A bare config: wrapped, as the one choice (r.ch is not parsed).
		// Sized once, as compactEdited is: grown from the prefix, it was
		// copied five times.
		dst := append(make([]byte, 0, len(wrapPrefix)+len(f.t.Src)+2+8*len(replace)), wrapPrefix...)
		return append(appendEdited(f.t, dst, 0, drop, replace), "}]"...), nil
	case drop == nil && replace == nil:
		return r.ch.Compact(), nil
	}
	return f.ch.compactEdited(drop, replace), nil
}

// referencePublished rewrites the compact form of ch as opts says, each
// rewrite parsing and validating it anew: what published does when lint's
// facts are incomplete, and what the tests hold it to.
func referencePublished(ch *Choices, opts PublishOptions) ([]byte, Diagnostics) {
	value := ch.Compact()
	for _, rewrite := range []struct {
		on bool
		f  func([]byte) ([]byte, error)
	}{{opts.NineDigitDurations, nineDigitDurations}, {opts.OmitNulls, omitNulls}} {
		if !rewrite.on {
			continue
		}
		v, err := rewrite.f(value)
		if err != nil {
			return nil, err.(*InvalidError).Diagnostics
		}
		value = v
	}
	return value, nil
}

// reading is a source, checked and parsed.
type reading struct {
	// ch is the choice list, nil when it does not parse.
	ch *Choices
	// ds are the diagnostics of every rule, placed in the source.
	ds Diagnostics
	// src, when the source is a text, places diagnostics of ch's value in it.
	src *source
	// bare is set for a bare service config, which has no choice to point
	// at.
	bare bool
	// facts, for a JSON source that parses, are what lint learned of it.
	facts *lintFacts
	// tree is the tree lint parsed a JSON source into, borrowed from
	// checkTrees until release.
	tree *jtree.Tree
}

// release gives back what r borrowed: nothing read from r may be used
// afterwards.
func (r reading) release() {
	if t := r.tree; t != nil && cap(t.Nodes) <= maxPooledNodes {
		t.Src = nil
		checkTrees.Put(t)
	}
}

// maxPooledNodes bounds the trees kept for reuse: one of a hostile
// record of millions of nodes is left to the collector.
const maxPooledNodes = 1 << 14

// read lints the source with every rule and parses its choices.
func (s Source) read(opts PublishOptions) reading {
	// Judged as served: what Publish rewrites is quiet, and left out.
	lo := opts.LintOptions()
	lo.lazySchema, lo.rewritten = true, txtFormCodes
	if opts.NineDigitDurations {
		lo.quiet.add(codeDurationFraction)
	}
	if opts.OmitNulls {
		lo.quiet.add(codeNullValue)
	}
	switch {
	case s.Text != nil:
		_, ds := Lint(s.Text, lo)
		r := reading{ds: ds}
		if r.ch, _ = choicesFromText(s.Text); r.ch != nil {
			r.src, r.bare = r.ch.src, r.ch.src.wrapped
		}
		return r
	case s.JSON != nil:
		lo.publishing = true
		lo.tree = checkTrees.Get().(*jtree.Tree)
		r := reading{bare: s.Kind == KindServiceConfig, tree: lo.tree}
		r.ds, r.facts = lintJSON(s.JSON, s.Kind, lo)
		if f := r.facts; f != nil && f.ch != nil && f.complete {
			// The list lint read, when it read it without an error, is the
			// one ParseChoices would read.
			r.ch = f.ch
			return r
		}
		if f := r.facts; f != nil && r.bare && f.complete && nestedAtMost(f.t, 0, jtree.MaxDepth-2) {
			// A bare config lint read without an error is one choice for
			// every client: Publish reads its criteria (none) and lint's
			// facts, and rewrites it from lint's tree (published), so it
			// is not wrapped and parsed again.
			r.ch = &Choices{List: []Choice{{Percentage: -1, ServiceConfig: bytes.TrimSpace(s.JSON), configNode: -1}}}
			return r
		}
		value := s.JSON
		if r.bare {
			value = wrapConfig(value)
		}
		r.ch, _ = ParseChoices(value)
		return r
	}
	ch, _ := choicesFromRecords(s.Records)
	return reading{ch: ch, ds: LintRecords(s.Records, lo)}
}

// nestedAtMost reports whether the arrays and objects of t from node n
// nest at most limit deep. A bare config wrapped as a choice list is two
// levels deeper: past MaxDepth-2 the list does not parse, and Publish
// reads it as before, to refuse it as it did.
func nestedAtMost(t *jtree.Tree, n int32, limit int) bool {
	if len(t.Nodes) <= limit {
		return true // each level is a node at least
	}
	nd := &t.Nodes[n]
	if nd.Kind != jtree.Array && nd.Kind != jtree.Object {
		return true
	}
	if limit == 0 {
		return false
	}
	for c := nd.First; c >= 0; c = t.Nodes[c].Next { // an object's keys too
		if !nestedAtMost(t, c, limit-1) {
			return false
		}
	}
	return true
}

// placed maps diagnostics of the choice list's value (offsets in it, -1
// for the whole record) into the source, and returns them.
func (r reading) placed(ds Diagnostics) Diagnostics {
	if r.src != nil {
		r.src.place(ds, firstSignificant(r.src.text))
	}
	return ds
}

// checkTrees are the trees rebuiltProblems parses into.
var checkTrees = sync.Pool{New: func() any { return new(jtree.Tree) }}

// rebuiltProblems checks the bytes about to be served as every client will
// read them: printable ASCII (gRFC A2), and a choice list that parses. They
// were rebuilt from a checked source, so a problem here is a bug in the
// rebuilding, reported as the error it would be in a record.
func rebuiltProblems(value []byte) Diagnostics {
	const bug = "the record rebuilt for publishing is broken (a bug: please report it with the config): "
	for i, b := range value {
		if b >= 0x80 || b < 0x20 {
			return Diagnostics{{Severity: codeNonASCII.severity(), Code: codeNonASCII.String(), Offset: -1,
				Message: bug + fmt.Sprintf("byte %d is 0x%02x, not printable ASCII", i, b)}}
		}
	}
	// The tree is the check's own: borrowed, not made, for a check every
	// published record passes.
	t := checkTrees.Get().(*jtree.Tree)
	defer reading{tree: t}.release()
	err := t.Reset(value)
	if err != nil {
		err = Diagnostics{syntaxDiagnostic(err)}.Err()
	} else {
		c := borrowChecker(t)
		c.errorsOnly = true
		parseChoices(c)
		err = c.diags.Err()
		c.giveBack()
	}
	if err != nil {
		ds := slices.Clone(err.(*InvalidError).Diagnostics)
		for i := range ds {
			ds[i].Message, ds[i].Offset, ds[i].Path = bug+ds[i].Message, -1, ""
		}
		return ds
	}
	return nil
}
