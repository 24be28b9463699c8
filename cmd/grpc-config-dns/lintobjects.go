package main

import (
	"fmt"
	"strings"

	"github.com/grpc-config-dns/grpc-config-dns/model"
	sc "github.com/grpc-config-dns/grpc-config-dns/serviceconfig"
	"github.com/grpc-config-dns/grpc-config-dns/serviceconfig/policy"
	"github.com/grpc-config-dns/grpc-config-dns/store"
)

// lintObjects checks a file of store objects (publish's and apply's input)
// as the store checks them on a write, with the same functions: zones
// first, then each zone's policies, then its services under the zone and
// policies of the file. A service or policy whose zone is not in the file
// is checked under a zone with the default settings (the store checks it
// under the zone it keeps). Diagnostics are placed in the file, at the
// object's own line and column. ok is false when text is not a file of
// objects.
func lintObjects(arg string, text []byte) (ds sc.Diagnostics, ok bool) {
	objs, srcs, isConfig, err := readObjects(arg, text)
	if err != nil || isConfig || len(objs) == 0 {
		return nil, false
	}
	for _, o := range objs {
		if len(o.Spec) == 0 || o.Metadata.Name == "" {
			return nil, false // not an object: a record, or something lint does not know
		}
	}
	zones := map[string]*model.Zone{}
	policies := map[string][]*policy.Policy{}
	// policySrc is where each policy of the file is, by zone and name: a
	// service's problem that a policy's value causes is placed there, as
	// serve places it in a config (the model says which policy: its
	// message starts "policy NAME, applied to service …", its pointer is
	// into the policy's spec).
	policySrc := map[string]*objectSource{}
	placeIn := func(src *objectSource, zone string, d sc.Diagnostic) *objectSource {
		name, _, ok := strings.Cut(strings.TrimPrefix(d.Message, "policy "), ", applied to service ")
		if !strings.HasPrefix(d.Path, "/default") || !strings.HasPrefix(d.Message, "policy ") || !ok {
			return src
		}
		if ps := policySrc[zone+"/"+name]; ps != nil {
			return ps
		}
		return src
	}
	add := func(src *objectSource, zone, what string, found sc.Diagnostics) {
		for _, d := range found {
			src := placeIn(src, zone, d)
			sd := store.Diagnostic{Severity: d.Severity.String(), Code: d.Code, Message: d.Message, Path: "/spec" + d.Path, Line: d.Line, Column: d.Column}
			if d.Path == "" && d.Line == 0 {
				sd.Path = ""
			}
			d.Message = what + ": " + d.Message
			d.Path = sd.Path
			d.Line, d.Column = src.line, 1
			if line, col, placed := src.place(sd); placed {
				d.Line, d.Column = line, col
			}
			ds = append(ds, d)
		}
	}
	zoneOf := func(name string) *model.Zone {
		if z := zones[name]; z != nil {
			return z
		}
		z, _ := model.ValidateZone(name, []byte(`{"nameservers":[{"name":"ns1","addresses":["192.0.2.53"]}]}`), nil)
		zones[name] = z
		return z
	}
	// Zones, then policies, then services: the order a store needs them in.
	for pass := range 3 {
		for i, o := range objs {
			zone, name, err := objectPlace(srcs[i].file.name, o)
			if err != nil {
				if pass == 0 {
					ds = append(ds, sc.Diagnostic{Severity: sc.Error, Code: "field-type", Message: strings.TrimPrefix(err.Error(), srcs[i].file.name+": "), Line: srcs[i].line, Column: 1, Offset: -1})
				}
				continue
			}
			key := strings.ToLower(strings.TrimSuffix(zone, ".")) + "."
			switch {
			case pass == 0 && name == "":
				z, found := model.ValidateZone(zone, o.Spec, nil)
				add(srcs[i], key, "zone "+zone, found)
				if z != nil {
					zones[key] = z
				}
			case pass == 1 && o.Kind == store.PolicyKind:
				z := zoneOf(key)
				if z == nil {
					continue
				}
				p, found := model.ValidatePolicy(z, o.Metadata.Name, o.Spec)
				add(srcs[i], key, fmt.Sprintf("policy %s of zone %s", o.Metadata.Name, zone), found)
				policySrc[key+"/"+o.Metadata.Name] = srcs[i]
				if p != nil {
					policies[key] = append(policies[key], p)
				}
			case pass == 2 && name != "" && o.Kind != store.PolicyKind:
				z := zoneOf(key)
				if z == nil {
					continue
				}
				if ps := policies[key]; len(ps) > 0 {
					if withPs, err := z.WithPolicies(ps); err == nil {
						z = withPs
					}
				}
				_, found := model.ValidateService(z, name, o.Metadata.Labels, o.Spec, nil)
				add(srcs[i], key, fmt.Sprintf("service %s of zone %s", name, zone), found)
			}
		}
	}
	ds.Sort()
	return ds, true
}
