package ui

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/grpc-config-dns/grpc-config-dns/model"
	sc "github.com/grpc-config-dns/grpc-config-dns/serviceconfig"
	"github.com/grpc-config-dns/grpc-config-dns/serviceconfig/whogets"
)

// choiceView is one choice of a published record as the service page
// names it beside the bars: which clients it is for and its service
// config, compact. Index -1 is the default config: no choice matches.
type choiceView struct {
	Index int
	// Label is what the bars call it ("choice 1", "default config"),
	// Class its colour.
	Label, Class string
	// Selects says which clients the choice is for, as written.
	Selects string
	// Config is the choice's service config as compact JSON ("" for the
	// default config); Short is Config cut to fit beside a bar, Cut says
	// it was cut.
	Config, Short string
	Cut           bool
}

// Anchor is the id of the choice's row in the legend.
func (c choiceView) Anchor() string {
	if c.Index < 0 {
		return "choice-default"
	}
	return "choice-" + strconv.Itoa(c.Index)
}

// splitRow is a bar and the choices it shows, in order of appearance.
type splitRow struct {
	whogets.Row
	Choices []choiceView
}

// maxShortConfig bounds a config written beside a bar (which is read
// whole: choices often differ only at the end, after what policies merged
// in); the legend has it whole.
const maxShortConfig = 1024

// defaultChoice is what a client does when no choice matches.
var defaultChoice = choiceView{
	Index: -1, Label: "default config", Class: "cdef",
	Selects: "clients no choice matches",
}

// choicesOf returns the choices of s's published record, by the index
// whogets numbers them with (the index in the parsed list), and the
// default config last; nil when the record does not parse.
func choicesOf(s *model.Service) []choiceView {
	o := sc.ChooseRecords(sc.Answer{Owner: s.TXTOwner(), Records: [][]string{s.TXT}}, sc.Client{Language: "other", Bucket: 1})
	if o.Choices == nil {
		return nil
	}
	var out []choiceView
	for i, c := range o.Choices.List {
		cv := choiceView{Index: i, Label: whogets.Segment{Choice: i}.Label(), Class: "c" + strconv.Itoa(i), Selects: describeChoice(c)}
		cv.Config = string(o.Choices.CompactConfig(i))
		cv.Short, cv.Cut = shorten(cv.Config, maxShortConfig)
		out = append(out, cv)
	}
	return append(out, defaultChoice)
}

// describeChoice writes the selectors of a choice as they are written in
// the record.
func describeChoice(c sc.Choice) string {
	var parts []string
	if c.ClientLanguage != nil {
		parts = append(parts, "clientLanguage "+listOrNone(c.ClientLanguage))
	}
	if c.Percentage >= 0 {
		parts = append(parts, "percentage "+strconv.Itoa(c.Percentage))
	}
	if c.ClientHostname != nil {
		parts = append(parts, "clientHostname "+listOrNone(c.ClientHostname))
	}
	if c.Constraints != nil {
		parts = append(parts, "dynamicParameterConstraints "+c.Constraints.String())
	}
	if len(parts) == 0 {
		return "every client (no selector)"
	}
	return strings.Join(parts, "; ")
}

func listOrNone(l []string) string {
	if len(l) == 0 {
		return "[] (every client)"
	}
	return strings.Join(l, ", ")
}

// shorten cuts s to at most n bytes on a rune boundary, and says whether
// it did.
func shorten(s string, n int) (string, bool) {
	if len(s) <= n {
		return s, false
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…", true
}

// splitRows pairs every row of sp with the choices its bar shows.
func splitRows(sp *whogets.Split, choices []choiceView) []splitRow {
	byIndex := map[int]choiceView{}
	for _, c := range choices {
		byIndex[c.Index] = c
	}
	var out []splitRow
	for _, r := range sp.Rows {
		row := splitRow{Row: r}
		seen := map[int]bool{}
		for _, s := range r.Segments {
			if seen[s.Choice] {
				continue
			}
			seen[s.Choice] = true
			c, ok := byIndex[s.Choice]
			if !ok { // whogets and choicesOf read the same record
				c = choiceView{Index: s.Choice, Label: s.Label()}
			}
			row.Choices = append(row.Choices, c)
		}
		out = append(out, row)
	}
	return out
}
