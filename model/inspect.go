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
// made its config.
func (z *Zone) stackOf(s *Service) *policy.Stack {
	if z.PolicySet == nil || s.Own == nil {
		return nil
	}
	return z.PolicySet.StackFor(s.target())
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
func (z *Zone) Inspect(s *Service) *Inspection {
	in := &Inspection{Zone: z.Origin, Service: s.Name, Labels: s.Labels, Policies: []AppliedPolicy{}, Fields: []InspectedField{}, Config: json.RawMessage("null")}
	var res *policy.Result
	if st := z.stackOf(s); st != nil {
		for _, p := range st.Policies {
			in.Policies = append(in.Policies, AppliedPolicy{Name: p.Name, Kind: p.TargetRef.Kind, Target: describeRef(p.TargetRef)})
		}
		res, _ = st.Apply(s.Own, s.OwnChoices)
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
		if res != nil {
			origins = slices.Clone(res.Origins(path))
		}
		in.Fields = append(in.Fields, InspectedField{Path: f.Path, Value: f.Value, Origins: origins})
	}
	return in
}
