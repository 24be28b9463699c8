package serviceconfig

import (
	"cmp"
	"fmt"
	"slices"
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

	// related is 1 + the offset of a second place the message refers to
	// (the first of two duplicate keys), or 0.
	related int
	// refusedBy, on a warning, names the clients that reject the whole
	// config because of it although the spec allows it.
	refusedBy client
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

// Sort orders diagnostics by position, then errors before warnings, then code.
func (ds Diagnostics) Sort() {
	slices.SortStableFunc(ds, func(a, b Diagnostic) int {
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
	})
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
	}
	return n
}
