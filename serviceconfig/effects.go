package serviceconfig

import "strings"

// effect is what one client does with what a diagnostic points at.
type effect uint8

const (
	effectOK effect = iota
	// effectUnreached: the client never picks (or reads) the choice the
	// diagnostic is in, so whatever it would do does not happen.
	effectUnreached
	// effectIgnores: the client drops the field or key, as it drops any it
	// does not know, and uses its default. Not a verdict: the spec ignores
	// unknown fields too, and a client that lacks a deprecated field
	// (grpc-js and loadBalancingPolicy) reads the rest as the spec says.
	effectIgnores
	// effectMisreads: the client reads the value differently from the
	// spec (a duration 10⁸ times too short, no config where there is one).
	effectMisreads
	// effectRejects: the client rejects the whole config.
	effectRejects
	// effectFails: the client fails its channel (UNAVAILABLE).
	effectFails
)

// blocks reports whether a declared client doing e makes the record an
// error.
func (e effect) blocks() bool { return e >= effectMisreads }

// codeEffects is what clients do, for one code, beyond the clients a
// diagnostic names as refusing (Diagnostic.refusedBy, told by the rule
// that reports it, which knows the value). It holds no text, so that a
// program that only validates (a gRPC client of the resolver) does not
// carry the descriptions (clientTexts).
type codeEffects struct {
	// rejects are the clients the rules may name as refusing (rejecting
	// the config, or failing the channel when fails is set): each rule
	// names those that refuse the value at hand, a subset
	// (TestRefusalsDeclared).
	rejects Clients
	// ignores are the clients that drop the value, whenever the code is
	// reported (misreads: codeMisreads).
	ignores Clients
	// fails is set when the clients named as refusing fail their channel
	// rather than reject the config.
	fails bool
	// some is set when the rule names, per value, which of the clients
	// listed refuse or misread it.
	some bool
}

// codeTexts says what the clients of codeEffects do, in words.
type codeTexts struct {
	// reads says how the misreading clients read the value, as a short
	// phrase.
	reads string
	// ignoresWhat names what the ignoring clients drop ("field", "key").
	ignoresWhat string
}

// clientEffects are the codes whose diagnostics concern some clients and
// not others. The refusals are the rules' own (refusedBy); this table holds
// the rest, and docs/rules.md's table of clients is generated from both
// (TestClientTable).
var clientEffects = [numCodes]codeEffects{
	codeChoiceEmptyList:        {some: true, rejects: clientGo | clientJS, fails: true},
	codeChoicesNoCatchAll:      {some: true, rejects: clientGo | clientJS, fails: true},
	codeChoiceExtensionKey:     {rejects: clientJava | clientJS},
	codeChoiceLanguageCase:     {some: true},
	codeFieldCase:              {ignores: clientCore | clientJava | clientJS},
	codeNullValue:              {rejects: clientJava | clientJS},
	codeNumberString:           {some: true, rejects: clientGo | clientJava | clientJS},
	codeNumberForm:             {rejects: clientGo | clientCore},
	codeNumberRange:            {rejects: clientJava},
	codeMethodNameMissing:      {rejects: clientJS},
	codeDurationForm:           {some: true, rejects: clientCore | clientJava | clientJS},
	codeDurationNegative:       {some: true, rejects: allClients},
	codeTimeout:                {some: true, rejects: clientCore | clientJS},
	codeRetryPerAttemptTimeout: {rejects: clientCore | clientJava},
	codeStatusCodeCase:         {rejects: clientGo | clientCore | clientJava},
	codeStatusCodeNumber:       {rejects: clientCore},
	codeStatusCodeOK:           {rejects: clientJava},
	codeTokenRatioPrecision:    {rejects: clientCore},
	codeLBConfigEmpty:          {rejects: clientGo | clientCore},
	codeLBPolicyUnsupported:    {some: true, rejects: allClients},
	codeLBFallbackConfig:       {some: true, rejects: allClients},
	codeLBPolicyCompat:         {some: true, rejects: clientCore | clientJava, ignores: clientJS},
	codeRLSLookupScheme:        {some: true, rejects: allClients},
	codeProtoDefaultValue:      {some: true, rejects: allClients},
}

// codeMisreads are the clients that read a code's values differently from
// the spec whenever the code is reported; a rule that knows better names
// its own (checker.misread). Apart from clientEffects because the checker
// of every gRPC client of the resolver reads it, and nothing else there.
var codeMisreads = [numCodes]Clients{
	codeTXTPrefixSplit:       clientCore | clientJS,
	codeTXTAttributeSpelling: clientGo | clientCore | clientJS,
	codeTXTOtherRecords:      clientGo,
	codeChoiceEmptyList:      clientGo | clientJS,
	codeChoiceExtensionKey:   clientGo | clientCore,
	codeChoiceLanguageCase:   clientGo | clientCore | clientJS,
	codeFieldCase:            clientGo,
	codeDurationFraction:     clientJS,
	codeTimeout:              allClients,
	codeLBPolicyCompat:       clientGo,
}

// clientTexts are the words of clientEffects, for ClientEffects and
// docs/rules.md.
var clientTexts = [numCodes]codeTexts{
	codeTXTPrefixSplit:       {reads: "sees no config (looks for the prefix in the first string)"},
	codeTXTAttributeSpelling: {reads: "sees no config (matches the attribute exactly)"},
	codeTXTOtherRecords:      {reads: "joins every TXT record of the name and fails to parse them"},
	codeChoiceEmptyList:      {reads: "matches no client with an empty list"},
	codeChoiceExtensionKey:   {reads: "ignores the constraints, so may pick a choice meant for other clients"},
	codeChoiceLanguageCase:   {reads: "does not match the language as written (grpc-go: only \"GO\"; grpc-js: only \"node\"; C-core: only \"c++\")"},
	codeFieldCase:            {reads: "reads it as the field of that name", ignoresWhat: "field"},
	codeDurationFraction:     {reads: "takes the fraction digits as nanoseconds (\"0.1s\" as 1 ns)"},
	codeTimeout:              {reads: "fails every call at once"},
	codeLBPolicyCompat:       {reads: "uses pick_first instead", ignoresWhat: "field (uses pick_first)"},
}

// effects is what each client does with what d points at, in the order
// of clientIDs.
func (d *Diagnostic) effects() [len(clientIDs)]effect {
	var out [len(clientIDs)]effect
	ce := &clientEffects[d.code()]
	for i := range out {
		c := Clients(1 << i)
		switch {
		case d.refusedBy&c != 0 && ce.fails:
			out[i] = effectFails
		case d.refusedBy&c != 0:
			out[i] = effectRejects
		case d.misreadBy&c != 0:
			out[i] = effectMisreads
		case ce.ignores&c != 0:
			out[i] = effectIgnores
		}
		if out[i] != effectOK && d.unreached&c != 0 {
			out[i] = effectUnreached
		}
	}
	return out
}

// code is d's code as this package numbers it, or 0 for one it does not
// know (made by a caller).
func (d *Diagnostic) code() diagCode {
	if d.Code == "" {
		return 0
	}
	return codeByID()[d.Code]
}

// blockedBy is the set of clients in declared whose effect blocks.
func (d *Diagnostic) blockedBy(declared Clients) Clients {
	if d.refusedBy|d.misreadBy == 0 {
		return 0
	}
	var out Clients
	for i, e := range d.effects() {
		if e.blocks() {
			out |= 1 << i
		}
	}
	return out & declared
}

// ClientEffects says, for a diagnostic that concerns some clients and not
// others, what each of them does with what it points at: "rejects config",
// "fails channel", "ignores field", "reads it …" (how), "never picks this
// choice", or "ok", keyed by the client's ID (ClientIDs). It is nil for a
// diagnostic that concerns every client alike. A function, not a method
// of Diagnostic, for the reason ClientIDs is: with its texts it would add
// about 10 kB to every gRPC client of the resolver.
func ClientEffects(d *Diagnostic) map[string]string {
	c := d.code()
	ce := &clientEffects[c]
	if d.refusedBy|d.misreadBy|ce.ignores == 0 {
		return nil
	}
	m := make(map[string]string, len(clientIDs))
	for i, e := range d.effects() {
		m[clientIDs[i]] = e.text(&clientTexts[c])
	}
	return m
}

// text is e as ClientEffects says it.
func (e effect) text(ct *codeTexts) string {
	switch e {
	case effectUnreached:
		return "never picks this choice"
	case effectIgnores:
		return "ignores " + cmpOr(ct.ignoresWhat, "it")
	case effectMisreads:
		return cmpOr(ct.reads, "reads it differently from the spec")
	case effectRejects:
		return "rejects config"
	case effectFails:
		return "fails channel"
	}
	return "ok"
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// txtFormCodes are the problems of a TXT record's form (its strings and
// attribute), which the publisher does not keep: it encodes the value
// anew.
var txtFormCodes = func() (s codeSet) {
	s.add(codeTXTPrefixSplit)
	s.add(codeTXTAttributeSpelling)
	s.add(codeTXTOtherRecords)
	return s
}()

// judge is the one verdict on lint's diagnostics of a record, for the
// clients declared: a warning that a declared client's effect blocks
// (rejects the config, fails its channel, misreads it) becomes an error
// that says so, and a field one typo away from a known one is refused
// (misspelled-field) unless allowed. Lint, Publish and through them every
// tool reach their decision here.
//
// The codes in rewritten are not judged: what the publisher rewrites in
// the record it publishes (rewrittenCodes).
func judge(ds Diagnostics, declared Clients, allowMisspelled bool, rewritten codeSet) Diagnostics {
	judged := false
	defer func() {
		if judged {
			ds.Sort() // errors before warnings at one place
		}
	}()
	for i := range ds {
		d := &ds[i]
		if d.Severity != Warning {
			continue
		}
		if c := d.code(); c != 0 && rewritten.has(c) {
			continue
		}
		if d.suggestion != "" && !allowMisspelled {
			judged = true
			d.Severity, d.Code = codeMisspelledField.severity(), codeMisspelledField.String()
			d.Message = strings.TrimSuffix(d.Message, "; gRPC clients ignore it") +
				"; gRPC clients would ignore it and drop the value silently, so it is not published: correct the name"
			continue
		}
		if b := d.blockedBy(declared); b != 0 {
			judged = true
			d.Severity = Error
			if d.Message != "" {
				d.Message += "; an error because " + b.String() + " " + b.verb("is", "are") + " among the declared clients (compat.clients, --clients)"
			}
		}
	}
	return ds
}
