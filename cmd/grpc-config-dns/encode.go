package main

import (
	"fmt"

	"github.com/spf13/cobra"

	sc "github.com/grpc-config-dns/grpc-config-dns/serviceconfig"
)

func encodeCmd(e *env) *cobra.Command {
	nineDigits, omitNulls := true, true
	cmd := &cobra.Command{
		Use:   "encode [--nine-digit-durations=false] [--omit-nulls=false] INPUT",
		Short: "Print the TXT RDATA that publishes a config, as quoted strings of at most 255 bytes",
		Long: `Validate INPUT (a choice list, a service config, or a TXT record) and print
the TXT record that publishes it: "grpc_config=" and the compact JSON, cut
into quoted strings of at most 255 bytes, ready for a zone file:

  _grpc_config.echo 300 IN TXT <output>

A bare service config is published as one choice that matches every client.
The record is the one serve publishes for the same choices: compact JSON,
dynamic parameter constraints in camelCase, and every duration with a
fraction written with 9 digits ("0.1s" becomes "0.100000000s", which grpc-js
would otherwise read as 1 ns; --nine-digit-durations=false keeps them as
written, like the publisher's compat: {nineDigitDurations: false}), and
without the members whose value is null, which proto3 JSON reads as absent
but grpc-java and grpc-js reject (--omit-nulls=false keeps them, like
compat: {omitNulls: false}).
The record's size (strings, RDATA, and the DNS answer for a typical owner
name) and any warning (such as an answer too large for UDP) go to stderr.

Exit status: 0 encoded; 1 the input is invalid; 2 usage or I/O error.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return e.encode(args[0], nineDigits, omitNulls)
		},
	}
	cmd.Flags().BoolVar(&nineDigits, "nine-digit-durations", true, "write every duration with a fraction with 9 digits, as serve does by default")
	cmd.Flags().BoolVar(&omitNulls, "omit-nulls", true, "leave out the members whose value is null, as serve does by default")
	return cmd
}

func (e *env) encode(arg string, nineDigits, omitNulls bool) error {
	in, err := e.readInput(arg)
	if err != nil {
		return err
	}
	name := displayName(arg)
	var ds sc.Diagnostics
	var value []byte
	switch {
	case in.tooLarge != nil:
		ds = in.tooLarge
	case in.text == nil:
		ds = sc.LintRecords(in.records, sc.LintOptions{Owner: in.owner})
		if !ds.HasErrors() {
			v, _ := sc.DecodeTXT(in.records)
			ch, _ := sc.ParseChoices(v)
			value = ch.Compact()
		}
	default:
		var kind sc.Kind
		kind, ds = sc.Lint(in.text, sc.LintOptions{})
		if kind == sc.KindPublisher {
			return usageErr("%s is a publisher config: use `grpc-config-dns zone --config %s` to print its records", name, arg)
		}
		if !ds.HasErrors() {
			value, _ = sc.CompactValue(in.text)
		}
	}
	for _, d := range ds {
		if d.Code == "duration-fraction" && nineDigits || d.Code == "null-value" && omitNulls {
			continue // rewritten below, as the publisher does
		}
		if sc.IsSizeCode(d.Code) && !ds.HasErrors() {
			continue // sized below, on the record as printed
		}
		fmt.Fprintln(e.stderr, formatDiagnostic(name, lintDiagnostic{d.Severity.String(), d.Code, d.Message, d.Path, d.Line, d.Column}))
	}
	if ds.HasErrors() {
		return &exitError{code: exitInvalid, err: fmt.Errorf("%s is invalid: nothing encoded", name)}
	}
	if nineDigits {
		v, err := sc.NineDigitDurations(value)
		if err != nil {
			// Lint applies every rule NineDigitDurations does.
			return &exitError{code: exitInvalid, err: fmt.Errorf("%s: %v", name, err)}
		}
		value = v
	}
	if omitNulls {
		v, err := sc.OmitNulls(value)
		if err != nil {
			// Lint applies every rule OmitNulls does.
			return &exitError{code: exitInvalid, err: fmt.Errorf("%s: %v", name, err)}
		}
		value = v
	}
	for _, d := range sc.SizeDiagnostics(in.owner, value) {
		fmt.Fprintln(e.stderr, formatDiagnostic(name, lintDiagnostic{d.Severity.String(), d.Code, d.Message, "", 0, 0}))
		if d.Severity == sc.Error {
			return &exitError{code: exitInvalid, err: fmt.Errorf("%s is invalid: nothing encoded", name)}
		}
	}
	strs := sc.EncodeTXT(value)
	fmt.Fprintln(e.stdout, sc.FormatTXT(strs))
	owner := in.owner
	if owner == "" {
		owner = "_grpc_config.service.example.com."
	}
	fmt.Fprintf(e.stderr, "%s: %d string(s), RDATA %d bytes; the answer at %s is %d bytes, %d with EDNS\n",
		name, len(strs), sc.RDataLen(strs), owner, sc.ResponseSize(owner, strs, false), sc.ResponseSize(owner, strs, true))
	return nil
}
