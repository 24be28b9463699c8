package ui

import (
	"bytes"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/grpc-config-dns/grpc-config-dns/model"
	"github.com/grpc-config-dns/grpc-config-dns/serviceconfig/policy"
)

// policyView is everything the policy page shows: the policy, and what it
// changes in each service it selects.
type policyView struct {
	Snap                    *Snapshot
	Zone                    *model.Zone
	Policy                  *policy.Policy
	Serial                  uint32
	ResourceVersion         string
	Kind, Target, TargetRef string
	// Default is the policy's default, indented.
	Default string
	Query   string
	// Services are those the policy applies to (at most
	// maxPolicyServices), with what it changes in each; Applies counts
	// them all.
	Services []policyService
	Applies  int
	// NoConfig names the services the targetRef selects that publish no
	// config, which policies leave alone (at most maxPolicyServices);
	// Unconfigured counts them all.
	NoConfig     []string
	Unconfigured int
	// Others are the zone's other policies.
	Others []policyRow
}

// HiddenServices and HiddenNoConfig count the services not listed.
func (v *policyView) HiddenServices() int { return v.Applies - len(v.Services) }

// HiddenNoConfig counts the services without a config not listed.
func (v *policyView) HiddenNoConfig() int { return v.Unconfigured - len(v.NoConfig) }

// policyService is what a policy changes in one service.
type policyService struct {
	Name, Labels string
	// OwnChoices says the service writes choices, not one serviceConfig.
	OwnChoices bool
	// Place is the policy's place in the service's merge order (1-based)
	// of Layers policies; Before and After are the policies merged before
	// and after it.
	Place, Layers int
	Before, After []originView
	// Sets are the values of the final config the policy set: its value
	// is published.
	Sets []change
	// Overridden are the values the policy set that a later layer (a more
	// specific policy, or the service) replaced.
	Overridden []change
	// Removed are the values of the policy's default found nowhere in the
	// published config: a later layer removed them (with a null, which a
	// published config leaves out).
	Removed []change
	// Partial is the inspection's Partial: why Sets may hold values the
	// service set too.
	Partial string
}

// Anchor is the id of the service's section on the policy page.
func (s policyService) Anchor() string { return "service-" + trimdot(s.Name) }

// change is one value a policy sets in a service, the same in the
// choices listed.
type change struct {
	// Path is the value's JSON pointer in the service config of each of
	// the choices ("" for a removed value); the published pointer is
	// /{choice}/serviceConfig followed by Path.
	Path string
	// Choices lists the choices, "0, 1, 2".
	Choices string
	// Value is what is published there, compact JSON.
	Value string
	// PolicyPath is the pointer in the policy's default, PolicyValue what
	// the policy writes there (it may differ from a Value it sets where
	// publishing rewrites a value, as a duration's digits).
	PolicyPath, PolicyValue string
	// By are the layers that overrode the policy's value, in merge order.
	By []originView
}

// changes collects the changes of one kind, merging those that are the
// same in several choices.
type changes struct {
	list  []change
	last  []int // by list index, the last choice added
	index map[string]int
}

// add adds change c, seen in choice n.
func (cs *changes) add(n int, c change) {
	key := c.Path + "\x00" + c.Value + "\x00" + c.PolicyPath
	for _, b := range c.By {
		key += "\x00" + b.Policy
	}
	i, ok := cs.index[key]
	switch {
	case !ok:
		if cs.index == nil {
			cs.index = map[string]int{}
		}
		cs.index[key] = len(cs.list)
		c.Choices = strconv.Itoa(n)
		cs.list, cs.last = append(cs.list, c), append(cs.last, n)
	case cs.last[i] != n:
		cs.list[i].Choices += ", " + strconv.Itoa(n)
		cs.last[i] = n
	}
}

// maxPolicyServices bounds the services a policy page details: a policy
// of a zone of 100 000 services is read with the filter.
const maxPolicyServices = 200

func (h *handler) policy(w http.ResponseWriter, r *http.Request) {
	snap := h.src.Snapshot()
	zoneName, name := r.PathValue("zone"), r.PathValue("name")
	if snap == nil || snap.Config == nil {
		h.render(w, http.StatusServiceUnavailable, "notfound", map[string]string{"What": "a published config (nothing is published yet)"})
		return
	}
	var z *model.Zone
	for _, c := range snap.Config.Zones {
		if trimdot(c.Origin) == strings.ToLower(trimdot(zoneName)) {
			z = c
		}
	}
	var p *policy.Policy
	if z != nil {
		for _, c := range z.Policies {
			if c.Name == name {
				p = c
			}
		}
	}
	if p == nil {
		h.render(w, http.StatusNotFound, "notfound", map[string]string{"What": "policy " + name + " in zone " + zoneName})
		return
	}
	q := strings.TrimSpace(r.URL.Query().Get("q"))
	v := &policyView{Snap: snap, Zone: z, Policy: p, Serial: snap.Serials[z.Origin], ResourceVersion: snap.ResourceVersions[z.Origin],
		Kind: p.TargetRef.Kind.String(), Target: describeTarget(p.TargetRef), TargetRef: targetRefJSON(p.TargetRef), Query: q}
	var pretty bytes.Buffer
	if json.Indent(&pretty, p.Default, "", "  ") == nil {
		v.Default = pretty.String()
	} else {
		v.Default = string(p.Default)
	}
	for _, o := range z.Policies {
		if o != p {
			v.Others = append(v.Others, policyRow{Name: o.Name, Kind: o.TargetRef.Kind.String(), Target: describeTarget(o.TargetRef)})
		}
	}
	var shown []*model.Service
	for _, s := range z.Services {
		labels := formatLabels(s.Labels)
		if q != "" && !strings.Contains(s.Name, strings.ToLower(q)) && !strings.Contains(labels, q) {
			continue
		}
		if !p.Selects(policy.Target{Name: s.Name, Labels: s.Labels}) {
			continue
		}
		if !slices.Contains(z.PolicyNames(s), p.Name) {
			// Selected, but it publishes no config: policies leave it
			// alone (docs/policies.md).
			if v.Unconfigured++; len(v.NoConfig) < maxPolicyServices {
				v.NoConfig = append(v.NoConfig, s.Name)
			}
			continue
		}
		if v.Applies++; len(shown) < maxPolicyServices {
			shown = append(shown, s)
		}
	}
	// The services' own configs, read in one go.
	names := make([]string, len(shown))
	for i, s := range shown {
		names[i] = s.Name
	}
	specs := snap.specs(z.Origin, names)
	for _, s := range shown {
		ps := changesIn(z.Origin, z.Inspect(s, specs[s.Name]), p)
		ps.Labels, ps.OwnChoices = formatLabels(s.Labels), s.OwnChoices
		v.Services = append(v.Services, ps)
	}
	h.render(w, http.StatusOK, "policy", v)
}

// changesIn returns what policy p changes in the service inspected by in
// (in zone): the values of the final config whose origins name p.
func changesIn(zone string, in *model.Inspection, p *policy.Policy) policyService {
	ps := policyService{Name: in.Service, Layers: len(in.Policies), Partial: in.Partial}
	for i, a := range in.Policies {
		ov := originView{Policy: a.Name, Kind: a.Kind.String(), URL: policyURL(zone, a.Name)}
		switch {
		case a.Name == p.Name:
			ps.Place = i + 1
		case ps.Place == 0:
			ps.Before = append(ps.Before, ov)
		default:
			ps.After = append(ps.After, ov)
		}
	}
	// found holds, by choice, the pointers in p's default the final
	// config has a value of p's at, or a value that replaced p's.
	found := map[int][]string{}
	var sets, over changes
	for _, f := range in.Fields {
		k := slices.IndexFunc(f.Origins, func(o policy.Origin) bool { return o.Policy == p.Name })
		n, ok := choiceOf(f.Path)
		if k < 0 || !ok {
			continue
		}
		o := f.Origins[k]
		found[n] = append(found[n], o.Path)
		pv, _ := lookup(p.Default, o.Path)
		if k == len(f.Origins)-1 {
			sets.add(n, change{Path: truncatePointer(f.Path, -2), Value: string(f.Value), PolicyPath: o.Path, PolicyValue: pv})
			continue
		}
		// The published value that replaced p's: as deep in the final
		// config as o.Path is in p's default (a service config, inside
		// /{choice}/serviceConfig).
		at := truncatePointer(f.Path, 2+segments(o.Path))
		val, _ := lookup(in.Config, at)
		c := change{Path: truncatePointer(at, -2), Value: val, PolicyPath: o.Path, PolicyValue: pv}
		for _, later := range f.Origins[k+1:] {
			ov := newOriginView(zone, later)
			ov.Path = ""
			if !slices.Contains(c.By, ov) {
				c.By = append(c.By, ov)
			}
		}
		over.add(n, c)
	}
	ps.Sets, ps.Overridden = sets.list, over.list
	choices := 1
	var list []json.RawMessage
	if json.Unmarshal(in.Config, &list) == nil {
		choices = len(list)
	}
	leaves, err := policy.Leaves(p.Default)
	if err != nil {
		return ps
	}
	for _, l := range leaves {
		var missing []string
		for c := range choices {
			if !slices.ContainsFunc(found[c], func(at string) bool { return within(l.Path, at) || within(at, l.Path) }) {
				missing = append(missing, strconv.Itoa(c))
			}
		}
		if len(missing) == 0 {
			continue
		}
		ps.Removed = append(ps.Removed, change{PolicyPath: l.Path, PolicyValue: string(l.Value), Choices: strings.Join(missing, ", ")})
	}
	return ps
}

// choiceOf returns the choice a published pointer (/{choice}/…) is in.
func choiceOf(ptr string) (int, bool) {
	seg, _, _ := strings.Cut(strings.TrimPrefix(ptr, "/"), "/")
	n, err := strconv.Atoi(seg)
	return n, err == nil && strings.HasPrefix(ptr, "/")
}

// segments counts the reference tokens of a JSON pointer.
func segments(ptr string) int { return strings.Count(ptr, "/") }

// truncatePointer keeps the first n reference tokens of ptr; with n < 0,
// it drops the first -n.
func truncatePointer(ptr string, n int) string {
	if n < 0 {
		rest := ptr
		for range -n {
			if i := strings.IndexByte(rest[min(1, len(rest)):], '/'); i >= 0 {
				rest = rest[i+1:]
			} else {
				return ""
			}
		}
		return rest
	}
	i := 0
	for pos := range len(ptr) {
		if ptr[pos] == '/' {
			if i == n {
				return ptr[:pos]
			}
			i++
		}
	}
	return ptr
}

// within reports whether pointer ptr is at or below pointer root.
func within(ptr, root string) bool {
	return ptr == root || strings.HasPrefix(ptr, root+"/")
}

// lookup returns the value at JSON pointer ptr of document js, compact.
func lookup(js []byte, ptr string) (string, bool) {
	cur := json.RawMessage(js)
	if ptr != "" {
		for _, tok := range strings.Split(strings.TrimPrefix(ptr, "/"), "/") {
			tok = strings.NewReplacer("~1", "/", "~0", "~").Replace(tok)
			var obj map[string]json.RawMessage
			var arr []json.RawMessage
			if json.Unmarshal(cur, &obj) == nil && obj != nil {
				next, ok := obj[tok]
				if !ok {
					return "", false
				}
				cur = next
			} else if json.Unmarshal(cur, &arr) == nil {
				n, err := strconv.Atoi(tok)
				if err != nil || n < 0 || n >= len(arr) {
					return "", false
				}
				cur = arr[n]
			} else {
				return "", false
			}
		}
	}
	var b bytes.Buffer
	if json.Compact(&b, cur) != nil {
		return "", false
	}
	return b.String(), true
}

// describeTarget says which services a targetRef selects.
func describeTarget(r policy.TargetRef) string {
	switch r.Kind {
	case policy.KindZone:
		return "every service of the zone"
	case policy.KindLabels:
		return "the services labelled " + formatLabels(r.Labels)
	case policy.KindName:
		return "the service " + r.Name
	}
	return "no service"
}

// targetRefJSON writes a targetRef as the policy's spec does.
func targetRefJSON(r policy.TargetRef) string {
	ref := struct {
		Kind   string            `json:"kind"`
		Name   string            `json:"name,omitempty"`
		Labels map[string]string `json:"labels,omitempty"`
	}{Kind: "Service", Name: r.Name, Labels: r.Labels}
	if r.Kind == policy.KindZone {
		ref.Kind = "Zone"
	}
	b, _ := json.Marshal(ref)
	return string(b)
}
