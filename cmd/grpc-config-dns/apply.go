package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/grpc-config-dns/grpc-config-dns/store"
)

func init() {
	extraCommands = append(extraCommands, applyCmd, diffCmd)
}

// dryRunFlag adds --dry-run to a write command, as kubectl's.
func dryRunFlag(cmd *cobra.Command, v *string) {
	cmd.Flags().StringVar(v, "dry-run", "none", "none; server: the admin API checks the write as it would make it and stores nothing (dryRun=All); client: nothing is sent, the objects are compared with the server's")
	cmd.Flags().Lookup("dry-run").NoOptDefVal = "client"
}

// setDryRun checks --dry-run and sets it on c.
func (c *client) setDryRun(v string) error {
	switch v {
	case "", "none":
		c.dry = ""
	case "server", "client":
		c.dry = v
	default:
		return usageErr("--dry-run must be none, server or client, not %q", v)
	}
	return nil
}

// applyFiles are the files -f names: a file, every .yaml, .yml and .json
// file of a directory (sorted; not its subdirectories), or - for stdin.
func applyFiles(args []string) ([]string, error) {
	var out []string
	for _, a := range args {
		if a == "-" {
			out = append(out, a)
			continue
		}
		fi, err := os.Stat(a)
		if err != nil {
			return nil, usageErr("%v", err)
		}
		if !fi.IsDir() {
			out = append(out, a)
			continue
		}
		ents, err := os.ReadDir(a)
		if err != nil {
			return nil, usageErr("%v", err)
		}
		var found []string
		for _, e := range ents {
			if ext := strings.ToLower(filepath.Ext(e.Name())); !e.IsDir() && (ext == ".yaml" || ext == ".yml" || ext == ".json") {
				found = append(found, filepath.Join(a, e.Name()))
			}
		}
		if len(found) == 0 {
			return nil, usageErr("directory %s has no .yaml, .yml or .json file", a)
		}
		slices.Sort(found)
		out = append(out, found...)
	}
	if len(out) == 0 {
		return nil, usageErr("give the objects with -f FILE, -f DIR or -f -")
	}
	return out, nil
}

func applyCmd(e *env) *cobra.Command {
	var cf clientFlags
	var files []string
	var dry string
	cmd := &cobra.Command{
		Use:   "apply -f FILE|DIR|- --server URL [--dry-run=server|client]",
		Short: "Create or update objects from files; unchanged ones are left alone",
		Long: `Create the objects of the files that do not exist, update those that
differ, and leave the others alone, as kubectl apply does: run it twice and
the second run reports every object "unchanged" and writes nothing (no new
resourceVersion, no new serial). A file holds objects (YAML documents or
JSON, as get -o yaml prints them; zones, services and policies) or a
publisher config (zones: …). -f DIR applies every .yaml, .yml and .json
file of DIR, in name order; -f - reads stdin; -f may be repeated.

--dry-run=server has the admin API check every write as it would make it
(validation, preconditions) and store nothing; --dry-run=client sends
nothing and compares the objects with the server's.

The server's diagnostics about an object are printed at the FILE:LINE:COL
of the file that holds it, as lint prints them. Each object of a file of
objects is written with the annotation grpc-config-dns/source: FILE:LINE
(where it starts); an object that differs from the stored one only by it
is unchanged.

Exit status: 0 applied; 1 an object was refused (the others are applied);
2 usage or connection error.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := cf.client(e)
			if err != nil {
				return err
			}
			if err := c.setDryRun(dry); err != nil {
				return err
			}
			paths, err := applyFiles(files)
			if err != nil {
				return err
			}
			var worst error
			for _, p := range paths {
				if err := c.applyFile(p); err != nil {
					var ee *exitError
					if !errors.As(err, &ee) || ee.code != exitInvalid {
						return err
					}
					worst = err
				}
			}
			return worst
		},
	}
	cmd.Flags().StringArrayVarP(&files, "filename", "f", nil, "file, directory or - (stdin) of the objects to apply; repeatable")
	dryRunFlag(cmd, &dry)
	cf.add(cmd, true)
	return cmd
}

// applyFile applies the objects, or the publisher config, of file.
func (c *client) applyFile(file string) error {
	text, err := c.e.readFileArg(file)
	if err != nil {
		return err
	}
	objs, srcs, isConfig, err := readObjects(file, text)
	if err != nil {
		return &exitError{code: exitInvalid, err: fmt.Errorf("%s: %v", file, err)}
	}
	if isConfig {
		return c.publishConfig(file, text)
	}
	return c.publishObjects(file, objs, srcs)
}

func diffCmd(e *env) *cobra.Command {
	var cf clientFlags
	var files []string
	cmd := &cobra.Command{
		Use:   "diff -f FILE|DIR|- --server URL",
		Short: "Show what apply would change, down to who gets which config",
		Long: `Show what apply -f would change, without changing anything: each object
of the files is sent to the admin API as a dry run (the server validates it
and stores nothing), and compared with the object stored. For each object
that would change, diff prints the object's difference (unified, as YAML),
and for a service the TXT record DNS serves before and after, and who gets
what: each kind of client (language, named host, dynamic-parameter
variant, percentage buckets, as the web view draws it) whose chosen
config would change, with the config before and after.

Exit status, as kubectl diff's: 0 no difference; 1 differences; 2 usage or
connection error, or an object the server would refuse (reported).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := cf.client(e)
			if err != nil {
				return err
			}
			c.dry = "server"
			paths, err := applyFiles(files)
			if err != nil {
				return err
			}
			differ, refused := false, false
			for _, p := range paths {
				d, r, err := c.diffFile(p)
				if err != nil {
					return err
				}
				differ, refused = differ || d, refused || r
			}
			switch {
			case refused:
				return &exitError{code: exitUsage}
			case differ:
				return &exitError{code: exitInvalid}
			}
			return nil
		},
	}
	cmd.Flags().StringArrayVarP(&files, "filename", "f", nil, "file, directory or - (stdin) of the objects to compare; repeatable")
	cf.add(cmd, false)
	return cmd
}

// diffFile prints the differences the objects of file would make. A
// publisher config is compared object by object, as its apply would
// write them.
func (c *client) diffFile(file string) (differ, refused bool, err error) {
	text, err := c.e.readFileArg(file)
	if err != nil {
		return false, false, err
	}
	objs, srcs, isConfig, err := readObjects(file, text)
	if err != nil {
		return false, false, &exitError{code: exitUsage, err: fmt.Errorf("%s: %v", file, err)}
	}
	if isConfig {
		if objs, srcs, err = configObjects(file, text, c.e); err != nil {
			return false, false, err
		}
	}
	ctx := context.Background()
	for i, o := range objs {
		zone, name, err := objectPlace(srcs[i].at(file), o)
		if err != nil {
			var ee *exitError
			if !errors.As(err, &ee) || ee.code != exitInvalid {
				return false, false, err
			}
			fmt.Fprintln(c.e.stderr, ee.err)
			refused = true
			continue
		}
		d, err := c.diffObject(ctx, zone, name, o)
		if err != nil {
			var ae *apiError
			if !errors.As(err, &ae) {
				return false, false, err
			}
			c.failFrom(objectName(placed(o, zone, name)), err, srcs[i].each)
			refused = true
			continue
		}
		differ = differ || d
	}
	return differ, refused, nil
}

// placed is o named as the zone and name it is put at.
func placed(o *store.Object, zone, name string) *store.Object {
	p := *o
	if name == "" {
		p.Metadata.Name, p.Metadata.Zone = zone, ""
	} else {
		p.Metadata.Zone, p.Metadata.Name = zone, strings.TrimPrefix(name, policyArg)
	}
	return &p
}

// dryPut is the answer of a dry-run PUT: the object as it would be
// stored, and for a service what DNS would publish.
type dryPut struct {
	store.Object
	Published *struct {
		Owner string   `json:"owner"`
		TXT   []string `json:"txt"`
	} `json:"published"`
	// Effect is, for a zone or a policy, the services whose record
	// would change.
	Effect *store.Effect `json:"effect"`
}

// diffObject prints what putting o at zone/name would change, and
// reports whether it would.
func (c *client) diffObject(ctx context.Context, zone, name string, o *store.Object) (bool, error) {
	path := objectPath(zone, name)
	var cur *store.Object
	var got store.Object
	if err := c.request(ctx, "GET", path, nil, &got); err == nil {
		cur = &got
	} else {
		var ae *apiError
		if !errors.As(err, &ae) || ae.e.Code != http.StatusNotFound {
			return false, err
		}
	}
	var after dryPut
	if err := c.request(ctx, "PUT", path+"?dryRun=All", o, &after); err != nil {
		return false, err
	}
	if cur != nil && sameContent(cur, &after.Object) {
		return false, nil
	}
	label := objectName(placed(o, zone, name))
	var beforeYAML []byte
	if cur != nil {
		beforeYAML, _ = toYAML(diffView(cur))
	}
	afterYAML, _ := toYAML(diffView(&after.Object))
	fmt.Fprint(c.e.stdout, unifiedDiff(label, string(beforeYAML), string(afterYAML)))
	if e := after.Effect; e != nil {
		// A zone's settings and a policy's values reach its services.
		fmt.Fprintf(c.e.stdout, "  services whose records change: %d\n", e.Total)
		for _, a := range e.Services {
			fmt.Fprintf(c.e.stdout, "  service/%s/%s:\n", zone, a.Name)
			if a.TTLBefore != a.TTLAfter {
				fmt.Fprintf(c.e.stdout, "  TTL %d → %d\n", a.TTLBefore, a.TTLAfter)
			}
			printRecordDiff(c.e.stdout, a.Owner, a.Before, a.After)
		}
		if e.Total > len(e.Services) {
			fmt.Fprintf(c.e.stdout, "  … and %d more\n", e.Total-len(e.Services))
		}
	}
	if after.Published == nil {
		return true, nil
	}
	// The record before: the stored object's, as the server publishes it.
	var before dryPut
	if cur != nil {
		again := *cur
		again.Metadata.ResourceVersion = ""
		if err := c.request(ctx, "PUT", path+"?dryRun=All", &again, &before); err != nil {
			return true, err
		}
	}
	var txtBefore []string
	if before.Published != nil {
		txtBefore = before.Published.TXT
	}
	printRecordDiff(c.e.stdout, after.Published.Owner, txtBefore, after.Published.TXT)
	return true, nil
}

// diffView is what diff compares of an object: its kind, name, labels,
// annotations and spec (not its resourceVersion, nor where it was
// written from: see sameContent).
func diffView(o *store.Object) *store.Object {
	v := *o
	v.Metadata.ResourceVersion = ""
	v.Metadata.Annotations = ownAnnotations(o)
	if len(v.Metadata.Annotations) == 0 {
		v.Metadata.Annotations = nil
	}
	return &v
}
