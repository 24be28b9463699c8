package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/grpc-config-dns/grpc-config-dns/store"
)

func init() {
	extraCommands = append(extraCommands, historyCmd, rollbackCmd)
}

// historyPath is the path of the history of ZONE [SERVICE | policy/NAME].
func historyPath(args []string) string {
	name := ""
	if len(args) == 2 {
		name = args[1]
	}
	return objectPath(args[0], name) + "/history"
}

func historyCmd(e *env) *cobra.Command {
	var cf clientFlags
	var limit int
	cmd := &cobra.Command{
		Use:   "history ZONE [SERVICE | policy/NAME] --server URL [--limit N]",
		Short: "List the versions of a zone, a service or a policy, and what each changed",
		Long: `List the versions of an object the store still holds (the last --history
revisions of serve --store, 10 000 by default), newest first: each
version's resourceVersion, when it was written (UTC; "-" for versions
written by a release that did not record it) and the fields it changed.
rollback returns to one of them.`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := cf.client(e)
			if err != nil {
				return err
			}
			path := historyPath(args)
			if limit > 0 {
				path += fmt.Sprintf("?limit=%d", limit)
			}
			var h store.History
			if err := c.request(context.Background(), "GET", path, nil, &h); err != nil {
				return c.fail(strings.Join(args, "/"), err)
			}
			if !c.out.human() {
				return c.print(&h, h.Items)
			}
			tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "REVISION\tWRITTEN\tCHANGE")
			for i, o := range h.Items {
				change := "created"
				switch {
				case i+1 < len(h.Items):
					change = changedFields(h.Items[i+1], o)
				case h.Truncated || limit > 0 && len(h.Items) == limit:
					change = "(older versions not shown)"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\n", o.Metadata.ResourceVersion, orDash(o.Metadata.Annotations[store.WrittenAt]), change)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().IntVar(&limit, "limit", 0, "at most this many versions, newest first")
	cf.add(cmd, true)
	return cmd
}

// changedFields names what version b changed of version a: the labels,
// the annotations (but when each was written), and the top-level fields
// of the spec, added, changed or removed.
func changedFields(a, b *store.Object) string {
	var out []string
	if !maps.Equal(a.Metadata.Labels, b.Metadata.Labels) {
		out = append(out, "metadata.labels")
	}
	if !maps.Equal(storedAnnotations(a), storedAnnotations(b)) {
		out = append(out, "metadata.annotations")
	}
	var x, y map[string]any
	json.Unmarshal(a.Spec, &x)
	json.Unmarshal(b.Spec, &y)
	keys := slices.Sorted(maps.Keys(x))
	for k := range y {
		if _, ok := x[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		va, ina := x[k]
		vb, inb := y[k]
		switch {
		case !ina:
			out = append(out, "+spec."+k)
		case !inb:
			out = append(out, "-spec."+k)
		case !reflect.DeepEqual(va, vb):
			out = append(out, "spec."+k)
		}
	}
	if len(out) == 0 {
		return "nothing (written again as it was)"
	}
	return strings.Join(out, ", ")
}

func rollbackCmd(e *env) *cobra.Command {
	var cf clientFlags
	var to, dry string
	cmd := &cobra.Command{
		Use:   "rollback ZONE [SERVICE | policy/NAME] --to-revision RV --server URL [--dry-run=server|client]",
		Short: "Write an earlier version of an object again",
		Long: `Write the version RV of an object (history lists them) again: a new write
whose labels, annotations and spec are the old version's, validated as any
write is (a version the zone's policies now make invalid is refused),
conditional on the object being still at the version read (409 if it
changed meanwhile). DNS publishes it with a new serial.

Exit status: 0 rolled back; 1 refused; 2 usage or connection error.`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if to == "" {
				return usageErr("--to-revision RV is required (history lists the versions)")
			}
			c, err := cf.client(e)
			if err != nil {
				return err
			}
			if err := c.setDryRun(dry); err != nil {
				return err
			}
			what := strings.Join(args, "/")
			var h store.History
			if err := c.request(context.Background(), "GET", historyPath(args), nil, &h); err != nil {
				return c.fail(what, err)
			}
			var old *store.Object
			var have []string
			for _, o := range h.Items {
				have = append(have, o.Metadata.ResourceVersion)
				if o.Metadata.ResourceVersion == to {
					old = o
				}
			}
			switch {
			case old == nil:
				return &exitError{code: exitInvalid, err: fmt.Errorf("%s has no version %s in the store (its versions: %s%s)", what, to, strings.Join(have, ", "), map[bool]string{true: ", older ones compacted"}[h.Truncated])}
			case old == h.Items[0]:
				fmt.Fprintf(e.stdout, "%s is at version %s already: nothing to do\n", what, to)
				return nil
			}
			// The old version's content, on the condition that the object
			// is still at the version history read.
			next := &store.Object{Kind: old.Kind, Metadata: store.Metadata{Name: old.Metadata.Name, Zone: old.Metadata.Zone, Labels: old.Metadata.Labels,
				Annotations: storedAnnotations(old), ResourceVersion: h.Items[0].Metadata.ResourceVersion}, Spec: old.Spec}
			zone, name, err := objectPlace(what, next)
			if err != nil {
				return err
			}
			r := c.put(context.Background(), zone, name, next)
			if r.err != nil {
				return c.fail(r.what, r.err)
			}
			if c.out.human() {
				fmt.Fprintf(e.stdout, "%s rolled back to revision %s (version %s)%s\n", r.what, to, r.obj.Metadata.ResourceVersion, c.dryNote())
				return nil
			}
			return c.print(r.obj, []*store.Object{r.obj})
		},
	}
	cmd.Flags().StringVar(&to, "to-revision", "", "the version to return to (a resourceVersion history lists)")
	dryRunFlag(cmd, &dry)
	cf.add(cmd, true)
	return cmd
}

// storedAnnotations are the annotations of o, a history item, as stored:
// without when it was written (store.WrittenAt).
func storedAnnotations(o *store.Object) map[string]string {
	m := maps.Clone(o.Metadata.Annotations)
	delete(m, store.WrittenAt)
	if len(m) == 0 {
		return nil
	}
	return m
}
