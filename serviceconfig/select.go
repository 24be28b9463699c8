package serviceconfig

import (
	"fmt"
	"slices"
	"strings"
)

// Client describes the client that selects a choice.
type Client struct {
	// Language is the client's language, e.g. "go"; compared
	// case-insensitively with clientLanguage.
	Language string
	// Hostname is the client's hostname, compared exactly with
	// clientHostname.
	Hostname string
	// Bucket is the client's canary bucket, 1..100: a choice with
	// percentage p matches when Bucket <= p. Draw it once per process.
	Bucket int
	// Params are the client's dynamic parameters.
	Params map[string]string
}

// Select returns the index of the first choice whose every criterion
// matches c, or -1 when none does.
func (ch *Choices) Select(c Client) int {
	for i := range ch.List {
		if ch.List[i].Matches(c) {
			return i
		}
	}
	return -1
}

// Matches reports whether every criterion of the choice matches c.
func (ch *Choice) Matches(c Client) bool {
	return ch.languageMatches(c.Language) &&
		ch.percentageMatches(c.Bucket) &&
		ch.hostnameMatches(c.Hostname) &&
		(ch.Constraints == nil || ch.Constraints.Match(c.Params))
}

func (ch *Choice) languageMatches(lang string) bool {
	if len(ch.ClientLanguage) == 0 {
		return true
	}
	for _, l := range ch.ClientLanguage {
		if strings.EqualFold(l, lang) {
			return true
		}
	}
	return false
}

func (ch *Choice) percentageMatches(bucket int) bool {
	return ch.Percentage < 0 || bucket <= ch.Percentage
}

func (ch *Choice) hostnameMatches(host string) bool {
	if len(ch.ClientHostname) == 0 {
		return true
	}
	for _, h := range ch.ClientHostname {
		if h == host {
			return true
		}
	}
	return false
}

// Verdict says whether one choice matched a client and why.
type Verdict struct {
	Index   int
	Matched bool
	// Selected is true for the first matching choice only.
	Selected bool
	// Reasons has one plain-language sentence per criterion.
	Reasons []string
}

func (v Verdict) String() string {
	var state string
	switch {
	case v.Selected:
		state = "selected"
	case v.Matched:
		state = "matches, but an earlier choice was selected"
	default:
		state = "skipped"
	}
	return fmt.Sprintf("choice %d: %s: %s", v.Index, state, strings.Join(v.Reasons, "; "))
}

// Explain returns one verdict per choice for client c.
func (ch *Choices) Explain(c Client) []Verdict {
	out := make([]Verdict, len(ch.List))
	selected := false
	for i := range ch.List {
		out[i] = ch.verdict(c, i, selected)
		selected = selected || out[i].Selected
	}
	return out
}

// Why returns the verdict of choice i alone for client c, as Explain
// gives it: a resolver explains the choice it took without writing a
// sentence for each of thousands before it.
func (ch *Choices) Why(c Client, i int) Verdict {
	return ch.verdict(c, i, ch.Select(c) < i)
}

// verdict explains choice i; earlier is whether an earlier choice was
// selected.
func (ch *Choices) verdict(c Client, i int, earlier bool) Verdict {
	x := &ch.List[i]
	v := Verdict{Index: i, Matched: true}
	add := func(ok bool, reason string) {
		if !ok {
			v.Matched = false
			reason = "NO: " + reason
		}
		v.Reasons = append(v.Reasons, reason)
	}
	switch {
	case x.ClientLanguage == nil:
		add(true, "any language (no clientLanguage)")
	case len(x.ClientLanguage) == 0:
		add(true, "any language (empty clientLanguage)")
	default:
		ok := x.languageMatches(c.Language)
		verb := "includes"
		if !ok {
			verb = "does not include"
		}
		add(ok, fmt.Sprintf("clientLanguage %s %s %q", quoteList(x.ClientLanguage), verb, c.Language))
	}
	if x.Percentage < 0 {
		add(true, "any bucket (no percentage)")
	} else {
		ok := x.percentageMatches(c.Bucket)
		rel := "<="
		if !ok {
			rel = ">"
		}
		add(ok, fmt.Sprintf("bucket %d %s percentage %d", c.Bucket, rel, x.Percentage))
	}
	switch {
	case x.ClientHostname == nil:
		add(true, "any host (no clientHostname)")
	case len(x.ClientHostname) == 0:
		add(true, "any host (empty clientHostname)")
	default:
		ok := x.hostnameMatches(c.Hostname)
		verb := "includes"
		if !ok {
			verb = "does not include"
		}
		add(ok, fmt.Sprintf("clientHostname %s %s %q", quoteList(x.ClientHostname), verb, c.Hostname))
	}
	if x.Constraints != nil {
		ok := x.Constraints.Match(c.Params)
		verb := "match"
		if !ok {
			verb = "do not match"
		}
		add(ok, fmt.Sprintf("dynamic parameters %s %s %s", FormatParams(c.Params), verb, x.Constraints))
	}
	v.Selected = v.Matched && !earlier
	return v
}

// maxQuoted is how many entries of a list a verdict quotes: a list of
// thousands of hostnames is not read, and writing it for every choice and
// every resolution would cost its size each time.
const maxQuoted = 10

func quoteList(l []string) string {
	q := make([]string, 0, min(len(l), maxQuoted+1))
	for _, s := range l[:min(len(l), maxQuoted)] {
		q = append(q, quoteExcerpt(s))
	}
	if len(l) > maxQuoted {
		q = append(q, fmt.Sprintf("… %d more", len(l)-maxQuoted))
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// FormatParams writes dynamic parameters as {k1=v1, k2=v2}, keys sorted.
func FormatParams(p map[string]string) string {
	keys := make([]string, 0, len(p))
	for k := range p {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	b.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(k + "=" + p[k])
	}
	b.WriteByte('}')
	return b.String()
}
