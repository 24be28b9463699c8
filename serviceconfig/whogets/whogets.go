// Package whogets says who gets what of a published service config
// record: for each kind of client (a language, a named host, a
// dynamic-parameter variant), which choice each of the percentage
// buckets 1..100 selects, decided by serviceconfig.Choose and
// Choices.Select (the code select --explain runs). The web view draws it;
// the CLI's diff compares it before and after a change.
package whogets

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	sc "github.com/grpc-config-dns/grpc-config-dns/serviceconfig"
)

// Segment is a run of buckets that selects the same choice.
type Segment struct {
	// Choice is the index of the choice, or -1: no choice matches, the
	// client uses its default config.
	Choice   int
	From, To int // buckets, inclusive
	Percent  int
	// Why is serviceconfig's verdict for a client of the first bucket.
	Why string
}

// Label names the segment's choice.
func (s Segment) Label() string {
	if s.Choice < 0 {
		return "default config"
	}
	return fmt.Sprintf("choice %d", s.Choice)
}

// Row is one kind of client and how its buckets split.
type Row struct {
	Who      string
	Segments []Segment
	// Client is the kind of client (Bucket unset).
	Client sc.Client
}

// Split is who gets what of one published record.
type Split struct {
	Rows []Row
	// Hosts and Variants name the hostnames and the dynamic-parameter
	// variants the choices single out.
	Hosts    []string
	Variants []string
	// Omitted counts the kinds of client left out (more than maxRows).
	Omitted int
}

const (
	maxRows      = 48
	maxParamSets = 16
	// otherLanguage stands for any language no choice names.
	otherLanguage = "other"
)

// Of splits the clients of the TXT record txt at owner.
func Of(owner string, txt []string) (*Split, error) {
	o := sc.Choose(sc.Answer{Owner: owner, Records: [][]string{txt}}, sc.Client{Language: otherLanguage, Bucket: 1})
	ch := o.Choices
	if ch == nil {
		return nil, fmt.Errorf("the record does not parse: %s", o.Reason)
	}
	langs, hosts, params := populations(ch)
	sp := &Split{Hosts: hosts}
	for _, p := range params {
		if len(p) > 0 {
			sp.Variants = append(sp.Variants, sc.FormatParams(p))
		}
	}
	for _, p := range params {
		for _, h := range append([]string{""}, hosts...) {
			for _, l := range langs {
				if len(sp.Rows) == maxRows {
					sp.Omitted++
					continue
				}
				c := sc.Client{Language: l, Hostname: h, Params: p}
				sp.Rows = append(sp.Rows, Row{Who: describeClient(c, len(langs) > 1), Segments: segments(ch, c), Client: c})
			}
		}
	}
	return sp, nil
}

// populations returns the languages, hostnames and parameter sets the
// choices name: each named language and "other"; each named host; no
// parameters, and the combinations of the values the constraints name.
func populations(ch *sc.Choices) (langs, hosts []string, params []map[string]string) {
	seenL, seenH := map[string]bool{}, map[string]bool{}
	values := map[string][]string{}
	for _, c := range ch.List {
		for _, l := range c.ClientLanguage {
			if l = strings.ToLower(l); !seenL[l] && l != otherLanguage {
				seenL[l] = true
				langs = append(langs, l)
			}
		}
		for _, h := range c.ClientHostname {
			if !seenH[h] {
				seenH[h] = true
				hosts = append(hosts, h)
			}
		}
		if c.Constraints != nil {
			for k, vs := range c.Constraints.Values() {
				for _, v := range vs {
					if !slices.Contains(values[k], v) {
						values[k] = append(values[k], v)
					}
				}
			}
		}
	}
	langs = append(langs, otherLanguage)
	params = []map[string]string{nil}
	for _, k := range slices.Sorted(maps.Keys(values)) {
		var next []map[string]string
		for _, p := range params {
			for _, v := range values[k] {
				q := maps.Clone(p)
				if q == nil {
					q = map[string]string{}
				}
				q[k] = v
				next = append(next, q)
			}
		}
		params = append(params, next...)
		if len(params) > maxParamSets {
			params = params[:maxParamSets]
			break
		}
	}
	return langs, hosts, params
}

func describeClient(c sc.Client, manyLangs bool) string {
	var parts []string
	switch {
	case c.Language == otherLanguage && manyLangs:
		parts = append(parts, "other languages")
	case c.Language == otherLanguage:
		parts = append(parts, "every language")
	default:
		parts = append(parts, c.Language)
	}
	if c.Hostname != "" {
		parts = append(parts, "on host "+c.Hostname)
	} else {
		parts = append(parts, "on other hosts")
	}
	if len(c.Params) > 0 {
		parts = append(parts, "with "+sc.FormatParams(c.Params))
	}
	return strings.Join(parts, " ")
}

// segments runs the buckets 1..100 of client c through selection.
func segments(ch *sc.Choices, c sc.Client) []Segment {
	var out []Segment
	for b := 1; b <= 100; b++ {
		c.Bucket = b
		i := ch.Select(c)
		if n := len(out); n > 0 && out[n-1].Choice == i {
			out[n-1].To, out[n-1].Percent = b, out[n-1].Percent+1
			continue
		}
		why := "no choice matches: the client uses its default service config"
		if i >= 0 {
			why = ch.Why(c, i).String()
		}
		out = append(out, Segment{Choice: i, From: b, To: b, Percent: 1, Why: why})
	}
	return out
}
