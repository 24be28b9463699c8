package serviceconfig

import (
	"strconv"
	"strings"
)

// What each client picks from a choice list, as it reads one: the model
// behind a verdict's "never picks this choice" and behind which clients
// fail their channel when none matches (docs/rules.md, "Clients").
//
// gRFC A2 matches clientLanguage case-insensitively, an absent or empty list
// matches all, and a client's percentage bucket is fixed. The clients differ
// (their sources, and testdata/peers): grpc-go matches only "GO", exactly,
// reads an empty clientLanguage or clientHostname list as matching no
// client, and draws the percentage anew on every resolution; grpc-js reads
// empty lists as grpc-go does; C-core names itself "c++" (so do the
// languages built on it); grpc-go and C-core ignore dynamicParameterConstraints,
// grpc-java and grpc-js reject the record when they come to a choice that
// has them.

// clientLanguages are the clientLanguage values each client matches:
// grpc-go and grpc-js exactly as written here (the interop suite measured
// "Node" matching no grpc-js client), the others in any case (gRFC A2).
var clientLanguages = [...]string{"GO", "c++", "java", "node", "go"}

// exactLanguage is the set of clients that compare clientLanguage exactly.
const exactLanguage = clientGo | clientJS

// languageMatches reports whether client i (a bit index) matches a
// clientLanguage list.
func languageMatches(i int, list []string) bool {
	for _, l := range list {
		if Clients(1<<i)&exactLanguage != 0 && l == clientLanguages[i] || strings.EqualFold(l, clientLanguages[i]) && Clients(1<<i)&exactLanguage == 0 {
			return true
		}
	}
	return false
}

// emptyMatchesNone is the set of clients that read an empty criterion list
// as matching no client.
const emptyMatchesNone = clientGo | clientJS

// mayPick reports whether some client of client i may pick x when it
// comes to it, and whether every client of client i does.
func (x *Choice) mayPick(i int) (some, every bool) {
	cl := Clients(1 << i)
	if x.Percentage == 0 {
		return false, false
	}
	every = x.Percentage < 0 || x.Percentage >= 100
	switch {
	case x.ClientLanguage == nil:
	case len(x.ClientLanguage) == 0:
		if cl&emptyMatchesNone != 0 {
			return false, false
		}
	case !languageMatches(i, x.ClientLanguage):
		return false, false
	}
	switch {
	case x.ClientHostname == nil:
	case len(x.ClientHostname) == 0:
		if cl&emptyMatchesNone != 0 {
			return false, false
		}
	default:
		every = false
	}
	if x.Constraints != nil && cl&(clientJava|clientJS|ClientOurs) != 0 {
		// grpc-java and grpc-js reject the record here (what they pick is
		// moot); our resolver matches the constraints against each
		// client's parameters.
		every = false
	}
	return true, every
}

// choiceReach says, for each choice of ch, which clients may pick it
// (picks) and which come to it at all (seen: no earlier choice took every
// client of theirs); left are the clients no choice takes whole.
func choiceReach(ch *Choices) (picks, seen []Clients, left Clients) {
	picks = make([]Clients, len(ch.List))
	seen = make([]Clients, len(ch.List))
	left = AllClients
	for k := range ch.List {
		seen[k] = left
		for i := range clientIDs {
			cl := Clients(1 << i)
			if left&cl == 0 {
				continue
			}
			some, every := ch.List[k].mayPick(i)
			if some {
				picks[k] |= cl
			}
			if every {
				left &^= cl
			}
		}
	}
	return picks, seen, left
}

// markUnreached sets, on the diagnostics of ch's choices, the clients that
// never pick the choice (for what is in its service config) or never come
// to it (for its criteria; for its dynamicParameterConstraints, which
// grpc-java and grpc-js reject when they read it and grpc-go and C-core
// misread when they pick it).
func markUnreached(ds Diagnostics, ch *Choices) {
	if ch == nil || len(ch.List) == 0 {
		return
	}
	// Most records have no refusal: the reach is worked out for the first.
	var byElem map[int32]int
	var picks, seen []Clients
	for j := range ds {
		d := &ds[j]
		if d.choice == 0 || d.refusedBy|d.misreadBy == 0 {
			continue
		}
		if byElem == nil {
			picks, seen, _ = choiceReach(ch)
			byElem = make(map[int32]int, len(ch.List))
			for k := range ch.List {
				byElem[int32(ch.List[k].elem)] = k
			}
		}
		k, ok := byElem[d.choice-1]
		if !ok {
			continue
		}
		config := "/" + strconv.Itoa(int(d.choice-1)) + "/" + keyServiceConfig
		switch {
		case d.Code == codeChoiceExtensionKey.String():
			// grpc-java and grpc-js reject the record when they read the
			// choice; grpc-go and C-core misread it when they pick it.
			d.unreached = (clientJava|clientJS)&^seen[k] | (clientGo|clientCore)&^picks[k]
		case d.Path == config || strings.HasPrefix(d.Path, config+"/"):
			// A choice's config is read by the clients that pick it.
			d.unreached = AllClients &^ picks[k]
		default:
			// Its criteria, by the clients that come to it.
			d.unreached = AllClients &^ seen[k]
		}
	}
}

// ExplainClients says, for each client in cs (every one when cs is empty),
// which choices of ch it may pick as it reads the criteria, one line per
// client: what select --explain --clients prints beside gRFC A2's reading.
func (ch *Choices) ExplainClients(cs Clients) []string {
	picks, _, left := choiceReach(ch)
	var out []string
	for i, name := range clientNames {
		cl := Clients(1 << i)
		if cs.declared()&cl == 0 {
			continue
		}
		var idx []string
		for k := range ch.List {
			if picks[k]&cl != 0 {
				idx = append(idx, strconv.Itoa(k))
			}
		}
		line := name + ": "
		switch len(idx) {
		case 0:
			line += "picks no choice"
		case 1:
			line += "may pick choice " + idx[0]
		default:
			line += "may pick choices " + strings.Join(idx, ", ")
		}
		if left&cl != 0 {
			if cl&(clientGo|clientJS) != 0 {
				line += "; a client that matches none fails its channel"
			} else {
				line += "; a client that matches none uses its default config"
			}
		}
		out = append(out, line)
	}
	return out
}
