package store

import (
	"context"
	"slices"

	"github.com/grpc-config-dns/grpc-config-dns/model"
	"github.com/grpc-config-dns/grpc-config-dns/serviceconfig/policy"
)

// Affected is a service whose published record a write of its zone or of
// one of its policies changes: what a dry run of that write answers, so
// that "which services does this policy change, and how" has an answer.
type Affected struct {
	// Name is the service's name in its zone; Owner its TXT record's.
	Name  string `json:"name"`
	Owner string `json:"owner"`
	// Before and After are its TXT record's strings (none: no record).
	Before []string `json:"txtBefore,omitempty"`
	After  []string `json:"txtAfter,omitempty"`
	// TTLBefore and TTLAfter are its records' TTL.
	TTLBefore uint32 `json:"ttlBefore"`
	TTLAfter  uint32 `json:"ttlAfter"`
}

// Effect is the services a write changes: the first MaxAffected of them
// in name order, and how many in all.
type Effect struct {
	Services []Affected `json:"services"`
	Total    int        `json:"total"`
}

// MaxAffected bounds the services an Effect lists (a zone-wide policy of
// a 100 000-service zone changes them all).
const MaxAffected = 1000

// PolicyEffect returns what writing policy name of zone as obj (nil:
// deleting it) changes in the zone's services, the store unchanged. obj
// is assumed valid (a dry run of the write checks it).
func (s *Store) PolicyEffect(ctx context.Context, zone, name string, obj *Object) (*Effect, error) {
	z, name, err := policyName(zone, name)
	if err != nil {
		return nil, err
	}
	before, _, ps, err := s.zoneConfigBut(ctx, z, name)
	if err != nil {
		return nil, err
	}
	old := ps.byName[name]
	var p *policy.Policy
	if obj != nil {
		if p, _ = model.ValidatePolicy(before, name, obj.Spec); p == nil {
			return &Effect{}, nil
		}
	}
	next := make([]*policy.Policy, 0, len(ps.byName)+1)
	for n, q := range ps.byName {
		if n != name {
			next = append(next, q)
		}
	}
	if p != nil {
		next = append(next, p)
	}
	base, _ := model.ValidateZone(origin(z), mustZoneSpec(ctx, s, z), s.opts.Keys)
	if base == nil {
		return &Effect{}, nil
	}
	after, err := base.WithPolicies(next)
	if err != nil {
		return nil, s.internal(err)
	}
	selects := func(t policy.Target) bool { return old != nil && old.Selects(t) || p != nil && p.Selects(t) }
	return s.effect(ctx, z, before, after, selects)
}

// ZoneEffect returns what replacing zone's spec with obj's changes in its
// services (the zone's settings are their defaults), the store unchanged.
func (s *Store) ZoneEffect(ctx context.Context, zone string, obj *Object) (*Effect, error) {
	name, err := zoneName(zone)
	if err != nil {
		return nil, err
	}
	before, _, ps, err := s.zoneConfig(ctx, name)
	if err != nil {
		return &Effect{}, nil // a new zone: no services yet
	}
	base, _ := model.ValidateZone(origin(name), obj.Spec, s.opts.Keys)
	if base == nil {
		return &Effect{}, nil
	}
	after, err := base.WithPolicies(ps.list())
	if err != nil {
		return nil, s.internal(err)
	}
	return s.effect(ctx, name, before, after, nil)
}

// mustZoneSpec is zone's stored spec, or nil.
func mustZoneSpec(ctx context.Context, s *Store, zone string) []byte {
	k, err := s.getKey(ctx, zoneKey(zone), "")
	if err != nil || k == nil {
		return nil
	}
	o, err := decode(*k)
	if err != nil {
		return nil
	}
	return o.Spec
}

// effect publishes the services of zone (those only selects, under either
// config, when not nil) under before and after, and lists those whose
// record differs.
func (s *Store) effect(ctx context.Context, zone string, before, after *model.Zone, only func(policy.Target) bool) (*Effect, error) {
	e := &Effect{Services: []Affected{}}
	from := ""
	for {
		kvs, more, _, err := s.b.rangeKeys(ctx, servicePrefix(zone), from, 1000, 0)
		if err != nil {
			return nil, s.internal(err)
		}
		for _, k := range kvs {
			o, err := decode(k)
			if err != nil {
				return nil, s.internal(err)
			}
			if only != nil && !only(before.ServiceTarget(o.Metadata.Name, o.Metadata.Labels, o.Spec)) && !only(after.ServiceTarget(o.Metadata.Name, o.Metadata.Labels, o.Spec)) {
				continue
			}
			was, _ := model.ValidateService(before, o.Metadata.Name, o.Metadata.Labels, o.Spec, s.opts.Keys)
			now, _ := model.ValidateService(after, o.Metadata.Name, o.Metadata.Labels, o.Spec, s.opts.Keys)
			a := Affected{Name: o.Metadata.Name}
			if was != nil {
				a.Owner, a.Before, a.TTLBefore = was.TXTOwner(), slices.Clone(was.TXT), was.TTL
			}
			if now != nil {
				a.Owner, a.After, a.TTLAfter = now.TXTOwner(), slices.Clone(now.TXT), now.TTL
			}
			if slices.Equal(a.Before, a.After) && a.TTLBefore == a.TTLAfter {
				continue
			}
			e.Total++
			if len(e.Services) < MaxAffected {
				e.Services = append(e.Services, a)
			}
		}
		if !more || len(kvs) == 0 {
			break
		}
		from = kvs[len(kvs)-1].key + "\x00"
	}
	return e, nil
}
