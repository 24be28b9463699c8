package main

import (
	"context"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/grpc-config-dns/grpc-config-dns/store"
)

// Shell completion (issue 31). Cobra's completion command writes the
// scripts (bash, zsh, fish, powershell), which ask the binary itself
// (grpc-config-dns __complete ARGS...) what may come next: commands and
// flags by themselves, and, with what addCompletions adds, the values of
// flags that take one of a few, the fields of explain, and the names of
// zones, services and policies, asked of the admin API.

// completionTimeout bounds what a completion asks of the admin API: the
// shell waits for it, and a slow or absent server must not hang it.
const completionTimeout = 2 * time.Second

// maxNameCompletions bounds the names offered: more are no help at a
// prompt, and a zone may hold 100 000 services.
const maxNameCompletions = 1000

// completionPage is the page size of the lists completion asks for.
const completionPage = 1000

// flagValues are the flags that take one of a few values, by the path of
// their command (its names below the root) and the flag's name.
var flagValues = []struct {
	command, flag string
	values        []cobra.Completion
}{
	{"lint", "format", []cobra.Completion{"text\tone line a diagnostic, as compilers print them", "json\tone report for tools"}},
	{"inspect", "format", []cobra.Completion{"text\tfor a person", "json\tone object for tools"}},
	{"select", "language", []cobra.Completion{
		"go\tgrpc-go", "java\tgrpc-java", "node\tgrpc-js",
		"c++\tC-core: C++, Python, Ruby, PHP, C#, Objective-C"}},
	{"serve", "log-format", []cobra.Completion{"text\tkey=value", "json\tone object a line"}},
	{"serve", "log-level", []cobra.Completion{"debug", "info", "warn", "error"}},
	{"dnssec import", "role", []cobra.Completion{
		"csk\tcombined signing key (flags 257)", "ksk\tkey-signing key (flags 257)", "zsk\tzone-signing key (flags 256)"}},
	{"list", "match", []cobra.Completion{
		"Exact\texactly --resource-version", "NotOlderThan\tat least --resource-version"}},
}

// outputValues are those -o (--output) may take, on every command that
// has it, each with a value that tries it: only those the client accepts
// (clientFlags.client) are offered. jsonpath= is completed without a
// space after it, for the template to follow.
var outputValues = []struct {
	value cobra.Completion
	probe string
}{
	{"table\tcolumns for a person", "table"},
	{"wide\tmore columns", "wide"},
	{"json", "json"},
	{"yaml", "yaml"},
	{"name\tkind/name, one a line", "name"},
	{"jsonpath=\ta JSONPath template, as kubectl's", "jsonpath={.metadata.name}"},
}

// dryRunValues are those of --dry-run, on every command that has it.
var dryRunValues = []cobra.Completion{
	"none\twrite", "server\tthe admin API checks the write and stores nothing", "client\tnothing is sent"}

// nameArgs are the commands whose arguments are a zone and, when they
// take two, one of its services or policy/NAME: maxArgs says how many.
var nameArgs = []struct {
	command string
	maxArgs int
}{
	{"get", 2}, {"delete", 2}, {"list", 1}, {"watch", 1}, {"history", 2}, {"rollback", 2},
}

// addCompletions teaches the commands of root what completes their flag
// values and arguments. A command or flag it names that root lacks is
// skipped, and one that completes already is left as it is.
//
// Cobra keeps flag completions in a map of its own for the life of the
// process, so they are registered only when a completion is asked for
// (the __complete command runs root's PersistentPreRun): run, called
// many times in one test process, then leaves nothing behind.
func addCompletions(root *cobra.Command, e *env) {
	for _, n := range nameArgs {
		if c := subcommand(root, n.command); c != nil && c.ValidArgsFunction == nil {
			c.ValidArgsFunction = completeNames(e, n.maxArgs)
		}
	}
	prev, prevE := root.PersistentPreRun, root.PersistentPreRunE
	root.PersistentPreRun = nil
	root.PersistentPreRunE = func(cmd *cobra.Command, args []string) error {
		if cmd.Name() == cobra.ShellCompRequestCmd {
			addFlagValues(root, e)
		}
		switch {
		case prevE != nil:
			return prevE(cmd, args)
		case prev != nil:
			prev(cmd, args)
		}
		return nil
	}
}

// addFlagValues registers the completions of flagValues, outputValues
// and dryRunValues.
func addFlagValues(root *cobra.Command, e *env) {
	for _, v := range flagValues {
		if c := subcommand(root, v.command); c != nil {
			completeFlag(c, v.flag, v.values)
			if v.flag == "format" && c.Flags().Lookup("output") != nil {
				// -o is --format there (lint, inspect).
				completeFlag(c, "output", v.values)
			}
		}
	}
	var outputs []cobra.Completion
	for _, v := range outputValues {
		cf := clientFlags{server: "http://" + DefaultAdmin, output: v.probe}
		if _, err := cf.client(e); err == nil {
			outputs = append(outputs, v.value)
		}
	}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Flags().Lookup("output") != nil && c.Flags().Lookup("format") == nil {
			completeFlag(c, "output", outputs)
		}
		if c.Flags().Lookup("dry-run") != nil {
			completeFlag(c, "dry-run", dryRunValues)
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// subcommand is the command at path (names separated by spaces) below
// root, or nil.
func subcommand(root *cobra.Command, path string) *cobra.Command {
	c := root
	for _, name := range strings.Fields(path) {
		var next *cobra.Command
		for _, sub := range c.Commands() {
			if sub.Name() == name {
				next = sub
			}
		}
		if next == nil {
			return nil
		}
		c = next
	}
	return c
}

// completeFlag makes flag of c complete to values, unless c lacks it or
// it completes already.
func completeFlag(c *cobra.Command, flag string, values []cobra.Completion) {
	if c.Flag(flag) == nil {
		return
	}
	if _, ok := c.GetFlagCompletionFunc(flag); ok {
		return
	}
	c.RegisterFlagCompletionFunc(flag, func(_ *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		out := withPrefix(values, toComplete)
		if len(out) == 1 && strings.HasSuffix(strings.SplitN(out[0], "\t", 2)[0], "=") {
			// The value goes on after the =.
			return out, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	})
}

// withPrefix are the completions of values that start with prefix.
func withPrefix(values []cobra.Completion, prefix string) []cobra.Completion {
	var out []cobra.Completion
	for _, v := range values {
		name, _, _ := strings.Cut(v, "\t")
		if strings.HasPrefix(name, prefix) {
			out = append(out, v)
		}
	}
	return out
}

// completeNames completes the arguments ZONE [SERVICE | policy/NAME] (or
// ZONE alone, when maxArgs is 1) from the admin API that the command's
// --server, --token, --token-file and --cacert (or their environment
// variables) name, as the command itself would reach it. It offers
// nothing when the server cannot be asked or does not answer in time.
func completeNames(e *env, maxArgs int) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		const directive = cobra.ShellCompDirectiveNoFileComp
		if len(args) >= maxArgs {
			return nil, directive
		}
		c, err := completionClient(cmd, e)
		if err != nil {
			return nil, directive
		}
		ctx, cancel := context.WithTimeout(context.Background(), completionTimeout)
		defer cancel()
		if len(args) == 0 {
			zones, err := c.completionNames(ctx, "/v1/zones", "", "zone", toComplete)
			if err != nil {
				return nil, directive
			}
			return zones, directive
		}
		zone := objectPath(args[0], "")
		var out []cobra.Completion
		if !strings.HasPrefix(toComplete, policyArg) {
			svcs, err := c.completionNames(ctx, zone+"/services", "", "service", toComplete)
			if err != nil {
				return nil, directive
			}
			out = svcs
		}
		if strings.HasPrefix(policyArg, toComplete) || strings.HasPrefix(toComplete, policyArg) {
			ps, err := c.completionNames(ctx, zone+"/policies", policyArg, "policy", toComplete)
			if err != nil {
				return nil, directive
			}
			out = append(out, ps...)
		}
		return out, directive
	}
}

// completionClient is the client cmd would make from its flags.
func completionClient(cmd *cobra.Command, e *env) (*client, error) {
	var cf clientFlags
	for name, v := range map[string]*string{"server": &cf.server, "token": &cf.token, "token-file": &cf.tokenFile, "cacert": &cf.cacert} {
		if f := cmd.Flags().Lookup(name); f != nil {
			*v = f.Value.String()
		}
	}
	return cf.client(e)
}

// completionNames lists the collection at path, page by page, and
// returns the names (after prefix) that start with toComplete, each
// described as what, up to maxNameCompletions.
func (c *client) completionNames(ctx context.Context, path, prefix, what, toComplete string) ([]cobra.Completion, error) {
	var out []cobra.Completion
	next := ""
	for {
		q := url.Values{"limit": {strconv.Itoa(completionPage)}}
		if next != "" {
			q.Set("continue", next)
		}
		var l store.List
		if err := c.request(ctx, "GET", path+"?"+q.Encode(), nil, &l); err != nil {
			return nil, err
		}
		for _, o := range l.Items {
			if name := prefix + o.Metadata.Name; strings.HasPrefix(name, toComplete) {
				out = append(out, cobra.CompletionWithDesc(name, what))
			}
		}
		next = l.Metadata.Continue
		if len(out) >= maxNameCompletions {
			return out[:maxNameCompletions], nil
		}
		if next == "" {
			return out, nil
		}
	}
}
