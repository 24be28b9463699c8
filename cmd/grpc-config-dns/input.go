package main

import (
	"bytes"
	"io"
	"os"
	"strings"

	sc "github.com/grpc-config-dns/grpc-config-dns/serviceconfig"
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
	// tooLarge is set, and nothing else, for an input beyond
	// sc.MaxInputSize: it is invalid whatever it holds.
	tooLarge sc.Diagnostics
	// dnssec holds what DNSSEC validation found of a DNS input
	// (--trust-anchor): bogus (then nothing else is set), insecure or
	// expiring.
	dnssec sc.Diagnostics
}

// readInput reads INPUT: a file path, "-" for stdin, or
// dns://SERVER[:PORT]/NAME.
func (e *env) readInput(arg string) (*input, error) {
	switch {
	case arg == "-":
		b, err := io.ReadAll(io.LimitReader(e.stdin, sc.MaxInputSize+1))
		if err != nil {
			return nil, usageErr("reading stdin: %v", err)
		}
		if len(b) > sc.MaxInputSize {
			return tooLargeInput("<stdin>", -1), nil
		}
		return &input{name: "<stdin>", text: b}, nil
	case strings.HasPrefix(arg, "dns://"):
		return lookupInput(arg, e.trustAnchor)
	case strings.HasPrefix(arg, "dnsconfig://"):
		// A channel target, as a user copies it from client code: the
		// record its resolver reads.
		return lookupTarget(arg, e.trustAnchor)
	}
	if scheme, _, ok := strings.Cut(arg, "://"); ok && !strings.ContainsAny(scheme, "/.\\") {
		if _, err := os.Stat(arg); err != nil {
			return nil, usageErr("%s: INPUT is a file, - for stdin, dns://SERVER[:PORT]/NAME or dnsconfig://[NS_IP[:PORT]]/HOST[:PORT]; %s:// is none of them", arg, scheme)
		}
	}
	return readFile(arg)
}

// readFile reads a file input, refusing one beyond sc.MaxInputSize before
// reading it.
func readFile(arg string) (*input, error) {
	f, err := os.Open(arg)
	if err != nil {
		return nil, usageErr("%v", err)
	}
	defer f.Close()
	var b []byte
	if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
		// Refused before reading, and read into one buffer of its size.
		if st.Size() > sc.MaxInputSize {
			return tooLargeInput(arg, st.Size()), nil
		}
		b = make([]byte, 0, st.Size()+1)
	}
	w := bytes.NewBuffer(b)
	if _, err := w.ReadFrom(io.LimitReader(f, sc.MaxInputSize+1)); err != nil {
		return nil, usageErr("reading %s: %v", arg, err)
	}
	if w.Len() > sc.MaxInputSize {
		return tooLargeInput(arg, -1), nil
	}
	return &input{name: arg, text: w.Bytes()}, nil
}

// tooLargeInput is an input beyond sc.MaxInputSize, of size bytes (-1:
// unknown, it was cut when reading).
func tooLargeInput(name string, size int64) *input {
	return &input{name: name, tooLarge: sc.Diagnostics{sc.InputTooLarge(size)}}
}

// lookupInput fetches the TXT records of a dns:// input. It is replaced
// when the resolver's lookup code is linked in (lookup.go).
var lookupInput = func(arg, trustAnchor string) (*input, error) {
	return nil, usageErr("%s: dns:// inputs are not supported in this build", arg)
}
