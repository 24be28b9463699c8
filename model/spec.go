package model

import (
	"bytes"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"go.yaml.in/yaml/v3"

	sc "github.com/grpc-config-dns/grpc-config-dns/serviceconfig"
)

// A versioned store (package store) holds zones and services as separate
// objects, each with a spec: a zone's spec has the fields of a zone in a
// publisher config but services, a service's spec those of a service.
// ValidateZone and ValidateService check one spec with exactly the rules,
// codes and messages of a whole config (they run the same code), with
// positions in the spec's text and JSON pointers into it. What a whole
// config checks across objects is checked where the objects meet: a
// service against its zone's nameservers (ValidateService); two zones
// nested, or two services of one name, cannot be stored.

// MaxSpecSize is the largest spec of one object: a service's config is
// published in one TXT record, which a DNS message bounds at 64 KiB.
const MaxSpecSize = 1 << 20

// ValidateZone checks the spec of zone origin (YAML or JSON) and returns
// the zone, without services, or nil and diagnostics holding an error.
// keys are the TSIG keys its transfer may name. A spec may repeat the
// origin (it must then be the same name); it may not hold services or
// policies, which are objects of their own (ValidatePolicy, WithPolicies).
func ValidateZone(origin string, spec []byte, keys []*Key) (*Zone, sc.Diagnostics) {
	d, root := specDoc(spec, "zone "+origin, nil)
	if root == nil {
		return nil, d.diagnostics()
	}
	d.sigLen = maxSignatureLen(keys)
	known := map[string]bool{}
	for _, k := range keys {
		known[k.Name] = true
	}
	if k, v := member(root, "services"); k != nil {
		d.report(k, "/services", codeUnknownKey, "a zone's spec holds no services: each service is an object of its own (PUT /v1/zones/%s/services/NAME, or grpc-config-dns publish)", strings.TrimSuffix(origin, "."))
		removeMember(root, k, v)
	}
	if k, v := member(root, "policies"); k != nil {
		d.report(k, "/policies", codeUnknownKey, "a zone's spec holds no policies: each policy is an object of its own (PUT /v1/zones/%s/policies/NAME, or grpc-config-dns publish)", strings.TrimSuffix(origin, "."))
		removeMember(root, k, v)
	}
	want := strings.ToLower(strings.TrimSuffix(origin, ".")) + "."
	if v, s := d.specName(root, "origin", want); s != nil && s.Kind == yaml.ScalarNode && strings.TrimSuffix(strings.ToLower(s.Value), ".")+"." != want {
		d.report(v, "/origin", codeFieldType, "the spec's origin %q is not the zone's name %s: leave origin out, or make it the same", s.Value, want)
		return nil, d.diagnostics()
	}
	z, _ := d.zone(root, "", known)
	ds := d.diagnostics()
	if ds.HasErrors() {
		return nil, ds
	}
	return z, ds
}

// NestedZone checks zone origin against the other zones of a store as a
// whole config's zones are checked against one another, with the same
// code: it returns the zone-nested error, with a config's code and
// message, of the nearest zone that holds origin, else of one that origin
// holds, and nothing when origin lies beside them all. others are the
// store's origins in any order (origin among them or not); where(other)
// says where other is, written after its name (" (stored at version 7)").
// The diagnostic's Path is left for the caller, which knows where the
// zone's name is.
func NestedZone(origin string, others []string, where func(other string) string) sc.Diagnostics {
	var nest zoneNesting
	for _, o := range others {
		if o != origin {
			nest.add(o)
		}
	}
	var msg string
	switch outer, inner := nest.add(origin); {
	case outer != "":
		msg = nestedMessage(origin, outer, where(outer))
	case inner != "":
		msg = nestedMessage(inner, origin, where(inner))
	default:
		return nil
	}
	return sc.Diagnostics{{Severity: codeZoneNested.severity(), Code: codeZoneNested.String(), Message: msg, Offset: -1}}
}

// ValidateService checks the spec of service name (relative to z's origin,
// or absolute) of zone z, as z's services are checked in a whole config,
// and returns the service or nil and diagnostics holding an error. A spec
// may repeat the name (it must then be the same name).
//
// labels, when not nil, are the service's labels as a store keeps them
// (metadata.labels), which label policies select it by; a spec of an
// object with labels may not carry labels of its own.
func ValidateService(z *Zone, name string, labels map[string]string, spec []byte, keys []*Key) (*Service, sc.Diagnostics) {
	return new(ServiceValidator).Validate(z, name, labels, spec, keys)
}

// A ServiceValidator is ValidateService for a goroutine that validates
// many services one after the other (a store's start reads 100 000): it
// reuses its memory from one to the next. The services and diagnostics
// it returns are the caller's. Its zero value is ready to use.
type ServiceValidator struct {
	// Compact moves what each valid service keeps (its name, record and
	// addresses) into large allocations shared with the next ones, as a
	// file's reading does: for many services at once, which would
	// otherwise leave them scattered among the validations' garbage. A
	// service then keeps its allocation (64 KiB and more) alive, so it is
	// for validating many, not one.
	Compact bool
	scratch yamlScratch
	keeper  keeper
}

// Validate is ValidateService.
func (v *ServiceValidator) Validate(z *Zone, name string, labels map[string]string, spec []byte, keys []*Key) (*Service, sc.Diagnostics) {
	clear(v.scratch.pairs)
	v.scratch.pairs = v.scratch.pairs[:0]
	d, root := specDoc(spec, "service "+name, &v.scratch)
	if root == nil {
		return nil, d.diagnostics()
	}
	if len(labels) > 0 {
		if k, _ := member(root, "labels"); k != nil {
			d.report(k, "/labels", codeFieldType, "the service's labels are given twice, in metadata.labels and in spec.labels: keep them in metadata.labels only")
			return nil, d.diagnostics()
		}
		addLabels(root, labels)
	}
	d.sigLen = maxSignatureLen(keys) + z.rrsigLen()
	want := absName(name, z.Origin)
	if v, s := d.specName(root, "name", name); s != nil && s.Kind == yaml.ScalarNode && absName(strings.TrimSpace(s.Value), z.Origin) != want {
		d.report(v, "/name", codeFieldType, "the spec's name %q is not the service's name %s: leave name out, or make it the same", s.Value, relative(want, z.Origin))
		return nil, d.diagnostics()
	}
	e := d.service(root, "", z)
	if e.svc != nil {
		for i, ns := range z.Nameservers {
			if ns.Name == e.svc.Name && len(ns.Addresses) > 0 && len(e.svc.Addresses) > 0 {
				d.report(e.name(), "/addresses", codeNSAddressConflict, "addresses for %s are given both here and by nameserver %d of zone %s: give them in one place", e.svc.Name, i, z.Origin)
			}
		}
	}
	ds := d.diagnostics()
	if ds.HasErrors() || e.svc == nil {
		return nil, ds
	}
	if v.Compact {
		return v.keeper.service(e.svc), ds
	}
	return e.svc, ds
}

// ServiceName returns the name a store keys service name of zone origin
// by: lower-case, relative to the origin ("@" for the origin itself), or
// a message saying why name is not a name of the zone.
func ServiceName(origin, name string) (string, string) {
	origin = strings.ToLower(strings.TrimSuffix(origin, ".")) + "."
	if strings.TrimSpace(name) != name || name == "" {
		return "", fmt.Sprintf("service name %q is empty or has spaces around it", name)
	}
	fqdn := absName(name, origin)
	if msg := checkName(fqdn, true); msg != "" {
		return "", fmt.Sprintf("service name %q: %s", name, msg)
	}
	if !inZone(fqdn, origin) {
		return "", fmt.Sprintf("service %s lies outside zone %s", fqdn, origin)
	}
	return relative(fqdn, origin), ""
}

// ZoneName returns the name a store keys a zone by: its origin, lower-case,
// without the final dot ("." alone for the root), or a message saying why
// it is not a zone name.
func ZoneName(origin string) (string, string) {
	if strings.TrimSpace(origin) != origin || origin == "" {
		return "", fmt.Sprintf("zone name %q is empty or has spaces around it", origin)
	}
	fqdn := strings.ToLower(strings.TrimSuffix(origin, ".")) + "."
	if msg := checkName(fqdn, false); msg != "" {
		return "", fmt.Sprintf("zone name %q: %s", origin, msg)
	}
	if fqdn == "." {
		return ".", ""
	}
	return strings.TrimSuffix(fqdn, "."), ""
}

// specDoc reads a spec and returns its doc and root mapping, or a nil root
// when it is not one (reported).
func specDoc(spec []byte, what string, scratch *yamlScratch) (*doc, *yaml.Node) {
	var d *doc
	if scratch != nil {
		// The scratch's doc, with diagnostics of its own: they are the
		// caller's.
		d = &scratch.doc
		*d = doc{src: spec, idx: &textIndex{}, lim: defaultLimits(), scratch: scratch}
	} else {
		d = newDoc(spec)
	}
	if len(spec) > MaxSpecSize {
		d.add(sc.Diagnostic{Severity: codeConfigTooLarge.severity(), Code: codeConfigTooLarge.String(), Offset: 0, Line: 1, Column: 1,
			Message: fmt.Sprintf("the spec of %s is %d bytes, more than the %d an object may have: a DNS answer holds at most 64 KiB", what, len(spec), MaxSpecSize)})
		return d, nil
	}
	if root := d.parseYAML(spec); root != nil && d.mapping(root, "", "the spec of "+what) {
		return d, root
	}
	return d, nil
}

// member returns the key and value of key in mapping n.
func member(n *yaml.Node, key string) (k, v *yaml.Node) {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Kind == yaml.ScalarNode && n.Content[i].Value == key {
			return n.Content[i], n.Content[i+1]
		}
	}
	return nil, nil
}

func removeMember(n, k, v *yaml.Node) {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i] == k && n.Content[i+1] == v {
			n.Content = append(n.Content[:i:i], n.Content[i+2:]...)
			return
		}
	}
}

// specName returns the value of member key of spec root, which may repeat
// the object's name, and that value dereferenced; without the member, it
// adds key: name and returns nils.
func (d *doc) specName(root *yaml.Node, key, name string) (v, s *yaml.Node) {
	k, v := member(root, key)
	if k == nil {
		d.scratch.addMember(root, key, name)
		return nil, nil
	}
	return v, deref(v)
}

// addMember adds key: value (a string) to mapping n, with no position:
// diagnostics about it carry its path only. It is in the scratch's memory
// (a new one's when s is nil), valid until its next read: a store's start
// adds the name of 100 000 specs, and the nodes and the grown list were a
// sixth of their garbage.
func (s *yamlScratch) addMember(n *yaml.Node, key, value string) {
	if s == nil {
		s = new(yamlScratch)
	}
	s.added = [2]yaml.Node{
		{Kind: yaml.ScalarNode, Tag: "!!str", Value: key},
		{Kind: yaml.ScalarNode, Tag: "!!str", Value: value, Style: yaml.DoubleQuotedStyle}}
	s.content = append(append(s.content[:0], n.Content...), &s.added[0], &s.added[1])
	n.Content = s.content
}

// Specs are the objects a publisher config holds, for loading it into a
// store: its zones, each with its spec and its services'.
type Specs struct {
	Zones []ZoneSpec
	// Keys are the config's TSIG keys, which a store does not hold (they
	// are secrets): serve is given them with its own settings.
	Keys []*Key
}

// ZoneSpec is one zone of a config as store objects.
type ZoneSpec struct {
	// Name is the zone's name as a store keys it (ZoneName).
	Name string
	// Spec is the zone's fields but services, as compact JSON.
	Spec     []byte
	Policies []PolicySpec
	Services []ServiceSpec
}

// PolicySpec is one policy of a zone as a store object.
type PolicySpec struct {
	Name string
	// Spec is the policy's fields but its name, as compact JSON.
	Spec []byte
}

// ServiceSpec is one service of a zone as a store object.
type ServiceSpec struct {
	// Name is relative to the zone's origin, as a store keys it.
	Name string
	// Labels are the service's labels, which a store keeps as
	// metadata.labels.
	Labels map[string]string
	// Spec is the service's fields but its name and labels, as compact
	// JSON.
	Spec []byte
}

// ServiceSpecsOf returns the specs (as SplitSpecs makes them) of services
// of zone origin of cfg, by name: what Zone.Inspect reads a service's own
// config from. text is the config cfg was parsed from, and services are
// cfg's own (the same objects): one that is not is left out, as is one
// whose entry in text is not the service (each is found by its place in
// its zone's list, and checked). Only the services asked for are
// converted: a service page of a 100 000-service file reads one.
func ServiceSpecsOf(text []byte, cfg *Config, origin string, services []*Service) map[string][]byte {
	zi := slices.IndexFunc(cfg.Zones, func(z *Zone) bool { return z.Origin == origin })
	if zi < 0 || len(services) == 0 {
		return nil
	}
	d, root, blocks := readSkeleton(text)
	if root == nil {
		return nil
	}
	_, zones := member(root, "zones")
	if zones = deref(zones); zones == nil || zi >= len(zones.Content) {
		return nil
	}
	// The zone's entry, which must be the zone, and its services list:
	// its items when it was cut.
	var entries []*yaml.Node
	var b *block
	var zoneOrigin string
	for _, p := range d.pairs(deref(zones.Content[zi])) {
		switch p.k.Value {
		case "origin":
			if v := deref(p.v); v != nil {
				zoneOrigin = v.Value
			}
		case "services":
			if b = blocks[posOf(p.k)]; b == nil {
				entries = d.list(deref(p.v), "", "services")
			}
		}
	}
	if want, _ := ZoneName(origin); want == "" {
		return nil
	} else if got, _ := ZoneName(strings.TrimSpace(zoneOrigin)); got != want {
		return nil
	}
	at := make(map[*Service]int, len(cfg.Zones[zi].Services))
	for k, s := range cfg.Zones[zi].Services {
		at[s] = k
	}
	out := make(map[string][]byte, len(services))
	for _, s := range services {
		k, ok := at[s]
		var sn *yaml.Node
		switch {
		case !ok:
			continue
		case b != nil && k < len(b.items):
			sn = deref(itemEntry(b.items[k], nil))
		case b == nil && k < len(entries):
			sn = deref(entries[k])
		}
		if sn == nil {
			continue
		}
		want, _ := ServiceName(origin, s.Name)
		if _, v := member(sn, "name"); v == nil || deref(v) == nil {
			continue
		} else if got, _ := ServiceName(origin, strings.TrimSpace(deref(v).Value)); got != want {
			continue
		}
		if spec, ds := d.serviceSpec(sn, origin, ""); !ds.HasErrors() {
			out[s.Name] = spec.Spec
		}
	}
	return out
}

// readSkeleton reads text's skeleton, with the items of each services list
// cut from it in blocks, as Parse cuts them; a text that is not cut is
// read whole (no blocks). root is nil when it does not read.
func readSkeleton(text []byte) (d *doc, root *yaml.Node, blocks map[textPos]*block) {
	skeleton, blocks, ok := cutServices(text)
	if !ok {
		skeleton, blocks = text, nil
	}
	d = newDoc(text)
	return d, d.parseYAML(skeleton), blocks
}

// SplitSpecs checks a publisher config as Parse does and cuts it into the
// objects of a store: the spec of each zone and service, converted to
// JSON exactly as the publisher converts service configs. It returns nil
// and the diagnostics when the config is invalid.
func SplitSpecs(text []byte) (*Specs, sc.Diagnostics) {
	cfg, ds := Parse(text)
	if cfg == nil {
		return nil, ds
	}
	// The services lists cut into their items (as Parse cuts them) are
	// converted item by item, in parallel; the rest is read from the
	// skeleton.
	d, root, blocks := readSkeleton(text)
	if root == nil {
		return nil, d.diagnostics()
	}
	out := &Specs{Keys: cfg.Keys}
	_, zones := member(root, "zones")
	for i, zn := range deref(zones).Content {
		zs, services, servicesKey, ok := d.zoneSpec(deref(zn), cfg.Zones[i], fmt.Sprintf("/zones/%d", i))
		if !ok {
			return nil, d.diagnostics()
		}
		var b *block
		if servicesKey != nil {
			b = blocks[posOf(servicesKey)]
		}
		var failed sc.Diagnostics
		if zs.Services, failed = d.serviceSpecs(b, services, cfg.Zones[i].Origin, fmt.Sprintf("/zones/%d/services", i)); failed != nil {
			return nil, append(ds, failed...)
		}
		out.Zones = append(out.Zones, zs)
	}
	return out, ds
}

// zoneSpec converts zone entry zn (read as zc) into its spec and its
// policies' specs, and returns its services list and that list's key.
func (d *doc) zoneSpec(zn *yaml.Node, zc *Zone, path string) (zs ZoneSpec, services, servicesKey *yaml.Node, ok bool) {
	zs.Name, _ = ZoneName(zc.Origin)
	spec := &yaml.Node{Kind: yaml.MappingNode}
	var policies *yaml.Node
	for _, p := range d.pairs(zn) {
		switch p.k.Value {
		case "services":
			services, servicesKey = deref(p.v), p.k
		case "policies":
			policies = deref(p.v)
		case "origin":
		default:
			spec.Content = append(spec.Content, p.k, p.v)
		}
	}
	j, ok := d.toJSON(spec, path)
	if !ok {
		return zs, nil, nil, false
	}
	zs.Spec = j.text
	if policies == nil {
		return zs, services, servicesKey, true
	}
	for k, pn := range d.list(policies, path+"/policies", "policies") {
		pspec := &yaml.Node{Kind: yaml.MappingNode}
		var pname string
		for _, p := range d.pairs(pn) {
			if p.k.Value == "name" {
				pname = strings.TrimSpace(deref(p.v).Value)
				continue
			}
			pspec.Content = append(pspec.Content, p.k, p.v)
		}
		j, ok := d.toJSON(pspec, fmt.Sprintf("%s/policies/%d", path, k))
		if !ok {
			return zs, nil, nil, false
		}
		zs.Policies = append(zs.Policies, PolicySpec{Name: pname, Spec: j.text})
	}
	return zs, services, servicesKey, true
}

// serviceSpecs converts a zone's services into store objects' specs, in
// parallel: the items of block b when the list was cut, else the entries
// of the list services. It returns the diagnostics of the first that
// cannot be converted, nil when all are.
func (d *doc) serviceSpecs(b *block, services *yaml.Node, origin, path string) ([]ServiceSpec, sc.Diagnostics) {
	var entries []*yaml.Node
	switch {
	case b != nil:
		entries = make([]*yaml.Node, len(b.items))
	case services != nil:
		entries = d.list(services, path, "services")
	}
	out := make([]ServiceSpec, len(entries))
	failed := make([]sc.Diagnostics, len(entries))
	var taken atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), max(len(entries)/256, 1)) {
		wg.Go(func() {
			w := d.worker(nil)
			for {
				k := int(taken.Add(1)) - 1
				if k >= len(entries) {
					return
				}
				sn := entries[k]
				if b != nil {
					if sn = deref(itemEntry(b.items[k], nil)); sn == nil { // Parse read it alone: a bug
						failed[k] = sc.Diagnostics{{Severity: sc.Error, Code: codeYAMLSyntax.String(), Message: "a services item does not read alone", Path: fmt.Sprintf("%s/%d", path, k), Offset: -1}}
						continue
					}
				}
				w.ds = w.ds[:0]
				out[k], failed[k] = w.serviceSpec(sn, origin, fmt.Sprintf("%s/%d", path, k))
			}
		})
	}
	wg.Wait()
	for _, f := range failed {
		if f != nil {
			return nil, f
		}
	}
	return out, nil
}

// serviceSpec converts a service entry of a config into a store object's
// spec: its fields but name and labels (which a store keeps in its
// metadata), as JSON; or the diagnostics of why it cannot be.
func (d *doc) serviceSpec(sn *yaml.Node, origin, path string) (ServiceSpec, sc.Diagnostics) {
	sspec := &yaml.Node{Kind: yaml.MappingNode}
	var sname string
	var labels map[string]string
	for _, p := range d.pairs(sn) {
		switch p.k.Value {
		case "name":
			sname = strings.TrimSpace(deref(p.v).Value)
		case "labels":
			labels, _ = d.labels(p.v, "")
		default:
			sspec.Content = append(sspec.Content, p.k, p.v)
		}
	}
	rel, msg := ServiceName(origin, sname)
	if msg != "" {
		return ServiceSpec{}, sc.Diagnostics{{Severity: sc.Error, Code: codeNameSyntax.String(), Message: msg, Path: path + "/name", Offset: -1}}
	}
	j, ok := d.toJSON(sspec, path)
	if !ok {
		return ServiceSpec{}, d.diagnostics()
	}
	return ServiceSpec{Name: rel, Labels: labels, Spec: bytes.Clone(j.text)}, nil
}
