package serviceconfig

import (
	"fmt"
	"strings"
)

// Answer is what a client found at a record's owner name: the TXT records
// of a DNS answer or, for tools that read a record from a file, the record
// as text.
type Answer struct {
	// Owner is the name that was asked, _grpc_config.<host>. It only names
	// the place in reasons; it may be empty.
	Owner string
	// NXDomain is set when Owner does not exist.
	NXDomain bool
	// Records are the TXT records at Owner, each a list of raw strings as
	// on the wire.
	Records [][]string
	// Text, when not nil, is the record as a user wrote it, read instead of
	// Records: a TXT record (raw or in presentation form), a choice list,
	// or a bare service config (one choice for every client). Diagnostics
	// are then placed in it, as [Lint] places them.
	Text []byte
}

// Result is what a client does with the answer, by gRFC A2 and A21.
type Result uint8

const (
	// NoConfig: no record, NXDOMAIN, or no choice matches the client. The
	// client uses its default service config; the channel stays healthy.
	NoConfig Result = iota
	// Invalid: the record, or the service config of the choice the client
	// selects, is invalid. The client keeps the config it has, or uses its
	// default, or fails if it has neither (gRFC A21).
	Invalid
	// Chosen: a choice matched and its service config is valid.
	Chosen
)

func (r Result) String() string {
	switch r {
	case NoConfig:
		return "no config"
	case Invalid:
		return "invalid"
	case Chosen:
		return "chosen"
	}
	return fmt.Sprintf("Result(%d)", uint8(r))
}

// Outcome is what one answer means for one client.
type Outcome struct {
	Result Result
	// Choice is the index of the selected choice: the chosen one, or, for
	// an Invalid outcome, the one whose service config is invalid. It is -1
	// when no choice was selected.
	Choice int
	// ServiceConfig is the chosen service config as published, compact.
	ServiceConfig []byte
	// GrpcGoConfig is the chosen service config in the form grpc-go's
	// parser reads as the spec means ([Choices.GrpcGoConfig]).
	GrpcGoConfig []byte
	// Reason says why in one line: which choice was selected and how the
	// earlier ones failed to match, why none matched, or why the record is
	// invalid. It names the client.
	Reason string
	// Err is the problem of an Invalid outcome, or nil.
	Err error
	// Diagnostics are the errors of an Invalid outcome, placed in Text when
	// the answer was read from text.
	Diagnostics Diagnostics
	// Choices is the parsed record, or nil when there is none or it does
	// not parse; [Choices.Explain] says for every choice why it matched or
	// not.
	Choices *Choices
}

// Choose decides what client c makes of answer a: gRFC A2's selection (the
// first choice whose every criterion matches) and gRFC A21's validation
// (the structure of every choice, the service config of the selected one
// only). It is the one implementation of that decision, used by the
// resolver (through [ChooseRecords]) and by the select command.
func Choose(a Answer, c Client) Outcome {
	if a.Text == nil {
		return ChooseRecords(a, c)
	}
	ch, ds := choicesFromText(a.Text)
	return choose(ch, ds, c)
}

// ChooseRecords is [Choose] for an answer from DNS: it reads a's Owner,
// NXDomain and Records, and ignores Text. The resolver calls it rather than
// Choose so that a gRPC client does not link the readers of the forms
// people write a record in (presentation format, a bare choice list or
// service config), which it never reads: about 40 kB of the client
// (resolver's TestClientSize).
func ChooseRecords(a Answer, c Client) Outcome {
	owner := a.Owner
	if owner == "" {
		owner = "the owner name"
	}
	switch {
	case a.NXDomain:
		return noConfig(fmt.Sprintf("%s does not exist (NXDOMAIN)", owner))
	case len(a.Records) == 0:
		return noConfig(fmt.Sprintf("%s has no TXT records", owner))
	}
	ch, ds := choicesFromRecords(a.Records)
	return choose(ch, ds, c)
}

// noConfig is the outcome of an answer without a record; none says why.
func noConfig(none string) Outcome {
	return Outcome{Result: NoConfig, Choice: -1, Reason: "no service config published: " + none}
}

// choose is Choose once the answer's choice list is read: ch is nil when
// the record is invalid, or when there is none, and ds says why.
func choose(ch *Choices, ds Diagnostics, c Client) Outcome {
	if ch == nil && len(ds) == 1 && ds[0].Code == codeTXTNoRecord.String() {
		return noConfig(ds[0].Message)
	}
	if ch == nil {
		err := ds.Err()
		return Outcome{Result: Invalid, Choice: -1, Err: err, Diagnostics: ds, Reason: "invalid record: " + err.Error()}
	}
	out := Outcome{Choices: ch, Choice: ch.Select(c)}
	if out.Choice < 0 {
		out.Result = NoConfig
		out.Reason = fmt.Sprintf("no choice matches this client (%s): %s", c, strings.Join(skipped(ch, c, len(ch.List)), "; "))
		return out
	}
	if ds := ch.Validate(out.Choice); ds.HasErrors() {
		out.Result, out.Diagnostics = Invalid, ds
		out.Err = fmt.Errorf("choice %d's service config: %w", out.Choice, ds.Err())
		out.Reason = "invalid record: " + out.Err.Error()
		return out
	}
	out.Result = Chosen
	out.ServiceConfig = ch.CompactConfig(out.Choice)
	out.GrpcGoConfig = ch.GrpcGoConfig(out.Choice)
	// Why the chosen one, and why not the earlier ones.
	why := append(skipped(ch, c, out.Choice), ch.Why(c, out.Choice).String())
	out.Reason = fmt.Sprintf("%s (%s)", strings.Join(why, "; "), c)
	return out
}

// maxExplained is how many skipped choices a reason explains one by one.
// A record may hold thousands; a sentence for each, on every resolution,
// would cost many times the record.
const maxExplained = 8

// skipped explains why the first n choices did not match c, the first
// maxExplained of them one by one.
func skipped(ch *Choices, c Client, n int) []string {
	why := make([]string, 0, min(n, maxExplained)+2)
	for j := range min(n, maxExplained) {
		why = append(why, ch.Why(c, j).String())
	}
	if n > maxExplained {
		why = append(why, fmt.Sprintf("choices %d to %d: skipped too", maxExplained, n-1))
	}
	return why
}

// String describes the client as selection sees it: language, bucket,
// hostname and dynamic parameters.
func (c Client) String() string {
	s := fmt.Sprintf("language %q, bucket %d, hostname %q", c.Language, c.Bucket, c.Hostname)
	if len(c.Params) > 0 {
		s += ", parameters " + FormatParams(c.Params)
	}
	return s
}
