package main

import (
	"fmt"

	"github.com/spf13/cobra"

	sc "github.com/grpc-config-dns/grpc-config-dns/serviceconfig"
)

func encodeCmd(e *env) *cobra.Command {
	opts := sc.DefaultPublishOptions() // as serve publishes a service without compat:
	cmd := &cobra.Command{
		Use:   "encode [--clients LIST] [--nine-digit-durations=false] [--omit-nulls=false] [--allow-misspelled-fields] INPUT",
		Short: "Print the TXT RDATA that publishes a config, as quoted strings of at most 255 bytes",
		Long: `Validate INPUT (a choice list, a service config, or a TXT record) and print
the TXT record that publishes it: "grpc_config=" and the compact JSON, cut
into quoted strings of at most 255 bytes, ready for a zone file:

  _grpc_config.echo 300 IN TXT <output>

A bare service config is published as one choice that matches every client.
encode decides as serve does, with the same defaults (a service's compat:):
dynamic parameter constraints are written in camelCase; every duration with
a fraction is written with 9 digits ("0.1s" becomes "0.100000000s", which
grpc-js would otherwise read as 1 ns; --nine-digit-durations=false keeps
them as written); members whose value is null, which proto3 JSON reads as
absent but grpc-java and grpc-js reject, are left out (--omit-nulls=false
keeps them); and a record that one of the declared clients (--clients
go,c-core,java,node,dnsconfig, all or none; default all, as compat.clients) would reject,
fail its channel on, or read differently from the spec is refused, with the
diagnostic that says which client does what: lint gives the same verdict
(docs/rules.md, "Clients"). --allow-grpc-go-failure, from before clients
could be declared, takes go out of them.
The record's size (strings, RDATA, and the DNS answer for a typical owner
name) and any warning (such as an answer too large for UDP) go to stderr.

Exit status: 0 encoded; 1 the input is invalid or refused; 2 usage or I/O
error.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return e.encode(args[0], opts)
		},
	}
	cmd.Flags().BoolVar(&opts.NineDigitDurations, "nine-digit-durations", opts.NineDigitDurations, "write every duration with a fraction with 9 digits, as serve does by default")
	cmd.Flags().BoolVar(&opts.OmitNulls, "omit-nulls", opts.OmitNulls, "leave out the members whose value is null, as serve does by default")
	cmd.Flags().BoolVar(&opts.AllowMisspelledFields, "allow-misspelled-fields", opts.AllowMisspelledFields, "encode a config with a field one typo away from one gRPC defines (clients drop it), as serve does with compat: {allowMisspelledFields: true}")
	clientsFlag(cmd, &opts.Clients)
	cmd.Flags().BoolVar(&opts.AllowGrpcGoFailure, "allow-grpc-go-failure", opts.AllowGrpcGoFailure, "take go out of the declared clients (--clients), as serve does with compat: {allowGrpcGoFailure: true}")
	return cmd
}

func (e *env) encode(arg string, opts sc.PublishOptions) error {
	in, err := e.readInput(arg)
	if err != nil {
		return err
	}
	name := displayName(arg)
	if in.tooLarge != nil {
		e.printDiagnostics(name, in.tooLarge)
		return &exitError{code: exitInvalid, err: fmt.Errorf("%s is invalid: nothing encoded", name)}
	}
	if in.text != nil && sc.DetectKind(in.text) == sc.KindPublisher {
		return usageErr("%s is a publisher config: use `grpc-config-dns zone --config %s` to print its records", name, arg)
	}
	opts.Owner = in.owner
	rec, ds := sc.Publish(sc.Source{Text: in.text, Records: in.records}, opts)
	for _, d := range ds {
		if d.Code == sc.CodeMisspelledField {
			d.Message += " (or pass --allow-misspelled-fields to encode it as written)"
		}
		fmt.Fprintln(e.stderr, formatDiagnostic(name, diagnosticOf(d)))
	}
	if rec == nil {
		return &exitError{code: exitInvalid, err: fmt.Errorf("%s is invalid or refused: nothing encoded", name)}
	}
	fmt.Fprintln(e.stdout, sc.FormatTXT(rec.TXT))
	owner := in.owner
	if owner == "" {
		owner = "_grpc_config.service.example.com."
	}
	fmt.Fprintf(e.stderr, "%s: %d string(s), RDATA %d bytes; the answer at %s is %d bytes, %d with EDNS\n",
		name, len(rec.TXT), sc.RDataLen(rec.TXT), owner, sc.ResponseSize(owner, rec.TXT, false), sc.ResponseSize(owner, rec.TXT, true))
	return nil
}
