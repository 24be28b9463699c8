package main

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strings"

	"github.com/spf13/cobra"

	sc "github.com/grpc-config-dns/grpc-config-dns/serviceconfig"
)

func selectCmd(e *env) *cobra.Command {
	var (
		language, hostname string
		bucket             int
		params             []string
		explain            bool
		clients            sc.Clients
	)
	cmd := &cobra.Command{
		Use:   "select [--language go] [--hostname H] [--bucket 1..100] [--param k=v]... [--explain [--clients LIST]] INPUT",
		Short: "Print the service config a client would choose",
		Long: `Select the choice a client would use, as gRFC A2 says: the first choice
whose every criterion matches. Print its serviceConfig as compact JSON on
stdout and nothing else. With --explain, say on stderr why each choice
matched or not, and which choices each of the declared clients (--clients,
default all) may pick as it reads the criteria, which differs from gRFC A2
(docs/rules.md, "Clients").

The client is described by --language (default go), --hostname (default
this machine's name), --bucket (its canary bucket, 1..100: a choice with
percentage p matches when bucket <= p; default drawn at random, as a client
does once per process) and --param key=value (dynamic parameters).

As a client does, select checks the structure of every choice but validates
only the chosen service config.

Exit status: 0 a config was chosen; 1 the input is invalid; 2 usage or I/O
error; 3 no choice matched, or there is no record (the client would use its
default config).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			client := sc.Client{Language: language, Hostname: hostname, Bucket: bucket}
			bucketNote := ""
			if !cmd.Flags().Changed("bucket") {
				client.Bucket = rand.IntN(100) + 1
				bucketNote = " (drawn at random; set --bucket to fix it)"
			} else if bucket < 1 || bucket > 100 {
				return usageErr("--bucket must be from 1 to 100, not %d", bucket)
			}
			if !cmd.Flags().Changed("hostname") {
				h, err := os.Hostname()
				if err != nil {
					return usageErr("cannot read this machine's hostname (%v): set --hostname", err)
				}
				client.Hostname = h
			}
			for _, p := range params {
				k, v, ok := strings.Cut(p, "=")
				if !ok || k == "" {
					return usageErr("--param wants key=value, not %q", p)
				}
				if client.Params == nil {
					client.Params = map[string]string{}
				}
				if _, dup := client.Params[k]; dup {
					return usageErr("--param %s is given twice", k)
				}
				client.Params[k] = v
			}
			if explain {
				fmt.Fprintf(e.stderr, "client: language %q, hostname %q, bucket %d%s%s\n",
					client.Language, client.Hostname, client.Bucket, bucketNote, formatParams(client.Params))
			}
			if cmd.Flags().Changed("clients") && !explain {
				return usageErr("--clients says whose reading --explain shows: add --explain")
			}
			if !cmd.Flags().Changed("clients") {
				clients = 0 // no per-client lines
			} else if clients == 0 {
				clients = sc.AllClients
			}
			return e.selectChoice(args[0], client, explain, clients)
		},
	}
	f := cmd.Flags()
	f.StringVar(&language, "language", "go", "client language, compared case-insensitively with clientLanguage")
	f.StringVar(&hostname, "hostname", "", "client hostname, compared exactly with clientHostname (default: this machine's)")
	f.IntVar(&bucket, "bucket", 0, "client canary bucket, 1..100 (default: random)")
	f.StringArrayVar(&params, "param", nil, "dynamic parameter key=value (repeatable)")
	f.BoolVar(&explain, "explain", false, "explain on stderr why each choice matched or not")
	clientsFlag(cmd, &clients)
	trustAnchorFlag(cmd, e)
	return cmd
}

func formatParams(p map[string]string) string {
	if len(p) == 0 {
		return ""
	}
	return ", parameters " + sc.FormatParams(p)
}

func (e *env) selectChoice(arg string, client sc.Client, explain bool, clients sc.Clients) error {
	in, err := e.readInput(arg)
	if err != nil {
		return err
	}
	name := displayName(arg)
	if in.tooLarge != nil {
		e.printDiagnostics(name, in.tooLarge)
		return &exitError{code: exitInvalid, err: fmt.Errorf("%s is invalid: a client would reject the record", name)}
	}
	if len(in.dnssec) > 0 {
		e.printDiagnostics(name, in.dnssec)
		if in.dnssec.HasErrors() {
			return &exitError{code: exitInvalid, err: fmt.Errorf("%s does not validate: a validating client would keep its last config, or use its default", name)}
		}
	}
	if in.text != nil && sc.DetectKind(in.text) == sc.KindPublisher {
		return usageErr("%s is a publisher config, which holds many records: select from one record, with dns://SERVER/NAME against `grpc-config-dns serve --config %s`, or with a file holding a service's choices", name, arg)
	}
	o := sc.Choose(sc.Answer{Owner: in.owner, Records: in.records, Text: in.text}, client)
	if explain && o.Choices != nil {
		for _, v := range o.Choices.Explain(client) {
			fmt.Fprintln(e.stderr, v)
		}
		if clients != 0 {
			for _, v := range o.Choices.ExplainClients(clients) {
				fmt.Fprintln(e.stderr, v)
			}
		}
	}
	switch {
	case o.Result == sc.NoConfig && o.Choices == nil:
		// gRFC A21: no record is no service config, not an invalid one.
		return &exitError{code: exitNoMatch, err: fmt.Errorf("%s: %s: a client would use its default service config", name, o.Reason)}
	case o.Result == sc.NoConfig:
		return &exitError{code: exitNoMatch, err: fmt.Errorf("no choice matches this client: it would use its default service config")}
	case o.Result == sc.Invalid:
		e.printDiagnostics(name, o.Diagnostics)
		what := name
		if o.Choice >= 0 {
			what = fmt.Sprintf("choice %d's service config", o.Choice)
			if sc.DetectKind(in.text) == sc.KindServiceConfig {
				what = "the service config"
			}
		}
		return &exitError{code: exitInvalid, err: fmt.Errorf("%s is invalid: a client would reject the record", what)}
	}
	fmt.Fprintln(e.stdout, string(o.ServiceConfig))
	return nil
}

func (e *env) printDiagnostics(name string, ds sc.Diagnostics) {
	for _, d := range ds {
		fmt.Fprintln(e.stderr, formatDiagnostic(name, diagnosticOf(d)))
	}
}
