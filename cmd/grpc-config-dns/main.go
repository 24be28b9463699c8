// Command grpc-config-dns publishes and checks gRPC service configs in DNS
// (gRFC A2): lint, select and encode records, serve them from an
// authoritative DNS server, and print zone files.
//
// Exit codes: 0 fine; 1 the input is invalid; 2 usage or I/O error;
// 3 (select only) no choice matched.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
)

// Exit codes are part of the public contract (docs/architecture.md, "Semantics and the public contract").
const (
	exitOK      = 0
	exitInvalid = 1
	exitUsage   = 2
	exitNoMatch = 3
)

// exitError carries an exit code out of a command. A nil err means the
// command already printed what the user needs.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit %d", e.code)
	}
	return e.err.Error()
}

func usageErr(format string, args ...any) error {
	return &exitError{code: exitUsage, err: fmt.Errorf(format, args...)}
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// env is what a command reads and writes, so that tests run the CLI's own
// code path in-process.
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	// trustAnchor is the trust anchor file of lint and select
	// (--trust-anchor): dns:// and dnsconfig:// inputs are validated with
	// DNSSEC from it.
	trustAnchor string
}

// run executes the CLI with args and returns the exit code.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	e := &env{stdin: stdin, stdout: stdout, stderr: stderr}
	root := &cobra.Command{
		Use:           "grpc-config-dns",
		Short:         "Publish and check gRPC service configs in DNS (gRFC A2)",
		SilenceUsage:  true,
		SilenceErrors: true,
		// An unknown command says which one was probably meant (cobra's
		// own suggestions are off once Args is set).
		Args: func(c *cobra.Command, args []string) error {
			if len(args) == 0 {
				return nil
			}
			msg := fmt.Sprintf("unknown command %q for %q", args[0], c.CommandPath())
			if s := c.SuggestionsFor(args[0]); len(s) > 0 {
				msg += "; did you mean " + strings.Join(s, " or ") + "?"
			}
			return errors.New(msg)
		},
		RunE: func(c *cobra.Command, _ []string) error {
			c.SetOut(stderr)
			c.Usage()
			var names []string
			for _, sub := range c.Commands() {
				if sub.IsAvailableCommand() && sub.Name() != "help" && sub.Name() != "completion" {
					names = append(names, sub.Name())
				}
			}
			return usageErr("no command given: use one of %s", strings.Join(names, ", "))
		},
	}
	root.SuggestionsMinimumDistance = 2
	root.Version = readBuildVersion().String()
	root.SetVersionTemplate("{{.Version}}\n")
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetArgs(args)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		if c == root && len(args) > 0 && !strings.HasPrefix(args[0], "-") {
			// A misspelt command with its flags ("aply -f x"): the
			// command is what is wrong.
			msg := fmt.Sprintf("unknown command %q for %q", args[0], c.CommandPath())
			if s := c.SuggestionsFor(args[0]); len(s) > 0 {
				msg += "; did you mean " + strings.Join(s, " or ") + "?"
			}
			return usageErr("%s\nRun '%s --help' for usage.", msg, c.CommandPath())
		}
		return usageErr("%v\nRun '%s --help' for usage.", err, c.CommandPath())
	})
	root.AddCommand(lintCmd(e), selectCmd(e), encodeCmd(e))
	for _, extra := range extraCommands {
		root.AddCommand(extra(e))
	}
	addCompletions(root, e)
	err := root.Execute()
	if err == nil {
		return exitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil {
			fmt.Fprintf(stderr, "grpc-config-dns: %v\n", ee.err)
		}
		return ee.code
	}
	// Cobra's own errors (unknown command, wrong number of arguments).
	fmt.Fprintf(stderr, "grpc-config-dns: %v\nRun 'grpc-config-dns --help' for usage.\n", err)
	return exitUsage
}

// extraCommands lets other files of this package add commands (serve, zone).
var extraCommands []func(*env) *cobra.Command
