package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	"k8s.io/client-go/util/jsonpath"

	"github.com/grpc-config-dns/grpc-config-dns/store"
)

// The output formats of the commands that print objects (-o), as
// kubectl's: table (the default), wide, json, yaml, name and
// jsonpath=TEMPLATE.
const outputHelp = "output: table, wide, json, yaml, name, or jsonpath=TEMPLATE (kubectl's JSONPath, such as {.spec.ttl} or {range .items[*]}{.metadata.name}{\"\\n\"}{end})"

// outputFormat is a parsed -o.
type outputFormat struct {
	kind string // table, wide, json, yaml, name, jsonpath
	jp   *jsonpath.JSONPath
}

func parseOutput(s string) (outputFormat, error) {
	switch s {
	case "", "table":
		return outputFormat{kind: "table"}, nil
	case "wide", "json", "yaml", "name":
		return outputFormat{kind: s}, nil
	}
	if tmpl, ok := strings.CutPrefix(s, "jsonpath="); ok {
		jp := jsonpath.New("output")
		jp.AllowMissingKeys(true)
		if err := jp.Parse(tmpl); err != nil {
			return outputFormat{}, usageErr("-o jsonpath=%s: %v", tmpl, err)
		}
		return outputFormat{kind: "jsonpath", jp: jp}, nil
	}
	return outputFormat{}, usageErr("-o must be table, wide, json, yaml, name or jsonpath=TEMPLATE, not %q", s)
}

// human reports whether the output is a table for people (progress
// lines go with it).
func (f outputFormat) human() bool { return f.kind == "table" || f.kind == "wide" }

// write prints v (an object, a list, or several objects) whose objects
// are objs, as f says.
func (f outputFormat) write(w io.Writer, v any, objs []*store.Object) error {
	switch f.kind {
	case "json":
		b, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			return err
		}
		fmt.Fprintln(w, string(b))
	case "yaml":
		b, err := toYAML(v)
		if err != nil {
			return err
		}
		w.Write(b)
	case "name":
		if objs == nil {
			if o, ok := v.(*store.Object); ok {
				objs = []*store.Object{o}
			}
		}
		for _, o := range objs {
			fmt.Fprintln(w, objectName(o))
		}
	case "jsonpath":
		// The template runs on the JSON form, as kubectl's does.
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		var data any
		if err := json.Unmarshal(b, &data); err != nil {
			return err
		}
		var out bytes.Buffer
		if err := f.jp.Execute(&out, data); err != nil {
			return &exitError{code: exitUsage, err: fmt.Errorf("-o jsonpath: %v", err)}
		}
		w.Write(out.Bytes())
		if out.Len() > 0 && !bytes.HasSuffix(out.Bytes(), []byte("\n")) {
			fmt.Fprintln(w)
		}
	default:
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		printTable(tw, objs, true, f.kind == "wide")
		tw.Flush()
	}
	return nil
}

// objectName is how -o name names an object: KIND/ZONE/NAME for a
// service or policy, zone/NAME for a zone.
func objectName(o *store.Object) string {
	switch {
	case o.Kind == store.PolicyKind:
		return "policy/" + o.Metadata.Zone + "/" + o.Metadata.Name
	case o.Metadata.Zone != "":
		return "service/" + o.Metadata.Zone + "/" + o.Metadata.Name
	}
	return "zone/" + o.Metadata.Name
}

// labelsText is a LABELS column: k=v,… sorted, or "-".
func labelsText(l map[string]string) string {
	keys := make([]string, 0, len(l))
	for k := range l {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for i, k := range keys {
		keys[i] = k + "=" + l[k]
	}
	return orDash(strings.Join(keys, ","))
}
