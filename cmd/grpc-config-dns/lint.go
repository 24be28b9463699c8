package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	sc "github.com/grpc-config-dns/grpc-config-dns/serviceconfig"
	// The JSON Schema is the first layer of lint (serviceconfig.Lint).
	_ "github.com/grpc-config-dns/grpc-config-dns/serviceconfig/schema"
)

func lintCmd(e *env) *cobra.Command {
	var format string
	var strict bool
	var opts sc.LintOptions
	cmd := &cobra.Command{
		Use:   "lint [--format text|json] [--strict] [--clients LIST] INPUT...",
		Short: "Check TXT records, choice lists, service configs and publisher configs",
		Long: `Check each INPUT and report every problem, like a compiler.

INPUT is a file, - for stdin, dns://SERVER[:PORT]/NAME (the TXT record at
_grpc_config.NAME, asked of SERVER), or a channel's target
dnsconfig://[NS_IP[:PORT]]/HOST[:PORT] (the record our resolver reads for it,
found its way: without NS_IP through /etc/hosts and the search list and ndots
of /etc/resolv.conf, under the name the addresses are found at). Its kind is
detected: a TXT record
(grpc_config=[...], or quoted strings as dig prints them), a JSON list of
choices, one service config object, or a publisher config (YAML or JSON with
zones:).

Each problem is printed as FILE:LINE:COL: severity: message (at POINTER) [code];
--format json prints one object listing every input, unreadable ones
included (code input-unreadable), and gives each diagnostic that concerns
some clients and not others a "clients" object saying what each does.

lint's verdict is the publisher's (docs/rules.md, "Clients"): a record that
one of the declared clients (--clients go,c-core,java,node,dnsconfig, all or none; default
all) would reject, fail its channel on, or read differently from the spec
is an error, and so is a field one typo away from a known one (unless
--allow-misspelled-fields), as serve, encode and the admin API refuse it. A
record to publish is judged as the publisher publishes it (durations with
nine digits, nulls left out); a record looked up (dns://, dnsconfig://) as
it is served. A publisher config declares its clients itself
(compat.clients), and --clients does not apply to it.

Exit status: 0 all valid; 1 an input has an error (or, with --strict, a
warning); 2 usage or I/O error.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if format != "text" && format != "json" {
				return usageErr("--format must be text or json, not %q", format)
			}
			return e.lint(args, format, strict, opts)
		},
	}
	cmd.Flags().StringVar(&format, "format", "text", "output format: text or json")
	// -o, as the store's commands and kubectl name it.
	cmd.Flags().StringVarP(&format, "output", "o", "text", "output format: text or json (the same as --format)")
	cmd.Flags().BoolVar(&strict, "strict", false, "treat warnings as errors")
	clientsFlag(cmd, &opts.Clients)
	cmd.Flags().BoolVar(&opts.AllowMisspelledFields, "allow-misspelled-fields", false, "accept a field one typo away from one gRPC defines, as serve does with compat: {allowMisspelledFields: true}")
	// encode's and compat's other settings, so that lint judges a record
	// as it would be published with them.
	nine := cmd.Flags().Bool("nine-digit-durations", true, "judge the record as published with durations rewritten to nine fraction digits, as serve does by default")
	omit := cmd.Flags().Bool("omit-nulls", true, "judge the record as published with null members left out, as serve does by default")
	noGo := cmd.Flags().Bool("allow-grpc-go-failure", false, "take go out of the declared clients, as compat: {allowGrpcGoFailure: true}")
	cmd.PreRunE = func(*cobra.Command, []string) error {
		opts.DurationsAsWritten, opts.NullsKept = !*nine, !*omit
		if *noGo {
			c := opts.Clients
			if c == 0 {
				c = sc.AllClients
			}
			if c &^= sc.ClientGo; c == 0 {
				c, _ = sc.ParseClients("none")
			}
			opts.Clients = c
		}
		return nil
	}
	trustAnchorFlag(cmd, e)
	return cmd
}

// lintReport is the JSON output of lint (the public contract: docs/architecture.md).
type lintReport struct {
	Inputs []lintInput `json:"inputs"`
}

type lintInput struct {
	Input       string               `json:"input"`
	Valid       bool                 `json:"valid"`
	Diagnostics []lintJSONDiagnostic `json:"diagnostics"`
}

// lintJSONDiagnostic is a diagnostic in lint's JSON report: with what each
// client does, when that differs between them.
type lintJSONDiagnostic struct {
	lintDiagnostic
	Clients map[string]string `json:"clients,omitempty"`
}

type lintDiagnostic struct {
	Severity string `json:"severity"`
	Code     string `json:"code"`
	Message  string `json:"message"`
	Path     string `json:"path"`
	Line     int    `json:"line"`
	Column   int    `json:"column"`
}

func (e *env) lint(args []string, format string, strict bool, opts sc.LintOptions) error {
	if n := countStdin(args); n > 1 {
		return usageErr("- (stdin) is given %d times: it can be read only once", n)
	}
	report := lintReport{Inputs: []lintInput{}}
	code := exitOK
	for _, arg := range args {
		in, kind, err := e.lintEntry(arg, strict, opts)
		if err != nil {
			var ee *exitError
			if !errors.As(err, &ee) || ee.code != exitUsage {
				return err
			}
			fmt.Fprintf(e.stderr, "grpc-config-dns: %v\n", ee.err)
			code = exitUsage
			// The JSON report lists every input, so a script can tell
			// which one could not be read.
			report.Inputs = append(report.Inputs, lintInput{Input: displayName(arg), Valid: false,
				Diagnostics: []lintJSONDiagnostic{{lintDiagnostic: lintDiagnostic{Severity: sc.Error.String(), Code: "input-unreadable", Message: ee.err.Error()}}}})
			continue
		}
		if !in.Valid && code == exitOK {
			code = exitInvalid
		}
		report.Inputs = append(report.Inputs, in)
		if format == "text" {
			e.printLintText(in, kind)
		}
	}
	if format == "json" {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(report); err != nil {
			return usageErr("writing output: %v", err)
		}
	}
	if code != exitOK {
		return &exitError{code: code}
	}
	return nil
}

// lintEntry lints input arg and returns its entry in the report, and the
// kind of value it holds. With strict (--strict) a warning makes the
// input invalid: that changes the verdict and the exit status, not what
// each diagnostic is.
func (e *env) lintEntry(arg string, strict bool, opts sc.LintOptions) (lintInput, sc.Kind, error) {
	ds, kind, err := e.lintOne(arg, opts)
	if err != nil {
		return lintInput{}, kind, err
	}
	in := lintInput{Input: displayName(arg), Valid: !ds.HasErrors() && !(strict && len(ds) > 0), Diagnostics: []lintJSONDiagnostic{}}
	for i := range ds {
		d := &ds[i]
		in.Diagnostics = append(in.Diagnostics, lintJSONDiagnostic{diagnosticOf(*d), sc.ClientEffects(d)})
	}
	return in, kind, nil
}

// diagnosticOf is d as the CLI prints it.
func diagnosticOf(d sc.Diagnostic) lintDiagnostic {
	return lintDiagnostic{d.Severity.String(), d.Code, d.Message, d.Path, d.Line, d.Column}
}

// clientsValue is the value of a --clients flag.
type clientsValue struct{ c *sc.Clients }

func (v clientsValue) String() string {
	if v.c == nil || *v.c == 0 {
		return "all"
	}
	return strings.Join(sc.ClientIDs(*v.c), ",")
}

func (v clientsValue) Set(s string) error {
	c, err := sc.ParseClients(s)
	if err != nil {
		return err
	}
	*v.c = c
	return nil
}

func (clientsValue) Type() string { return "LIST" }

// clientsFlag adds --clients, the clients declared to read the records
// (docs/rules.md, "Clients").
func clientsFlag(cmd *cobra.Command, c *sc.Clients) {
	cmd.Flags().Var(clientsValue{c}, "clients", "the gRPC clients that read the records, comma-separated from go, c-core, java, node, dnsconfig (our resolver), all, or none: a record one of them would reject, fail its channel on, or misread is an error")
}

// printLintText prints the diagnostics of the input in, compiler-style,
// or that it is a valid value of kind.
func (e *env) printLintText(in lintInput, kind sc.Kind) {
	for _, d := range in.Diagnostics {
		fmt.Fprintln(e.stdout, formatDiagnostic(in.Input, d.lintDiagnostic))
	}
	if len(in.Diagnostics) == 0 {
		what := kind.String()
		if kind == sc.KindUnknown {
			what = "store objects" // the only unknown kind that is valid
		}
		fmt.Fprintf(e.stderr, "%s: ok (%s)\n", in.Input, what)
	}
}

func displayName(arg string) string {
	if arg == "-" {
		return "<stdin>"
	}
	return arg
}

// formatDiagnostic writes a diagnostic compiler-style (the public contract: docs/architecture.md):
// FILE:LINE:COL: severity: message (at JSON pointer) [code]. Inputs read
// from DNS have no lines: their diagnostics are NAME: severity: ….
func formatDiagnostic(name string, d lintDiagnostic) string {
	loc := name
	if d.Line > 0 {
		loc = fmt.Sprintf("%s:%d:%d", name, d.Line, d.Column)
	}
	msg := d.Message
	if d.Path != "" {
		msg += " (at " + d.Path + ")"
	}
	return fmt.Sprintf("%s: %s: %s [%s]", loc, d.Severity, msg, d.Code)
}

func countStdin(args []string) int {
	n := 0
	for _, a := range args {
		if a == "-" {
			n++
		}
	}
	return n
}

// lintOne reads and checks one INPUT.
func (e *env) lintOne(arg string, opts sc.LintOptions) (sc.Diagnostics, sc.Kind, error) {
	in, err := e.readInput(arg)
	if err != nil {
		return nil, sc.KindUnknown, err
	}
	if in.tooLarge != nil {
		return in.tooLarge, sc.KindUnknown, nil
	}
	if in.dnssec.HasErrors() {
		return in.dnssec, sc.KindTXT, nil
	}
	if in.text == nil {
		// A record looked up: judged as clients get it.
		opts.Owner, opts.AsServed = in.owner, true
		return append(in.dnssec, sc.LintRecords(in.records, opts)...), sc.KindTXT, nil
	}
	if k := sc.DetectKind(in.text); k != sc.KindPublisher && k != sc.KindTXT {
		// A file of store objects, as publish and apply take (a JSON list
		// of them looks like a choice list at first).
		if objDs, ok := lintObjects(arg, in.text); ok {
			return objDs, sc.KindUnknown, nil
		}
	}
	kind, ds := sc.Lint(in.text, opts)
	if kind == sc.KindPublisher {
		ds, err = lintPublisher(in.name, in.text)
		if err != nil {
			return nil, kind, err
		}
	}
	return ds, kind, nil
}

// lintPublisher checks a publisher config; replaced when the publisher is
// linked in (publisher.go).
var lintPublisher = func(name string, text []byte) (sc.Diagnostics, error) {
	return nil, usageErr("%s: publisher configs are not supported in this build", name)
}
