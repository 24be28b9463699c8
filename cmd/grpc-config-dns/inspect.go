package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/grpc-config-dns/grpc-config-dns/model"
	"github.com/grpc-config-dns/grpc-config-dns/serviceconfig/policy"
	"github.com/grpc-config-dns/grpc-config-dns/store"
)

func init() { extraCommands = append(extraCommands, inspectCmd) }

func inspectCmd(e *env) *cobra.Command {
	var file, format string
	var cf clientFlags
	cmd := &cobra.Command{
		Use:   "inspect SERVICE (--config FILE | --server URL) [--format text|json]",
		Short: "Print a service's published config and which policy set each value",
		Long: `Print what SERVICE publishes, read from a publisher config (--config, as
serve reads it) or from a store through its admin API (--server, which
answers GET /v1/zones/{zone}/services/{name}/inspect): the policies that
apply to it in merge order (zone-wide, then by labels, then by name; the
service's own config last), and every value of the published config with
the layers that set it. The last one's value is the one published; earlier
ones were overridden. See docs/policies.md.

--format json prints one object for tools:
{"zone","service","labels","policies":[{"name","kind","target"}],
 "config":CHOICES,"fields":[{"path","value","origins":[{"policy","kind","path"}]}]}
where kind is Zone, ServiceByLabels, ServiceByName or Own.

Exit status: 0 printed; 1 the config is invalid, or the server refused;
2 usage, I/O or connection error (no such service).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			server := cmd.Flags().Changed("server")
			switch {
			case file != "" && server:
				return usageErr("give --config FILE or --server URL, not both")
			case file == "" && !server:
				return usageErr("inspect needs --config FILE (a publisher config) or --server URL (a store's admin API) that holds %s", args[0])
			}
			if format != "text" && format != "json" {
				return usageErr("--format must be text or json, not %q", format)
			}
			if server {
				c, err := cf.client(e)
				if err != nil {
					return err
				}
				return c.inspect(context.Background(), args[0], format)
			}
			return e.inspect(file, args[0], format)
		},
	}
	cmd.Flags().StringVar(&file, "config", "", "publisher config (YAML or JSON)")
	cmd.Flags().StringVar(&format, "format", "text", "output format: text or json")
	// -o, as the store's commands and kubectl name it.
	cmd.Flags().StringVarP(&format, "output", "o", "text", "output format: text or json (the same as --format)")
	cf.add(cmd, false)
	return cmd
}

// inspect asks the admin API: the zone is the longest of the store's
// zones that holds the service.
func (c *client) inspect(ctx context.Context, service, format string) error {
	fqdn := strings.ToLower(strings.TrimSuffix(strings.TrimSpace(service), ".")) + "."
	var zones store.List
	o := ""
	for {
		var page store.List
		path := "/v1/zones?limit=500"
		if o != "" {
			path += "&continue=" + url.QueryEscape(o)
		}
		if err := c.request(ctx, "GET", path, nil, &page); err != nil {
			return c.fail("list zones", err)
		}
		zones.Items = append(zones.Items, page.Items...)
		if o = page.Metadata.Continue; o == "" {
			break
		}
	}
	zone := ""
	for _, z := range zones.Items {
		origin := z.Metadata.Name + "."
		if z.Metadata.Name == "." {
			origin = "."
		}
		if (fqdn == origin || origin == "." || strings.HasSuffix(fqdn, "."+origin)) && len(z.Metadata.Name) > len(zone) {
			zone = z.Metadata.Name
		}
	}
	if zone == "" {
		return usageErr("no zone of %s holds %s: give the service's full name, like echo.example.test", c.base, fqdn)
	}
	rel, msg := model.ServiceName(zone, fqdn)
	if msg != "" {
		return usageErr("%s", msg)
	}
	var insp model.Inspection
	if err := c.request(ctx, "GET", objectPath(zone, rel)+"/inspect", nil, &insp); err != nil {
		return c.fail("inspect "+fqdn, err)
	}
	if format == "json" {
		enc := json.NewEncoder(c.e.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(&insp)
	}
	writeInspection(c.e.stdout, &insp)
	return nil
}

func (e *env) inspect(file, service, format string) error {
	in, err := readFile(file)
	if err != nil {
		return err
	}
	ds := in.tooLarge
	var cfg *model.Config
	if ds == nil {
		cfg, ds = model.Parse(in.text)
	}
	if cfg == nil {
		for _, d := range ds {
			fmt.Fprintln(e.stderr, formatDiagnostic(file, lintDiagnostic{d.Severity.String(), d.Code, d.Message, d.Path, d.Line, d.Column}))
		}
		return &exitError{code: exitInvalid, err: fmt.Errorf("%s is invalid: fix the errors above (grpc-config-dns lint %s lists them), then inspect again", file, file)}
	}
	z, s, err := cfg.FindService(service)
	if err != nil {
		return usageErr("%s: %v", file, err)
	}
	var spec []byte
	if len(z.PolicyNames(s)) > 0 { // what the service wrote itself, under its policies
		spec = model.ServiceSpecsOf(in.text, cfg, z.Origin, []*model.Service{s})[s.Name]
	}
	insp := z.Inspect(s, spec)
	if format == "json" {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(insp)
	}
	writeInspection(e.stdout, insp)
	return nil
}

// writeInspection prints an inspection for a person.
func writeInspection(w io.Writer, in *model.Inspection) {
	fmt.Fprintf(w, "service %s (zone %s)\n", in.Service, in.Zone)
	if len(in.Labels) > 0 {
		fmt.Fprintf(w, "labels: %s\n", formatLabels(in.Labels))
	}
	if len(in.Policies) == 0 {
		fmt.Fprintln(w, "policies: none apply")
	} else {
		fmt.Fprintln(w, "policies, in merge order (later ones win):")
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		for i, p := range in.Policies {
			fmt.Fprintf(tw, "  %d.\t%s\t%s\t%s\n", i+1, p.Name, p.Kind, p.Target)
		}
		tw.Flush()
	}
	if len(in.Fields) == 0 {
		fmt.Fprintln(w, "config: none published (the service has no choices or serviceConfig)")
		return
	}
	if in.Partial != "" {
		fmt.Fprintln(w, "origins unknown: "+in.Partial)
	}
	fmt.Fprintln(w, "published config, value by value, with who set it (the last one wins):")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, f := range in.Fields {
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", f.Path, f.Value, describeOrigins(f.Origins))
	}
	tw.Flush()
}

// describeOrigins says who set a value: the winner first, then whom it
// overrode.
func describeOrigins(os []policy.Origin) string {
	if len(os) == 0 {
		return "?"
	}
	name := func(o policy.Origin) string {
		if o.Kind == policy.Own {
			return "service"
		}
		return fmt.Sprintf("policy %s (%s)", o.Policy, o.Kind)
	}
	last := os[len(os)-1]
	s := name(last) + " " + last.Path
	if len(os) > 1 {
		var over []string
		for _, o := range os[:len(os)-1] {
			over = append(over, name(o))
		}
		s += "; over " + strings.Join(over, ", ")
	}
	return s
}

func formatLabels(l map[string]string) string {
	var parts []string
	for k, v := range l {
		parts = append(parts, k+"="+v)
	}
	slices.Sort(parts)
	return strings.Join(parts, ", ")
}
