package model

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	sc "github.com/grpc-config-dns/grpc-config-dns/serviceconfig"
	"github.com/grpc-config-dns/grpc-config-dns/serviceconfig/policy"
)

// Inspection is a service's final config and where each of its values
// came from (grpc-config-dns inspect, the web view, and the admin API's
// …/inspect), computed from the snapshot: a reader computes nothing.
type Inspection struct {
	Zone    string            `json:"zone"`
	Service string            `json:"service"`
	Labels  map[string]string `json:"labels,omitempty"`
	// Policies are those that apply, in merge order.
	Policies []AppliedPolicy `json:"policies"`
	// Config is the published choice list, null when the service
	// publishes no config.
	Config json.RawMessage `json:"config"`
	// Fields are Config's leaves, each with the layers that set it in
	// merge order: the last one's value is published.
	Fields []InspectedField `json:"fields"`
	// Partial, when not empty, says why Fields have no origins: policies
	// apply, and the service's own config could not be read again
	// (Zone.Inspect).
	Partial string `json:"partial,omitempty"`
}

// AppliedPolicy names a policy that applies to a service.
type AppliedPolicy struct {
	Name   string      `json:"name"`
	Kind   policy.Kind `json:"kind"`
	Target string      `json:"target"`
}

// InspectedField is one value of the published config. Path is its JSON
// pointer in Config; each origin's Path is the pointer in that layer.
type InspectedField struct {
	Path    string          `json:"path"`
	Value   json.RawMessage `json:"value"`
	Origins []policy.Origin `json:"origins"`
}

// FindService returns the service of c named name (absolute or not,
// any case) and its zone.
func (c *Config) FindService(name string) (*Zone, *Service, error) {
	fqdn := strings.ToLower(strings.TrimSuffix(strings.TrimSpace(name), ".")) + "."
	var all []string
	for _, z := range c.Zones {
		for _, s := range z.Services {
			if s.Name == fqdn {
				return z, s, nil
			}
			all = append(all, s.Name)
		}
	}
	hint := "the config has no services"
	if s := sc.Suggest(fqdn, all); s != "" {
		hint = fmt.Sprintf("did you mean %s?", s)
	} else if len(all) > 0 {
		hint = "its services are " + strings.Join(all[:min(len(all), 10)], ", ")
		if len(all) > 10 {
			hint += fmt.Sprintf(" and %d more", len(all)-10)
		}
	}
	return nil, nil, fmt.Errorf("no service %s: %s (give the service's full name, like echo.example.test)", fqdn, hint)
}

// stackOf returns the merged policies that apply to s: nil when none
// made its config (policies merge into a service's config, and leave a
// service without one alone).
func (z *Zone) stackOf(s *Service) *policy.Stack {
	if z.PolicySet == nil || s.TXT == nil {
		return nil
	}
	if st := z.PolicySet.StackFor(s.target()); !st.Empty() {
		return st
	}
	return nil
}

// PolicyNames returns the names of the policies that apply to s, in
// merge order.
func (z *Zone) PolicyNames(s *Service) []string {
	st := z.stackOf(s)
	if st == nil {
		return nil
	}
	out := make([]string, len(st.Policies))
	for i, p := range st.Policies {
		out[i] = p.Name
	}
	return out
}

// Inspect returns what service s of zone z publishes and where each value
// came from. The record's values are matched to the layers by their JSON
// pointer: publishing rewrites durations and leaves nulls out, but moves
// nothing.
//
// spec is the service's spec as a store holds it (its fields as JSON: a
// store object's spec, or ServiceSpec.Spec from SplitSpecs of its config
// file), at the version s was read from. It is read only when policies
// apply to s, for the config the service wrote itself, which a Service
// does not keep (with policies, it was a tenth of a fleet's memory).
// Without it (nil, or a spec without the config s publishes), the fields
// have no origins, and Partial says why.
func (z *Zone) Inspect(s *Service, spec []byte) *Inspection {
	in := &Inspection{Zone: z.Origin, Service: s.Name, Labels: s.Labels, Policies: []AppliedPolicy{}, Fields: []InspectedField{}, Config: json.RawMessage("null")}
	var res *policy.Result
	if st := z.stackOf(s); st != nil {
		for _, p := range st.Policies {
			in.Policies = append(in.Policies, AppliedPolicy{Name: p.Name, Kind: p.TargetRef.Kind, Target: describeRef(p.TargetRef)})
		}
		if own, ok := ownConfig(spec, s.OwnChoices); ok {
			res, _ = st.Apply(own, s.OwnChoices)
		} else {
			// Merged into nothing, the policies' values would land
			// elsewhere than into the service's (lists merge by name):
			// no origin is better than a wrong one.
			in.Partial = "the service's own config could not be read again (its config file or store object changed since it was published), so which layer set each value is not known"
		}
	}
	value := s.Value()
	if value == nil {
		return in
	}
	in.Config = value
	leaves, err := policy.Leaves(value)
	if err != nil {
		return in
	}
	bare := !s.OwnChoices
	for _, f := range leaves {
		path := f.Path
		if bare {
			// Published as [{"serviceConfig": …}].
			path = strings.TrimPrefix(path, "/0/serviceConfig")
		}
		origins := []policy.Origin{{Kind: policy.Own, Path: path}}
		switch {
		case res != nil:
			origins = slices.Clone(res.Origins(path))
		case in.Partial != "":
			origins = []policy.Origin{}
		}
		in.Fields = append(in.Fields, InspectedField{Path: f.Path, Value: f.Value, Origins: origins})
	}
	return in
}

// ownConfig returns the config a service's spec holds, as JSON (what the
// publisher merged its policies into): its choices when choices is set,
// else its serviceConfig; false when spec holds no such config.
func ownConfig(spec []byte, choices bool) ([]byte, bool) {
	if spec == nil {
		return nil, false
	}
	d, root := specDoc(spec, "the service", nil)
	if root == nil {
		return nil, false
	}
	key := "serviceConfig"
	if choices {
		key = "choices"
	}
	_, v := member(root, key)
	if v == nil {
		return nil, false
	}
	j, ok := d.toJSON(v, "/"+key)
	return j.text, ok
}
