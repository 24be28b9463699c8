package serviceconfig

import (
	"cmp"
	"fmt"
	"sort"
	"strings"
)

// Severity says whether a diagnostic makes the input invalid.
type Severity uint8

const (
	// Error makes the input invalid: a client rejects the record.
	Error Severity = iota + 1
	// Warning marks something legal that probably does not do what the
	// author meant, or that some gRPC clients handle differently.
	Warning
)

func (s Severity) String() string {
	switch s {
	case Error:
		return "error"
	case Warning:
		return "warning"
	}
	return "unknown"
}

// MarshalText writes the severity as "error" or "warning".
func (s Severity) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// Diagnostic is one problem found in an input.
type Diagnostic struct {
	Severity Severity
	// Code is a stable kebab-case identifier; see [Codes].
	Code string
	// Message says what is wrong and how to fix it.
	Message string
	// Path is the JSON pointer (RFC 6901) of the value concerned, relative
	// to the document that was checked.
	Path string
	// Offset is the byte offset of the value in the checked text, or -1.
	Offset int
	// Line and Column (1-based, column in bytes) locate the problem in the
	// text the user gave, or are 0 when unknown. They are filled by the
	// function that knows that text.
	Line, Column int

	// suggestion is the known field an unknown-field diagnostic takes the
	// field for a misspelling of, or "".
	suggestion string
	// related is 1 + the offset of a second place the message refers to
	// (the first of two duplicate keys), or 0.
	related int
	// omitted counts the errors and warnings left out, on the one
	// diagnostic (code diagnostics-omitted) that stands for them.
	omitted [2]int
	// refusedBy, on a warning, names the clients that reject the whole
	// config because of it although the spec allows it (or fail their
	// channel, for the codes clientEffects says fail); misreadBy those
	// that read it differently from the spec.
	refusedBy, misreadBy client
	// unreached are the clients that never pick (or read) the choice the
	// diagnostic is in, so that what they would do does not happen.
	unreached client
	// choice is 1 + the index of the choice of a list the diagnostic is
	// in, or 0.
	choice int32
}

func (d Diagnostic) String() string {
	var b strings.Builder
	if d.Line > 0 {
		fmt.Fprintf(&b, "%d:%d: ", d.Line, d.Column)
	}
	fmt.Fprintf(&b, "%s: %s [%s]", d.Severity, d.Message, d.Code)
	return b.String()
}

// Diagnostics is a list of diagnostics, kept sorted by position.
type Diagnostics []Diagnostic

// HasErrors reports whether any diagnostic is an error.
func (ds Diagnostics) HasErrors() bool {
	for _, d := range ds {
		if d.Severity == Error {
			return true
		}
	}
	return false
}

// Err returns nil when ds holds no error, and otherwise an *InvalidError
// carrying all of ds.
func (ds Diagnostics) Err() error {
	if !ds.HasErrors() {
		return nil
	}
	return &InvalidError{Diagnostics: ds}
}

// Sort orders diagnostics by position, then errors before warnings, then
// code. The count of omitted diagnostics, if any, comes last. Equal
// diagnostics keep their order.
//
// It sorts a permutation with sort.Slice, the original index as the last
// key, rather than calling slices.SortStableFunc: every gRPC client links
// sort.Slice already, and an instantiation of the generic stable sort for
// Diagnostic would add about 7 kB to a client of the resolver
// (TestClientSize).
func (ds Diagnostics) Sort() {
	if len(ds) < 2 {
		return
	}
	idx := make([]int, len(ds))
	for i := range idx {
		idx[i] = i
	}
	sort.Slice(idx, func(i, j int) bool {
		if c := compareDiagnostics(&ds[idx[i]], &ds[idx[j]]); c != 0 {
			return c < 0
		}
		return idx[i] < idx[j]
	})
	sorted := make(Diagnostics, len(ds))
	for i, k := range idx {
		sorted[i] = ds[k]
	}
	copy(ds, sorted)
}

// compareDiagnostics is the order of Sort.
func compareDiagnostics(a, b *Diagnostic) int {
	if ao, bo := a.Code == omittedCode, b.Code == omittedCode; ao || bo {
		switch {
		case ao == bo:
			return 0
		case ao:
			return 1
		}
		return -1
	}
	if c := cmp.Compare(a.Line, b.Line); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Column, b.Column); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Offset, b.Offset); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Severity, b.Severity); c != 0 {
		return c
	}
	return cmp.Compare(a.Code, b.Code)
}

// InvalidError is returned when an input breaks the rules. Its message is
// the first error; Diagnostics holds all of them.
type InvalidError struct {
	Diagnostics Diagnostics
}

func (e *InvalidError) Error() string {
	for _, d := range e.Diagnostics {
		if d.Severity == Error {
			msg := d.Message
			if d.Path != "" {
				msg = d.Path + ": " + msg
			}
			if n := e.errorCount(); n > 1 {
				msg += fmt.Sprintf(" (and %d more errors)", n-1)
			}
			return msg + " [" + d.Code + "]"
		}
	}
	return "invalid"
}

func (e *InvalidError) errorCount() int {
	n := 0
	for _, d := range e.Diagnostics {
		if d.Severity == Error {
			n++
		}
		n += d.omitted[0]
	}
	return n
}

// MaxDiagnostics is the most diagnostics reported about one input, besides
// the one that counts the others. An input with more repeats a few
// mistakes many times: the first ones say what to fix, and building every
// message would cost a hostile input's author nothing and us time and
// memory in proportion to the input.
const MaxDiagnostics = 100

// omittedCode is the code of the diagnostic that stands for those left out.
var omittedCode = codeDiagnosticsOmitted.String()

// Omitted returns the diagnostic that stands for errors and warnings left
// out of a report. [Diagnostics.Capped] merges several into one.
func Omitted(errors, warnings int) Diagnostic {
	return Diagnostic{Severity: codeDiagnosticsOmitted.severity(), Code: omittedCode, Offset: -1,
		Message: omittedMessage(errors, warnings), omitted: [2]int{errors, warnings}}
}

// OmittedCounts returns the errors and warnings a diagnostics-omitted
// diagnostic stands for (0, 0 for any other).
func (d Diagnostic) OmittedCounts() (errors, warnings int) {
	return d.omitted[0], d.omitted[1]
}

func omittedMessage(errors, warnings int) string {
	return fmt.Sprintf("%d more error(s) and %d more warning(s) are not shown: at most %d diagnostics are reported per input, errors first; fix these and check again", errors, warnings, MaxDiagnostics)
}

// Capped returns ds cut to MaxDiagnostics diagnostics, errors kept before
// warnings (so that an invalid input still shows an error), and warnings
// that name clients refusing or misreading the value before the others (so
// that the verdict for declared clients, judged after the cap, still shows
// why), in their order, followed by one diagnostic that counts what was
// left out (its own and any such count already in ds), with the clients
// the problems left out name. ds is returned as is when nothing needs to
// be left out.
func (ds Diagnostics) Capped() Diagnostics {
	var n [3]int // errors, warnings naming clients, other warnings
	summaries := 0
	rank := func(d *Diagnostic) int {
		switch {
		case d.Severity == Error:
			return 0
		case d.refusedBy|d.misreadBy != 0:
			return 1
		}
		return 2
	}
	for i := range ds {
		if ds[i].Code == omittedCode {
			summaries++
			continue
		}
		n[rank(&ds[i])]++
	}
	if summaries == 0 && n[0]+n[1]+n[2] <= MaxDiagnostics {
		return ds
	}
	var keep [3]int
	room := MaxDiagnostics
	for r := range keep {
		keep[r] = min(n[r], room)
		room -= keep[r]
	}
	more := [2]int{n[0] - keep[0], n[1] + n[2] - keep[1] - keep[2]}
	out := make(Diagnostics, 0, MaxDiagnostics-room+1)
	// The clients that a problem left out refuses or misreads stay on the
	// count, as the checker keeps them (refuse), for the verdict (judge,
	// which runs after the cap).
	var refused Clients
	for i := range ds {
		d := &ds[i]
		if d.Code == omittedCode {
			more[0] += d.omitted[0]
			more[1] += d.omitted[1]
			refused |= d.refusedBy
			continue
		}
		if r := rank(d); keep[r] > 0 {
			out = append(out, *d)
			keep[r]--
			continue
		}
		refused |= d.refusedBy | d.misreadBy
	}
	if more[0]+more[1] > 0 {
		o := Omitted(more[0], more[1])
		o.refusedBy = refused
		out = append(out, o)
	}
	return out
}
