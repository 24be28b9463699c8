package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strconv"
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
	// maxInputSize: it is invalid whatever it holds.
	tooLarge sc.Diagnostics
}

// maxInputSize bounds what we read: the largest publisher config the
// publisher reads (config.MaxConfigSize, 64 MiB; a test keeps them
// equal). Records are bounded further, by what DNS can carry
// (sc.MaxRecordText), once the input's kind is known.
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
			return tooLargeInput("<stdin>", -1), nil
		}
		return &input{name: "<stdin>", text: b}, nil
	case strings.HasPrefix(arg, "dns://"):
		return lookupInput(arg)
	case strings.HasPrefix(arg, "dnsconfig://"):
		// A channel target, as a user copies it from client code: the
		// record its resolver reads.
		return lookupTarget(arg)
	}
	if scheme, _, ok := strings.Cut(arg, "://"); ok && !strings.ContainsAny(scheme, "/.\\") {
		if _, err := os.Stat(arg); err != nil {
			return nil, usageErr("%s: INPUT is a file, - for stdin, dns://SERVER[:PORT]/NAME or dnsconfig://[NS_IP[:PORT]]/HOST[:PORT]; %s:// is none of them", arg, scheme)
		}
	}
	return readFile(arg)
}

// readFile reads a file input, refusing one beyond maxInputSize before
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
		if st.Size() > maxInputSize {
			return tooLargeInput(arg, st.Size()), nil
		}
		b = make([]byte, 0, st.Size()+1)
	}
	w := bytes.NewBuffer(b)
	if _, err := w.ReadFrom(io.LimitReader(f, maxInputSize+1)); err != nil {
		return nil, usageErr("reading %s: %v", arg, err)
	}
	if w.Len() > maxInputSize {
		return tooLargeInput(arg, -1), nil
	}
	return &input{name: arg, text: w.Bytes()}, nil
}

// tooLargeInput is an input beyond maxInputSize, of size bytes (-1:
// unknown, it was cut when reading).
func tooLargeInput(name string, size int64) *input {
	what := "more than"
	if size >= 0 {
		what = strconv.FormatInt(size, 10) + " bytes, more than"
	}
	return &input{name: name, tooLarge: sc.Diagnostics{{Severity: sc.Error, Code: "input-too-large", Offset: -1,
		Message: fmt.Sprintf("the input is %s %d bytes (64 MiB): no record can be that large (a DNS message holds %d bytes), and the publisher reads no larger config; split the config's zones across several publishers", what, maxInputSize, sc.MaxMessageSize)}}}
}

// lookupInput fetches the TXT records of a dns:// input. It is replaced
// when the resolver's lookup code is linked in (lookup.go).
var lookupInput = func(arg string) (*input, error) {
	return nil, usageErr("%s: dns:// inputs are not supported in this build", arg)
}
