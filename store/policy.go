package store

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/grpc-config-dns/grpc-config-dns/model"
	"github.com/grpc-config-dns/grpc-config-dns/serviceconfig/policy"
)

// Policies (docs/policies.md) are objects of their zone, beside its
// services: /v1/zones/{zone}/policies/{name}. A policy is merged into
// the configs of the services it selects, so writing one validates those
// services under the zone's new set of policies, and writing a service or
// a zone validates it under the zone's policies. Each zone has a policy
// marker, which every write of one of its policies rewrites: a service or
// zone write compares it, so that a policy written (or deleted) while the
// service was validated makes the service's write fail and be tried
// again, and no write can make a stored service invalid.

func policyPrefix(zone string) string    { return "p/" + zone + "/" }
func policyKey(zone, name string) string { return policyPrefix(zone) + name }
func policyMarkerKey(zone string) string { return "q/" + zone }

// KindPolicy is the Kind of a policy.
const KindPolicy Kind = 4

// PolicyKind is the kind field of a policy object (zones and services
// have none, as before policies were objects).
const PolicyKind = "Policy"

// zonePolicies are the policies of a zone, read after its marker; never
// changed once read (a Store keeps the last set of each zone it read).
type zonePolicies struct {
	marker int64 // modification revision of the marker, 0: none
	byName map[string]*policy.Policy
	kvs    map[string]*kv // the valid ones and the invalid ones
	// invalid are stored policies this server cannot read (written by
	// another version, or corrupt): the zone cannot be written until they
	// are replaced or deleted, which stays possible.
	invalid map[string]*Error
}

// usable returns the 409 of an invalid stored policy other than except.
func (zp *zonePolicies) usable(except string) error {
	for name, e := range zp.invalid {
		if name != except {
			return e
		}
	}
	return nil
}

func (zp *zonePolicies) list() []*policy.Policy {
	out := make([]*policy.Policy, 0, len(zp.byName))
	for _, p := range zp.byName {
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b *policy.Policy) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// readPolicies reads the policies of zone: the marker first, so that a
// policy written between the two reads changes the marker a write then
// compares.
func (s *Store) readPolicies(ctx context.Context, zone string) (*zonePolicies, error) {
	m, err := s.getKey(ctx, policyMarkerKey(zone), "")
	if err != nil {
		return nil, err
	}
	zp := &zonePolicies{marker: modRev(m), byName: map[string]*policy.Policy{}, kvs: map[string]*kv{}}
	if m == nil {
		// No policy was ever written (the marker goes with the zone).
		return zp, nil
	}
	// Every policy write rewrites the marker: its revision names the set.
	if c, ok := s.policies.Load(zone); ok && c.(*zonePolicies).marker == zp.marker {
		return c.(*zonePolicies), nil
	}
	base := &model.Zone{Origin: origin(zone)}
	from := ""
	for {
		kvs, more, _, err := s.b.rangeKeys(ctx, policyPrefix(zone), from, 1000, 0)
		if err != nil {
			return nil, s.internal(err)
		}
		for i := range kvs {
			o, err := decode(kvs[i])
			if err != nil {
				return nil, s.internal(err)
			}
			name := strings.TrimPrefix(kvs[i].key, policyPrefix(zone))
			zp.kvs[name] = &kvs[i]
			p, ds := model.ValidatePolicy(base, name, o.Spec)
			if p == nil {
				e := invalid("policy "+name+" of zone "+zone+" as stored (replace or delete it)", ds)
				e.Code, e.Reason = http.StatusConflict, ReasonConflict
				if zp.invalid == nil {
					zp.invalid = map[string]*Error{}
				}
				zp.invalid[name] = e
				continue
			}
			zp.byName[name] = p
		}
		if !more || len(kvs) == 0 {
			break
		}
		from = kvs[len(kvs)-1].key + "\x00"
	}
	// The policies were read after the marker: if one was written
	// meanwhile, they are newer than the marker says, and are not kept.
	if m2, err := s.getKey(ctx, policyMarkerKey(zone), ""); err == nil && modRev(m2) == zp.marker {
		s.policies.Store(zone, zp)
	}
	return zp, nil
}

func policyName(zone, name string) (string, string, error) {
	z, err := zoneName(zone)
	if err != nil {
		return "", "", err
	}
	if msg := policy.CheckName(name); msg != "" {
		return "", "", badRequest("policy name %q: %s", name, msg)
	}
	return z, name, nil
}

// GetPolicy returns a policy; rv is the get's resourceVersion parameter.
func (s *Store) GetPolicy(ctx context.Context, zone, name, rv string) (*Object, error) {
	z, name, err := policyName(zone, name)
	if err != nil {
		return nil, err
	}
	return s.getObject(ctx, policyKey(z, name), rv, "policy %s of zone %s not found", name, z)
}

// ListPolicies lists the policies of a zone.
func (s *Store) ListPolicies(ctx context.Context, zone string, o ListOptions) (*List, error) {
	z, err := zoneName(zone)
	if err != nil {
		return nil, err
	}
	return s.list(ctx, policyPrefix(z), o)
}

// WatchPolicies streams the changes of a zone's policies, as
// WatchServices does for services.
func (s *Store) WatchPolicies(ctx context.Context, zone, rv string) (<-chan Event, error) {
	z, err := zoneName(zone)
	if err != nil {
		return nil, err
	}
	return s.watch(ctx, policyPrefix(z), rv)
}

// PutPolicy creates or replaces a policy of an existing zone. The
// services the policy selects, before or after the write, are validated
// under the zone's new policies: if one would be invalid, the write is
// refused (422, the diagnostics naming each service and field) and
// nothing is stored.
func (s *Store) PutPolicy(ctx context.Context, zone, name string, obj *Object) (out *Object, created bool, err error) {
	z, name, err := policyName(zone, name)
	if err != nil {
		return nil, false, err
	}
	if err := samePolicy(obj, name, z); err != nil {
		return nil, false, err
	}
	want, err := precondition(putPrecondition, obj.Metadata.ResourceVersion)
	if err != nil {
		return nil, false, err
	}
	what := "policy " + name + " of zone " + z
	value, err := body(obj, what, name, z)
	if err != nil {
		return nil, false, err
	}
	var st stored
	json.Unmarshal(value, &st)
	for range maxRetries {
		zc, zkv, ps, err := s.zoneConfigBut(ctx, z, name)
		if err != nil {
			return nil, false, err
		}
		p, ds := model.ValidatePolicy(zc, name, st.Spec)
		if p == nil {
			return nil, false, invalid("the spec of "+what, ds)
		}
		cur := ps.kvs[name]
		if e := checkPrecondition(cur, want, what); e != nil {
			return nil, false, e
		}
		if cur != nil && bytes.Equal(cur.value, value) {
			o, err := decode(*cur)
			return o, false, err
		}
		res, e := s.writePolicy(ctx, z, name, zc, zkv, ps, p, value)
		if e != nil {
			return nil, false, e
		}
		if res.ok {
			_, existed := res.prev[policyKey(z, name)]
			return &Object{APIVersion: APIVersion, Kind: PolicyKind, Metadata: Metadata{Name: name, Zone: z, Labels: obj.Metadata.Labels, Annotations: annotations(obj), ResourceVersion: resultRV(res, policyKey(z, name))}, Spec: st.Spec}, !existed, nil
		}
	}
	return nil, false, conflict("%s, its zone or its services kept changing while it was written; try again", what)
}

// DeletePolicy deletes a policy; ifRV, when not "", is a precondition.
// The services it selected must be valid without it (422 otherwise).
func (s *Store) DeletePolicy(ctx context.Context, zone, name, ifRV string) (*Object, error) {
	z, name, err := policyName(zone, name)
	if err != nil {
		return nil, err
	}
	want, err := precondition(deletePrecondition, ifRV)
	if err != nil {
		return nil, err
	}
	what := "policy " + name + " of zone " + z
	for range maxRetries {
		zc, zkv, ps, err := s.zoneConfigBut(ctx, z, name)
		if err != nil {
			if e, ok := err.(*Error); ok && e.Code == http.StatusNotFound {
				return nil, notFound("%s not found (its zone is gone)", what)
			}
			return nil, err
		}
		cur := ps.kvs[name]
		if cur == nil {
			return nil, notFound("%s not found", what)
		}
		if e := checkPrecondition(cur, want, what); e != nil {
			return nil, e
		}
		res, e := s.writePolicy(ctx, z, name, zc, zkv, ps, nil, nil)
		if e != nil {
			return nil, e
		}
		if res.ok {
			o, err := deletedObject(res, policyKey(z, name))
			if o != nil {
				o.Kind = PolicyKind
			}
			return o, err
		}
	}
	return nil, conflict("%s, its zone or its services kept changing while it was deleted; try again", what)
}

// writePolicy replaces policy name of zone z with p (nil: deletes it)
// if every service it selects before or after stays valid, in one
// transaction that fails (res.ok false) if the zone, its policies or its
// services changed since they were read.
func (s *Store) writePolicy(ctx context.Context, z, name string, zc *model.Zone, zkv *kv, ps *zonePolicies, p *policy.Policy, value []byte) (txnResult, *Error) {
	old := ps.byName[name]
	next := make([]*policy.Policy, 0, len(ps.byName)+1)
	for n, q := range ps.byName {
		if n != name {
			next = append(next, q)
		}
	}
	if p != nil {
		next = append(next, p)
	}
	nz, err := zc.WithPolicies(next)
	if err != nil {
		return txnResult{}, s.internal(err)
	}
	selected := func(t policy.Target) bool {
		return (old != nil && old.Selects(t)) || (p != nil && p.Selects(t))
	}
	if ps.invalid[name] != nil {
		// What the unreadable version selected is unknown: check all.
		selected = nil
	}
	rev, bad, err := s.checkServices(ctx, z, nz, selected)
	if err != nil {
		return txnResult{}, s.internal(err)
	}
	if bad != nil {
		verb := "this spec"
		if p == nil {
			verb = "it deleted"
		}
		bad.Message = fmt.Sprintf("policy %s of zone %s: services it selects would be invalid with %s: nothing was stored; fix the policy, narrow its targetRef, or override the fields in the services", name, z, verb)
		return txnResult{}, bad
	}
	key := policyKey(z, name)
	t := &txn{
		cmps: []cmp{{key: zoneKey(z), modRev: zkv.modRev}, {key: policyMarkerKey(z), modRev: ps.marker}, {key: key, modRev: modRev(ps.kvs[name])}},
		puts: []kvPut{{policyMarkerKey(z), nil}, {markerKey(z), s.writtenAt()}},
	}
	if rev > 0 {
		t.cmps = append(t.cmps, cmp{key: servicePrefix(z), notAfter: rev})
	}
	if p != nil {
		t.puts = append(t.puts, kvPut{key, value})
	} else {
		t.dels = []string{key}
	}
	res, err := s.commit(ctx, t)
	if err != nil {
		return txnResult{}, s.internal(err)
	}
	return res, nil
}

func samePolicy(obj *Object, name, zone string) error {
	m := obj.Metadata
	if err := checkKind(obj, PolicyKind, "policy "+name+" of zone "+zone); err != nil {
		return err
	}
	if m.Zone != "" {
		if z, msg := model.ZoneName(m.Zone); msg != "" || z != zone {
			return badRequest("metadata.zone %q is not the zone in the URL (%s): make them the same", m.Zone, zone)
		}
	}
	if m.Name != "" && m.Name != name {
		return badRequest("metadata.name %q is not the policy in the URL (%s): make them the same", m.Name, name)
	}
	return nil
}

// Inspect returns what service svc of zone publishes, with its zone's
// policies, and where each value came from (the JSON of `inspect`).
func (s *Store) Inspect(ctx context.Context, zone, svc string) (*model.Inspection, error) {
	z, name, err := serviceName(zone, svc)
	if err != nil {
		return nil, err
	}
	zc, _, _, err := s.zoneConfig(ctx, z)
	if err != nil {
		return nil, err
	}
	k, err := s.getKey(ctx, serviceKey(z, name), "")
	if err != nil {
		return nil, err
	}
	if k == nil {
		return nil, notFound("service %s of zone %s not found", name, z)
	}
	o, err := decode(*k)
	if err != nil {
		return nil, s.internal(err)
	}
	sv, ds := model.ValidateService(zc, name, o.Metadata.Labels, o.Spec, s.opts.Keys)
	if sv == nil {
		e := invalid("service "+name+" of zone "+z+" as stored (with this server's TSIG keys and its zone's policies)", ds)
		e.Code, e.Reason = http.StatusConflict, ReasonConflict
		return nil, e
	}
	return zc.Inspect(sv, o.Spec), nil
}
