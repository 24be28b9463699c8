package serviceconfig

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"github.com/grpc-config-dns/grpc-config-dns/internal/jtree"
)

// MaxRecordText is the longest input read as one record: a TXT record, a
// choice list or a service config, as text or JSON. A DNS message holds
// at most 65 535 bytes, so no record can carry more than about 64 KB; its
// presentation form writes a byte in up to four characters (\DDD) and
// pretty-printed JSON adds indentation, so 1 MiB (16 × 64 KiB) leaves room
// for any way of writing a record that fits, and cuts off inputs that
// could never be served before any work proportional to them. Between
// 64 KB and 1 MiB, lint reads the input and reports txt-too-large.
const MaxRecordText = 1 << 20

// MaxInputSize is the longest input a tool reads: the largest publisher
// config (package model's MaxConfigSize is this), 64 MiB. Records
// are bounded further, by MaxRecordText, once the input's kind is known.
const MaxInputSize = 64 << 20

// InputTooLarge is the diagnostic of an input longer than MaxInputSize,
// which a tool refuses before reading it whole: size is its length in
// bytes, or -1 when it is not known (the reading stopped past the limit).
func InputTooLarge(size int64) Diagnostic {
	what := "more than"
	if size >= 0 {
		what = strconv.FormatInt(size, 10) + " bytes, more than"
	}
	return Diagnostic{Severity: codeInputTooLarge.severity(), Code: codeInputTooLarge.String(), Offset: -1,
		Message: fmt.Sprintf("the input is %s %d bytes (64 MiB): no record can be that large (a DNS message holds %d bytes), and the publisher reads no larger config; split the config's zones across several publishers", what, MaxInputSize, MaxMessageSize)}
}

func recordTooLarge(n int, what string) Diagnostic {
	return Diagnostic{Severity: codeInputTooLarge.severity(), Code: codeInputTooLarge.String(), Offset: 0,
		Message: fmt.Sprintf("the input is %d bytes %s, more than the %d (1 MiB) any record can be written in: a DNS message holds at most %d bytes, so it could never be served; split the config across services, or give a publisher config (zones:) to check many records", n, what, MaxRecordText, MaxMessageSize)}
}

// LintOptions tunes [Lint] and [LintRecords].
type LintOptions struct {
	// Owner is the record's owner name (_grpc_config.<host>.), used to size
	// the DNS answer; "" assumes a typical name.
	Owner string
	// Clients are the clients declared to read the record; none declared
	// means every one (docs/rules.md, "Clients"). A warning about
	// something a declared client would reject, fail its channel on, or
	// read differently from the spec is reported as an error, so that
	// lint's verdict is the publisher's ([Publish]).
	Clients Clients
	// AllowMisspelledFields is PublishOptions.AllowMisspelledFields: without
	// it a field one typo away from a known one is an error
	// (misspelled-field), as the publisher refuses it.
	AllowMisspelledFields bool
	// AsServed judges the record as clients get it (looked up in DNS)
	// rather than as the publisher would publish it. The publisher writes
	// durations with nine fraction digits and leaves null members out
	// (DefaultPublishOptions), so what grpc-js misreads and grpc-java and
	// grpc-js reject there is only a warning of a record to publish; of a
	// record already served it is what clients get.
	AsServed bool
	// DurationsAsWritten and NullsKept judge a record to publish as the
	// publisher publishes it with compat nineDigitDurations: false and
	// omitNulls: false (PublishOptions): its short fractions and null
	// members are then served, and judged.
	DurationsAsWritten, NullsKept bool

	// goRulesOnly leaves the JSON Schema layer out even when it is linked
	// in.
	goRulesOnly bool
	// lazySchema runs the JSON Schema layer only when the Go rules find an
	// error or reach the cap. Publish sets it: the schema cost a publisher a third of its
	// time per service, and FuzzSchemaAddsNothing holds the Go rules to
	// saying everything it says of a record they accept. Of a record they
	// reject, the schema may say more (the contents of constraints nested
	// past the depth the Go rules read), so it still runs there. Lint
	// keeps the layer, a second opinion for people editing records.
	lazySchema bool
	// publishing is set by Publish, which sizes the record it publishes
	// and drops lint's size diagnostics.
	publishing bool
	// quiet are codes whose diagnostics the caller drops (Publish, for
	// what it rewrites): they are listed and counted as usual, so that the
	// cap leaves out the same others, but without a message or a path.
	quiet codeSet
	// rewritten are codes not judged although AsServed is set: Publish's
	// TXT form, which it encodes anew (its rewrites of durations and nulls
	// are quiet codes, left out).
	rewritten codeSet
	// tree, when set, is the tree to parse into (Publish's, borrowed
	// from a pool); else one is made.
	tree *jtree.Tree
}

// judge is judge with the options' clients: of a record to publish, what
// the publisher rewrites (nine-digit durations, nulls left out, the TXT
// record's form) is not judged.
func (o LintOptions) judge(ds Diagnostics) Diagnostics {
	skip := o.rewritten
	if !o.AsServed {
		skip = txtFormCodes
		if !o.DurationsAsWritten {
			skip.add(codeDurationFraction)
		}
		if !o.NullsKept {
			skip.add(codeNullValue)
		}
	}
	return judge(ds, o.Clients.declared(), o.AllowMisspelledFields, skip)
}

// codeSet is a set of diagnostic codes.
type codeSet [(numCodes + 63) / 64]uint64

func (s *codeSet) add(c diagCode)      { s[c/64] |= 1 << (c % 64) }
func (s *codeSet) has(c diagCode) bool { return s[c/64]&(1<<(c%64)) != 0 }

// Lint checks one input text: a TXT record, a choice list or a service
// config (see [DetectKind]). It returns the kind it found and every problem,
// with Line and Column in text. It returns KindPublisher with no
// diagnostics for publisher configs, which the dnspub package checks.
//
// Lint applies every rule to every choice, where a client validates only
// the choice it selects.
func Lint(text []byte, opts LintOptions) (Kind, Diagnostics) {
	k := DetectKind(text)
	var ds Diagnostics
	switch {
	case k == KindPublisher:
		return k, nil
	case len(text) > MaxRecordText:
		ds = Diagnostics{recordTooLarge(len(text), "of text")}
	case k == KindUnknown:
		ds = Diagnostics{unknownKind(text)}
	case k == KindChoices, k == KindServiceConfig:
		ds = lintValue(text, k, nil, opts)
	case k == KindTXT:
		ds = lintTXTText(text, opts)
	}
	for i := range ds {
		if ds[i].Offset < 0 && ds[i].Code != omittedCode {
			// About the whole record (its size, say): placed at its start.
			ds[i].Offset = firstSignificant(text)
		}
	}
	ds.Sort()
	ds = opts.judge(ds.Capped())
	locate(ds, text)
	return k, ds
}

// LintRecords checks the TXT records found at an owner name, as a DNS
// lookup returned them. Diagnostics carry offsets into the decoded value
// but no line or column.
func LintRecords(records [][]string, opts LintOptions) Diagnostics {
	n := 0
	for _, r := range records {
		n += RDataLen(r)
	}
	if n > MaxRecordText {
		return Diagnostics{recordTooLarge(n, "of TXT data")}
	}
	ds := lintRecordSet(records, nil, opts)
	ds.Sort()
	return opts.judge(ds.Capped())
}

// unknownKind is the diagnostic for an input that is none of the kinds.
func unknownKind(text []byte) Diagnostic {
	const want = "expected a TXT record (grpc_config=[…] or quoted strings), a JSON list of choices, a service config object, or a publisher config with zones:"
	at := firstSignificant(text)
	msg := "cannot tell what this input is: " + want
	trimmed := bytes.TrimSpace(text)
	switch {
	case len(trimmed) == 0:
		msg = "the input is empty: " + want
	case trimmed[0] == '-' || (trimmed[0] >= '0' && trimmed[0] <= '9'):
		msg = "the input is a JSON number: " + want
	case bytes.Equal(trimmed, []byte("null")) || bytes.Equal(trimmed, []byte("true")) || bytes.Equal(trimmed, []byte("false")):
		msg = "the input is the JSON literal " + string(trimmed) + ": " + want
	}
	return Diagnostic{Severity: codeJSONSyntax.severity(), Code: codeJSONSyntax.String(), Offset: at, Message: msg}
}

func firstSignificant(text []byte) int {
	return len(text) - len(bytes.TrimLeft(text, " \t\r\n"))
}

// offsetMap maps byte offsets of a checked JSON value to offsets in the
// user's text.
type offsetMap func(int) int

// lintJSON checks a JSON choice list (k == KindChoices) or one service
// config (KindServiceConfig) with every rule, as [Lint] does, and returns
// diagnostics with offsets into value (no line or column): callers that
// built value from another text (a YAML file) map offsets back themselves.
// opts.Owner, when known, sizes the DNS answer. It also returns what the
// rules learned of the value on the way, or nil when it does not parse.
func lintJSON(value []byte, k Kind, opts LintOptions) (Diagnostics, *lintFacts) {
	if len(value) > MaxRecordText {
		return Diagnostics{recordTooLarge(len(value), "of JSON")}, nil
	}
	ds, f := lintParsed(value, k, opts, nil)
	ds.Sort()
	return opts.judge(ds.Capped()), f
}

// lintValue checks a JSON choice list or service config. offs maps value
// offsets to text offsets (nil: identity). strs are the TXT strings as
// published, when known, for sizing.
func lintValue(value []byte, k Kind, offs offsetMap, opts LintOptions, strs ...string) Diagnostics {
	ds, _ := lintParsed(value, k, opts, strs)
	if offs != nil {
		for i := range ds {
			if ds[i].Offset >= 0 {
				ds[i].Offset = offs(ds[i].Offset)
			}
			if ds[i].related > 0 {
				ds[i].related = offs(ds[i].related-1) + 1
			}
		}
	}
	return ds
}

// lintFacts is what the rules learned of a value besides its diagnostics,
// so that Publish rewrites it and gives grpc-go's verdict without parsing
// and validating it again (each pass cost as much as the lint).
type lintFacts struct {
	// t is the tree linted: the choice list, or the bare service config.
	t *jtree.Tree
	// ch is the choice list read from t (nil for a bare service config).
	ch *Choices
	// shortFractions and nullMembers are the checker's, in t.
	shortFractions, nullMembers []int32
	// complete is set when the facts say all that a new validation would:
	// no diagnostic was left out past the cap (which would hide a refusal
	// of one choice behind another's), and no error.
	complete bool
}

// lintParsed is lintValue without the mapping of offsets.
func lintParsed(value []byte, k Kind, opts LintOptions, strs []string) (Diagnostics, *lintFacts) {
	t := opts.tree
	if t == nil {
		t = new(jtree.Tree)
	}
	if err := t.Reset(value); err != nil {
		return syntaxDiagnostics(err), nil
	}
	var ds Diagnostics
	if t.NonASCII >= 0 {
		ds = append(ds, Diagnostic{Severity: codeNonASCII.severity(), Code: codeNonASCII.String(), Offset: t.NonASCII,
			Message: "TXT records are ASCII (gRFC A2) and this config holds other characters: use ASCII names, or \\u escapes in JSON strings"})
	}
	c := borrowChecker(t)
	defer c.giveBack()
	c.quiet = opts.quiet
	f := &lintFacts{t: t}
	f.ch = runRules(c, k)
	markUnreached(c.diags, f.ch)
	f.shortFractions, f.nullMembers = c.shortFractions, c.nullMembers
	f.complete = c.omitted < 0 && !c.diags.HasErrors()
	// Past the cap the Go rules only count, and the schema's findings
	// there, covered by no listed diagnostic, add to the count: the layer
	// is left out only when nothing was left out.
	if opts.goRulesOnly || opts.lazySchema && t.NonASCII < 0 && !c.diags.HasErrors() && c.omitted < 0 {
		ds = append(ds, c.diags...)
	} else {
		ds = append(ds, mergeSchema(t, c.diags, schemaFindings(t, k))...)
	}
	// Publish sizes the record as it publishes it, and drops these; they
	// are needed only when they would change what the cap leaves out.
	if !opts.publishing || len(ds) >= MaxDiagnostics || c.omitted >= 0 {
		ds = append(ds, sizeDiagnostics(opts.Owner, servedStrings(t, k, strs))...)
	}
	return ds, f
}

// syntaxDiagnostics is the diagnostic of a value that is not JSON. That of
// a duplicate member names the first copy too.
func syntaxDiagnostics(err error) Diagnostics {
	ds := Diagnostics{syntaxDiagnostic(err)}
	if je := err.(*jtree.Error); je.Other >= 0 {
		ds[0].related = je.Other + 1
	}
	return ds
}

// runRules applies the rules to the value c checks, of kind k. It returns
// the choices read (nil for a bare service config).
func runRules(c *checker, k Kind) *Choices {
	if k != KindChoices {
		validateServiceConfig(c, 0)
		return nil
	}
	c.inList = true
	ch := parseChoices(c)
	validateChoiceConfigs(c, ch)
	lintChoiceList(c, ch)
	if !c.diags.HasErrors() {
		lintVariants(c, ch)
	}
	return ch
}

// servedStrings is strs, the TXT strings the value of t came in, or when
// there are none the strings that serve it: a bare service config as the
// one choice of a list.
func servedStrings(t *jtree.Tree, k Kind, strs []string) []string {
	switch {
	case len(strs) > 0:
		return strs
	case k == KindChoices:
		return EncodeTXT(t.AppendCompact(nil, 0))
	}
	return EncodeTXT(wrapConfig(t.AppendCompact(nil, 0)))
}

// validateChoiceConfigs validates the service config of every choice, with
// paths /i/serviceConfig/….
func validateChoiceConfigs(c *checker, ch *Choices) {
	for i := range ch.List {
		if cfg := ch.List[i].configNode; cfg >= 0 {
			c.pushIdx(ch.List[i].elem)
			c.pushKey(keyNodeOf(c.t, ch.List[i].node, cfg))
			validateServiceConfig(c, cfg)
			c.pop()
			c.pop()
		}
	}
}

// lintChoiceList adds the checks that look at the list as a whole.
func lintChoiceList(c *checker, ch *Choices) {
	t := c.t
	reportExtensionKey(c, ch)
	reportNoCatchAll(c, ch)
	for i := range ch.List {
		x := &ch.List[i]
		c.pushIdx(x.elem)
		if x.Percentage == 0 {
			v := t.Get(x.node, keyPercentage)
			c.pushKey(keyNodeOf(t, x.node, v))
			c.report(v, codeChoicePercentageZero, "percentage 0 matches no client (buckets run from 1 to 100), so choice %d is never used; raise it or remove the choice", i)
			c.pop()
		}
		reportEmptyCriteria(c, ch, i)
		reportLanguageCase(c, x)
		c.pop()
	}
}

// reportExtensionKey says once what each gRPC client other than ours does
// with our extension key, which is unknown to them.
func reportExtensionKey(c *checker, ch *Choices) {
	t := c.t
	for i := range ch.List {
		if v := t.Get(ch.List[i].node, keyDynamicParameterConstraints); v >= 0 {
			c.pushIdx(ch.List[i].elem)
			k := keyNodeOf(t, ch.List[i].node, v)
			c.pushKey(k)
			c.refuse(k, codeChoiceExtensionKey, clientJava|clientJS, "dynamicParameterConstraints is an extension only our resolver reads: grpc-java and grpc-js reject the whole record because of the unknown key when they come to this choice (they check the choices up to the first that matches them), and grpc-go and C-core ignore it, so they may pick a variant meant for other clients; serve such records only to clients that use our resolver, and declare it (compat: {clients: [dnsconfig]}, --clients dnsconfig)")
			c.pop()
			c.pop()
			return
		}
	}
}

// reportNoCatchAll reports a list in which no choice matches every client
// (gRFC A2's reading), naming the clients that then fail their channel:
// grpc-go and grpc-js, when no choice takes every client of theirs as they
// read the criteria (choiceReach).
func reportNoCatchAll(c *checker, ch *Choices) {
	for i := range ch.List {
		if ch.List[i].matchesEveryone() {
			return
		}
	}
	if len(ch.List) == 0 {
		return
	}
	_, _, left := choiceReach(ch)
	who := left & (clientGo | clientJS)
	last := ch.List[len(ch.List)-1].node
	c.pushIdx(ch.List[len(ch.List)-1].elem)
	if who == 0 {
		c.report(last, codeChoicesNoCatchAll, "no choice matches every client: a client that matches none gets no config from this record and uses the channel's default config (our resolver, C-core, grpc-java); end the list with a choice without criteria, like {\"serviceConfig\":{}}")
	} else {
		c.refuse(last, codeChoicesNoCatchAll, who, "no choice matches every client: a client that matches none gets no config from this record, and %s then %s the channel (UNAVAILABLE) while our resolver, C-core and grpc-java use the channel's default config; end the list with a choice without criteria, like {\"serviceConfig\":{}}", who, who.verb("fails", "fail"))
	}
	c.pop()
}

// reportEmptyCriteria reports the empty clientLanguage and clientHostname
// lists of choice i, which clients read in two ways.
func reportEmptyCriteria(c *checker, ch *Choices, i int) {
	t := c.t
	x := &ch.List[i]
	for _, key := range []string{keyClientLanguage, keyClientHostname} {
		if v := t.Get(x.node, key); v >= 0 && t.Nodes[v].Kind == jtree.Array && t.Nodes[v].Len == 0 {
			// gRFC A2 matches all; so do C-core's current resolver and
			// grpc-java (1.41, measured). grpc-go and grpc-js match
			// none, and fail the channel when no later choice takes
			// them; C-core 1.51 (grpcio, measured) matched none too.
			var who client
			if !ch.laterCatchAll(i) {
				who = clientGo | clientJS
			}
			c.pushKey(keyNodeOf(t, x.node, v))
			c.refuse(v, codeChoiceEmptyList, who, "an empty %s list matches every client under gRFC A2 (grpc-java and C-core's current resolver agree; C-core 1.51 matched none), but grpc-go and grpc-js match none (and fail the channel when no later choice matches them): remove the field to match every client", key)
			c.pop()
		}
	}
}

// reportLanguageCase reports a clientLanguage list of choice x that names
// a client's language in a form that client does not match: Go in a case
// other than "GO" (grpc-go compares exactly), Node in a case other than
// "node" (so does grpc-js, measured by the interop suite), or a language
// built on C-core (Python, Ruby, PHP, C#…) without "c++", the one C-core
// matches. gRFC A2 compares case-insensitively, as our resolver does.
func reportLanguageCase(c *checker, x *Choice) {
	t := c.t
	v := t.Get(x.node, keyClientLanguage)
	if v < 0 || t.Nodes[v].Kind != jtree.Array {
		return
	}
	goVariant, nodeVariant, coreLang := int32(-1), int32(-1), int32(-1)
	var exactGO, exactNode, cpp bool
	for e := t.Nodes[v].First; e >= 0; e = t.Nodes[e].Next {
		switch {
		case t.Is(e, "GO"):
			exactGO = true
		case t.EqualFoldASCII(e, "go"):
			goVariant = e
		case t.Is(e, "node"):
			exactNode = true
		case t.EqualFoldASCII(e, "node"):
			nodeVariant = e
		case t.EqualFoldASCII(e, "c++"):
			cpp = true
		case coreLang < 0 && t.Nodes[e].Kind == jtree.String && coreLanguages[strings.ToLower(t.Str(e))]:
			coreLang = e
		}
	}
	c.pushKey(keyNodeOf(t, x.node, v))
	if goVariant >= 0 && !exactGO {
		c.misread(goVariant, codeChoiceLanguageCase, 0, clientGo, "clientLanguage %s is case-insensitive under gRFC A2, but grpc-go only matches \"GO\": write \"GO\" (our resolver and other clients match either)", t.Raw(goVariant))
	}
	if nodeVariant >= 0 && !exactNode {
		c.misread(nodeVariant, codeChoiceLanguageCase, 0, clientJS, "clientLanguage %s is case-insensitive under gRFC A2, but grpc-js only matches \"node\" as written (measured): write \"node\"", t.Raw(nodeVariant))
	}
	if coreLang >= 0 && !cpp {
		c.misread(coreLang, codeChoiceLanguageCase, 0, clientCore, "clientLanguage %s names a language built on C-core, whose clients match only \"c++\" (C-core says its language is C++ whatever the wrapping language): add \"c++\", which takes every C-core client", t.Raw(coreLang))
	}
	c.pop()
}

// coreLanguages are languages whose gRPC is C-core, which matches
// clientLanguage "c++" only.
var coreLanguages = map[string]bool{"python": true, "ruby": true, "php": true, "c#": true, "csharp": true, "objective-c": true, "objc": true, "cpp": true, "c": true}

// lintTXTText checks a TXT record given as text.
func lintTXTText(text []byte, opts LintOptions) Diagnostics {
	trimmed := firstSignificant(text)
	// Raw form: the attribute and a JSON value, as one logical string.
	if text[trimmed] != '"' && !zoneLineRE.Match(firstSignificantLine(text)) {
		eq, _, exact := attribute(firstLine(text[trimmed:]))
		start := trimmed + eq + 1
		var ds Diagnostics
		if !exact {
			ds = append(ds, spellingDiagnostic(trimmed))
		}
		value := bytes.TrimRight(text[start:], " \t\r\n")
		return append(ds, lintValue(value, KindChoices, func(o int) int { return start + o }, opts)...)
	}
	p, bad := parsePresentation(text)
	if bad != nil {
		return Diagnostics{*bad}
	}
	return lintRecordSet(p.records, p, opts)
}

func spellingDiagnostic(off int) Diagnostic {
	return Diagnostic{Severity: codeTXTAttributeSpelling.severity(), Code: codeTXTAttributeSpelling.String(), Offset: off, misreadBy: codeMisreads[codeTXTAttributeSpelling],
		Message: "the attribute is not written exactly \"grpc_config=\": RFC 1464 allows other spellings (case, spaces, back-quotes) and our resolver reads them, but grpc-go, C-core and grpc-js look for the exact prefix; write grpc_config="}
}

// textRecords reads the records of a TXT text input, and where their
// bytes are in the text (nil for the raw form, one record of one string).
func textRecords(text []byte) ([][]string, *presentation, *Diagnostic) {
	trimmed := firstSignificant(text)
	if text[trimmed] != '"' && !zoneLineRE.Match(firstSignificantLine(text)) {
		return [][]string{{string(bytes.TrimRight(text[trimmed:], " \t\r\n"))}}, nil, nil
	}
	p, bad := parsePresentation(text)
	if bad != nil {
		return nil, nil, bad
	}
	return p.records, p, nil
}

// lintRecordSet checks the records at one owner name. p, when not nil,
// holds where each byte came from in the user's text.
func lintRecordSet(records [][]string, p *presentation, opts LintOptions) Diagnostics {
	pick, other, others, ds := configRecord(records, p)
	found := pick.found
	if found < 0 {
		return append(ds, Diagnostic{Severity: codeTXTNoRecord.severity(), Code: codeTXTNoRecord.String(), Offset: p.start(0), Message: noRecordMessage(records)})
	}
	if others > 0 {
		ds = append(ds, Diagnostic{Severity: codeTXTOtherRecords.severity(), Code: codeTXTOtherRecords.String(), Offset: p.start(other), misreadBy: codeMisreads[codeTXTOtherRecords],
			Message: fmt.Sprintf("%d other TXT record(s) share this name: our resolver, C-core, grpc-java and grpc-js ignore them, but grpc-go joins every TXT record at the name and fails to parse the result; publish the config alone at _grpc_config.<host>", others)})
	}
	value, offs := recordBytes(records[found], found, pick.skip, p)
	for i, b := range value {
		if b >= 0x80 {
			off := i
			if p != nil {
				off = offs[i]
			}
			return append(ds, Diagnostic{Severity: codeNonASCII.severity(), Code: codeNonASCII.String(), Offset: off,
				Message: fmt.Sprintf("byte 0x%02x is not ASCII: gRFC A2 records are ASCII; write non-ASCII characters as \\u escapes", b)})
		}
	}
	m := func(int) int { return -1 }
	if p != nil {
		m = func(o int) int {
			if o < len(offs) {
				return offs[o]
			}
			if len(offs) > 0 {
				return offs[len(offs)-1] + 1
			}
			return p.start(found)
		}
	}
	return append(ds, lintValue(value, KindChoices, m, opts, records[found]...)...)
}

// configRecord finds the record that holds the config (pickRecord) and
// the records that hold none (the first of them, and how many), and
// reports strings too long for TXT, a second config record, and an
// attribute spelt, or cut across strings, in a way some clients miss.
func configRecord(records [][]string, p *presentation) (pick recordPick, other, others int, ds Diagnostics) {
	ds = longStrings(records, p)
	pick = pickRecord(records)
	other, others = -1, len(records)
	if pick.found >= 0 {
		others -= 1 + len(pick.extra)
	}
	if others > 0 {
		other = firstOtherRecord(len(records), pick)
	}
	if pick.found < 0 {
		return pick, other, others, ds
	}
	switch {
	case !pick.exact:
		ds = append(ds, spellingDiagnostic(p.start(pick.found)))
	case pick.split:
		// As their sources read: grpc-go (dns_resolver.go: every record
		// joined), grpc-java (JNDI gives each record's strings joined);
		// grpc-js (service-config.ts) and C-core's c-ares resolver
		// (grpc_ares_wrapper.cc) compare the first string only.
		ds = append(ds, Diagnostic{Severity: codeTXTPrefixSplit.severity(), Code: codeTXTPrefixSplit.String(), Offset: p.start(pick.found), misreadBy: codeMisreads[codeTXTPrefixSplit],
			Message: fmt.Sprintf("record %d cuts grpc_config= across its strings: gRFC A2 joins them, and our resolver, grpc-go and grpc-java read the config, but grpc-js and C-core's c-ares resolver look for the prefix in the first string only and see no config; start the first string with the whole \"grpc_config=\"", pick.found)})
	}
	for _, r := range pick.extra {
		// Measured by the interop suite (two-configs).
		ds = append(ds, Diagnostic{Severity: codeTXTMultipleConfig.severity(), Code: codeTXTMultipleConfig.String(), Offset: p.start(r),
			Message: fmt.Sprintf("records %d and %d both start with grpc_config=: the clients disagree on which to use (C-core and grpc-js read the first, grpc-java joins their choice lists, grpc-go fails to parse them), so the config is invalid; publish exactly one", pick.found, r)})
	}
	return pick, other, others, ds
}

// longStrings reports the strings of records too long for TXT.
func longStrings(records [][]string, p *presentation) Diagnostics {
	var ds Diagnostics
	for r, strs := range records {
		for s, str := range strs {
			if len(str) <= maxStringLen {
				continue
			}
			off := -1
			if p != nil {
				off = p.offs[r][s][0]
			}
			ds = append(ds, Diagnostic{Severity: codeTXTStringTooLong.severity(), Code: codeTXTStringTooLong.String(), Offset: off,
				Message: fmt.Sprintf("string %d of record %d is %d bytes long: a TXT string holds at most %d; split it into several strings (clients join them)", s, r, len(str), maxStringLen)})
		}
	}
	return ds
}

// firstOtherRecord is the first of n records that holds no config: it is
// neither pick.found nor one of pick.extra, which is in order. It is -1
// when there is none.
func firstOtherRecord(n int, pick recordPick) int {
	e := 0
	for r := 0; r < n; r++ {
		switch {
		case r == pick.found:
		case e < len(pick.extra) && pick.extra[e] == r:
			e++
		default:
			return r
		}
	}
	return -1
}

// recordBytes joins the strings of record r after the first skip bytes
// (the attribute and its '='), and, when p is known, says where each byte
// of the value is in the text.
func recordBytes(strs []string, r, skip int, p *presentation) (value []byte, offs []int) {
	for s, str := range strs {
		from := min(skip, len(str))
		skip -= from
		value = append(value, str[from:]...)
		if p != nil {
			offs = append(offs, p.offs[r][s][from:]...)
		}
	}
	return value, offs
}

func noRecordMessage(records [][]string) string {
	if len(records) == 0 {
		return "there is no TXT record: clients get no service config"
	}
	return fmt.Sprintf("none of the %d TXT record(s) starts with grpc_config=, so clients get no service config; publish one record whose text starts with grpc_config=", len(records))
}

// locate fills Line and Column from offsets into text.
func locate(ds Diagnostics, text []byte) {
	var idx lineIndex
	for i := range ds {
		if ds[i].Offset < 0 || ds[i].Offset > len(text) {
			continue
		}
		if idx == nil {
			idx = newLineIndex(text)
		}
		ds[i].Line, ds[i].Column = idx.position(ds[i].Offset)
		if r := ds[i].related - 1; r >= 0 && r <= len(text) {
			l, c := idx.position(r)
			ds[i].Message += fmt.Sprintf(" (the first copy is at %d:%d)", l, c)
			ds[i].related = 0
		}
	}
}

// laterCatchAll reports whether a choice after i has no criterion at all,
// so that every client, however it reads criteria, selects it.
func (ch *Choices) laterCatchAll(i int) bool {
	for _, x := range ch.List[i+1:] {
		if x.ClientLanguage == nil && x.ClientHostname == nil && (x.Percentage < 0 || x.Percentage == 100) && x.Constraints == nil {
			return true
		}
	}
	return false
}

// matchesEveryone reports whether the choice has no criterion that can fail
// (percentage 100 matches every bucket).
func (ch *Choice) matchesEveryone() bool {
	return len(ch.ClientLanguage) == 0 && len(ch.ClientHostname) == 0 &&
		(ch.Percentage < 0 || ch.Percentage >= 100) && ch.Constraints == nil
}
