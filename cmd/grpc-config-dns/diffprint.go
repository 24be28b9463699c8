package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/grpc-config-dns/grpc-config-dns/model"
	sc "github.com/grpc-config-dns/grpc-config-dns/serviceconfig"
	"github.com/grpc-config-dns/grpc-config-dns/serviceconfig/whogets"
	"github.com/grpc-config-dns/grpc-config-dns/store"
)

// configObjects returns the objects a publisher config, text of file,
// puts: its zones, their policies, their services, with where each came
// from; its diagnostics are printed, and an invalid config is an error.
func configObjects(file string, text []byte, e *env) ([]*store.Object, []*objectSource, error) {
	specs, ds := model.SplitSpecs(text)
	for _, d := range ds {
		fmt.Fprintln(e.stderr, formatDiagnostic(file, lintDiagnostic{d.Severity.String(), d.Code, d.Message, d.Path, d.Line, d.Column}))
	}
	if specs == nil {
		return nil, nil, &exitError{code: exitUsage, err: fmt.Errorf("%s is invalid: nothing to compare", file)}
	}
	var out []*store.Object
	var srcs []*objectSource
	f := configSource(file, text)
	for i, z := range specs.Zones {
		out = append(out, &store.Object{Kind: store.ZoneKind, Metadata: store.Metadata{Name: z.Name}, Spec: z.Spec})
		srcs = append(srcs, f.zone(i, z.Spec))
		for k, p := range z.Policies {
			out = append(out, &store.Object{Kind: store.PolicyKind, Metadata: store.Metadata{Name: p.Name, Zone: z.Name}, Spec: p.Spec})
			srcs = append(srcs, f.entry(i, "policies", k, p.Spec))
		}
		for k, s := range z.Services {
			out = append(out, &store.Object{Kind: store.ServiceKind, Metadata: store.Metadata{Name: s.Name, Zone: z.Name, Labels: s.Labels}, Spec: s.Spec})
			srcs = append(srcs, f.entry(i, "services", k, s.Spec))
		}
	}
	return out, srcs, nil
}

// unifiedDiff is the difference of the lines of a and b as a unified
// diff (three lines of context) under the header of label; "" when they
// are equal. An object that does not exist yet is a (empty).
func unifiedDiff(label, a, b string) string {
	x, y := splitLines(a), splitLines(b)
	// The longest common subsequence, by dynamic programming: objects
	// are small (a few hundred lines).
	lcs := make([][]int, len(x)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(y)+1)
	}
	for i := len(x) - 1; i >= 0; i-- {
		for j := len(y) - 1; j >= 0; j-- {
			if x[i] == y[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	type line struct {
		op   byte // ' ', '-', '+'
		text string
		i, j int // lines of a and b before it
	}
	var ops []line
	i, j := 0, 0
	for i < len(x) || j < len(y) {
		switch {
		case i < len(x) && j < len(y) && x[i] == y[j]:
			ops = append(ops, line{' ', x[i], i, j})
			i, j = i+1, j+1
		case j < len(y) && (i == len(x) || lcs[i][j+1] > lcs[i+1][j]):
			ops = append(ops, line{'+', y[j], i, j})
			j++
		default:
			ops = append(ops, line{'-', x[i], i, j})
			i++
		}
	}
	const context = 3
	var out strings.Builder
	for k := 0; k < len(ops); {
		if ops[k].op == ' ' {
			k++
			continue
		}
		// A hunk: from context lines before this change to context lines
		// after the last change within 2*context of the next.
		start := max(0, k-context)
		end := k
		for end < len(ops) {
			if ops[end].op != ' ' {
				end++
				continue
			}
			next := end
			for next < len(ops) && ops[next].op == ' ' {
				next++
			}
			if next == len(ops) || next-end > 2*context {
				end = min(len(ops), end+context)
				break
			}
			end = next
		}
		if out.Len() == 0 {
			from := "a/" + label
			if len(x) == 0 {
				from = "/dev/null"
			}
			fmt.Fprintf(&out, "--- %s\n+++ b/%s\n", from, label)
		}
		na, nb := 0, 0
		for _, l := range ops[start:end] {
			if l.op != '+' {
				na++
			}
			if l.op != '-' {
				nb++
			}
		}
		fmt.Fprintf(&out, "@@ -%s +%s @@\n", hunkRange(ops[start].i, na), hunkRange(ops[start].j, nb))
		for _, l := range ops[start:end] {
			fmt.Fprintf(&out, "%c%s\n", l.op, l.text)
		}
		k = end
	}
	return out.String()
}

func hunkRange(before, n int) string {
	if n == 0 {
		return fmt.Sprintf("%d,0", before)
	}
	if n == 1 {
		return fmt.Sprint(before + 1)
	}
	return fmt.Sprintf("%d,%d", before+1, n)
}

func splitLines(s string) []string {
	s = strings.TrimSuffix(s, "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// printRecordDiff prints a service's TXT record before and after, and
// who gets what: each kind of client whose chosen config changes, by
// percentage buckets, with the config before and after.
func printRecordDiff(w io.Writer, owner string, before, after []string) {
	if slices.Equal(before, after) {
		fmt.Fprintf(w, "  TXT %s unchanged\n", owner)
		return
	}
	fmt.Fprintf(w, "  TXT %s\n", owner)
	if len(before) > 0 {
		fmt.Fprintf(w, "  - %s\n", quoteTXT(before))
	}
	if len(after) > 0 {
		fmt.Fprintf(w, "  + %s\n", quoteTXT(after))
	}
	// The kinds of client either record singles out.
	var kinds []sc.Client
	seen := map[string]bool{}
	for _, txt := range [][]string{before, after} {
		if len(txt) == 0 {
			continue
		}
		sp, err := whogets.Of(owner, txt)
		if err != nil {
			continue
		}
		for _, r := range sp.Rows {
			key := r.Who
			if !seen[key] {
				seen[key] = true
				kinds = append(kinds, r.Client)
			}
		}
	}
	if len(kinds) == 0 {
		kinds = []sc.Client{{Language: "go"}}
	}
	fmt.Fprintln(w, "  who gets what (the clients whose config changes):")
	changed := false
	for _, c := range kinds {
		type run struct {
			from, to      int
			before, after string
		}
		var runs []run
		for b := 1; b <= 100; b++ {
			c.Bucket = b
			was, now := chosen(owner, before, c), chosen(owner, after, c)
			if was == now {
				continue
			}
			if n := len(runs); n > 0 && runs[n-1].to == b-1 && runs[n-1].before == was && runs[n-1].after == now {
				runs[n-1].to = b
				continue
			}
			runs = append(runs, run{b, b, was, now})
		}
		for _, r := range runs {
			changed = true
			fmt.Fprintf(w, "    %s, buckets %d–%d (%d%%):\n      - %s\n      + %s\n", describeKind(c), r.from, r.to, r.to-r.from+1, r.before, r.after)
		}
	}
	if !changed {
		fmt.Fprintln(w, "    none: every client keeps the config it has (the record's text changed only)")
	}
}

// chosen is the config client c takes from record txt at owner, as text.
func chosen(owner string, txt []string, c sc.Client) string {
	if len(txt) == 0 {
		return "no record: the client's default config"
	}
	o := sc.Choose(sc.Answer{Owner: owner, Records: [][]string{txt}}, c)
	switch {
	case o.Result == sc.Invalid:
		return "invalid record: the client keeps its last config (" + o.Reason + ")"
	case o.Choice < 0:
		return "no choice matches: the client's default config"
	}
	return string(o.ServiceConfig)
}

func describeKind(c sc.Client) string {
	who := c.Language
	if who == "other" || who == "" {
		who = "any language"
	}
	if c.Hostname != "" {
		who += " on host " + c.Hostname
	}
	if len(c.Params) > 0 {
		keys := slices.Sorted(maps.Keys(c.Params))
		for i, k := range keys {
			keys[i] = k + "=" + c.Params[k]
		}
		who += " with " + strings.Join(keys, ",")
	}
	return who
}

func quoteTXT(txt []string) string {
	q := make([]string, len(txt))
	for i, s := range txt {
		q[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(q, " ")
}
