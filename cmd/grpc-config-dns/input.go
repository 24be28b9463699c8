package main

import (
	"io"
	"os"
	"strings"
)

// input is one INPUT argument, read.
type input struct {
	// name is how diagnostics refer to it: the path, "<stdin>" or the
	// dns:// URL.
	name string
	// text is the input's bytes; nil for DNS inputs.
	text []byte
	// records and owner are set for dns:// inputs: the TXT records found at
	// owner.
	records [][]string
	owner   string
}

// maxInputSize bounds what we read: a TXT record cannot exceed 64 KiB, and a
// publisher config of many zones stays far below this.
const maxInputSize = 64 << 20

// readInput reads INPUT: a file path, "-" for stdin, or
// dns://SERVER[:PORT]/NAME.
func (e *env) readInput(arg string) (*input, error) {
	switch {
	case arg == "-":
		b, err := io.ReadAll(io.LimitReader(e.stdin, maxInputSize+1))
		if err != nil {
			return nil, usageErr("reading stdin: %v", err)
		}
		if len(b) > maxInputSize {
			return nil, usageErr("stdin: input larger than %d bytes", maxInputSize)
		}
		return &input{name: "<stdin>", text: b}, nil
	case strings.HasPrefix(arg, "dns://"):
		return lookupInput(arg)
	}
	f, err := os.Open(arg)
	if err != nil {
		return nil, usageErr("%v", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxInputSize+1))
	if err != nil {
		return nil, usageErr("reading %s: %v", arg, err)
	}
	if len(b) > maxInputSize {
		return nil, usageErr("%s: input larger than %d bytes", arg, maxInputSize)
	}
	return &input{name: arg, text: b}, nil
}

// lookupInput fetches the TXT records of a dns:// input. It is replaced
// when the resolver's lookup code is linked in (lookup.go).
var lookupInput = func(arg string) (*input, error) {
	return nil, usageErr("%s: dns:// inputs are not supported in this build", arg)
}
