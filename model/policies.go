package model

import (
	"crypto/sha256"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	sc "github.com/grpc-config-dns/grpc-config-dns/serviceconfig"
	"github.com/grpc-config-dns/grpc-config-dns/serviceconfig/policy"
)

// Policies are written per zone (docs/policies.md): a targetRef of kind
// Zone means the zone they are written in, a policy's name is unique in
// its zone, and the admin API keeps them under /v1/zones/{zone}/policies,
// beside the services they select.

// policyPlace is where a policy was written, to place the diagnostics of
// the services it makes invalid, and a digest of what it is and where,
// which cached service readings are checked against.
type policyPlace struct {
	node, def *yaml.Node
	path      string
	digest    string
}

// zonePolicies reads a zone's policies: list into z.
func (d *doc) zonePolicies(n *yaml.Node, path string, z *Zone) {
	if n == nil {
		return
	}
	seen := map[string]*yaml.Node{}
	z.policyAt = map[string]*policyPlace{}
	for i, e := range d.list(n, path, "policies") {
		p, pl := d.policy(e, fmt.Sprintf("%s/%d", path, i), z)
		if p == nil {
			continue
		}
		if first, dup := seen[p.Name]; dup {
			d.report(nodeAt(e, "/name"), pl.path+"/name", codePolicyDuplicate, "policy %s is defined twice in zone %s (first at line %d): rename one, or merge them", p.Name, z.Origin, first.Line)
			continue
		}
		seen[p.Name] = e
		z.policyAt[p.Name] = pl
		z.Policies = append(z.Policies, p)
	}
	if len(z.Policies) == 0 {
		return
	}
	set, err := policy.NewSet(z.Policies)
	if err != nil { // Parse made every policy, and names are unique.
		d.report(n, path, codePolicy, "%v", err)
		return
	}
	z.PolicySet = set
	slices.SortFunc(z.Policies, policy.Less)
}

// policy reads one policy: converted to JSON as service configs are, and
// checked by package policy, whose problems are placed in the YAML.
func (d *doc) policy(n *yaml.Node, path string, z *Zone) (*policy.Policy, *policyPlace) {
	if !d.mapping(n, path, "a policy") {
		return nil, nil
	}
	j, ok := d.toJSON(n, path)
	if !ok {
		return nil, nil
	}
	p, probs := policy.Parse(j.text)
	for _, pr := range probs {
		at := n
		if m := j.node(pr.Offset); pr.Offset >= 0 && m != nil {
			at = m
		}
		d.report(at, path+pr.Path, codePolicy, "%s", pr.Message)
	}
	if p == nil {
		return nil, nil
	}
	if p.TargetRef.Kind == policy.KindName {
		written := p.TargetRef.Name
		p.TargetRef.Name = absName(strings.TrimSpace(written), z.Origin)
		if msg := checkName(p.TargetRef.Name, true); msg != "" {
			d.report(nodeAt(n, "/targetRef/name"), path+"/targetRef/name", codePolicy, "targetRef.name %q: %s", written, msg)
			return nil, nil
		}
	}
	sum := sha256.Sum256(fmt.Appendf(j.text, "|%s|%d:%d", path, n.Line, n.Column))
	return p, &policyPlace{node: n, def: nodeAt(n, "/default"), path: path, digest: string(sum[:])}
}

// unusedPolicies warns of policies that select no service of z.
func (d *doc) unusedPolicies(z *Zone) {
	if z.PolicySet == nil {
		return
	}
	targets := make([]policy.Target, len(z.Services))
	for i, s := range z.Services {
		targets[i] = s.target()
	}
	for _, p := range z.PolicySet.Unused(targets) {
		pl := z.policyAt[p.Name]
		d.report(nodeAt(pl.node, "/targetRef"), pl.path+"/targetRef", codePolicyUnused, "policy %s selects no service of zone %s: check its targetRef (%s)", p.Name, z.Origin, describeRef(p.TargetRef))
	}
}

func describeRef(r policy.TargetRef) string {
	switch r.Kind {
	case policy.KindName:
		return "the service " + r.Name
	case policy.KindLabels:
		var parts []string
		for _, k := range slices.Sorted(maps.Keys(r.Labels)) {
			parts = append(parts, k+"="+r.Labels[k])
		}
		return "the services labelled " + strings.Join(parts, ", ")
	}
	return "every service of the zone"
}

func (s *Service) target() policy.Target { return policy.Target{Name: s.Name, Labels: s.Labels} }

// policiesKey is what all the zone's policies are, and where they were
// written ("" when it has none).
func (z *Zone) policiesKey() string {
	var b strings.Builder
	for _, p := range z.Policies {
		b.WriteString(p.Name)
		b.WriteByte(0)
		b.WriteString(z.policyAt[p.Name].digest)
	}
	return b.String()
}

// policyKey is what the policies that select t are, and where they were
// written: a cached reading of a service is used again only when it is
// the same ("" when the zone has no policies).
func (z *Zone) policyKey(t policy.Target) string {
	if z.PolicySet == nil {
		return ""
	}
	var b strings.Builder
	for _, p := range z.PolicySet.Select(t) {
		b.WriteString(z.policyAt[p.Name].digest)
	}
	return b.String()
}

// labels reads a service's labels: a mapping of label keys to values.
func (d *doc) labels(n *yaml.Node, path string) (map[string]string, bool) {
	out := map[string]string{}
	ok := true
	if !d.mapping(n, path, "labels") {
		return nil, false
	}
	for _, p := range d.pairs(deref(n)) {
		sub := path + "/" + escapePointer(p.k.Value)
		v, vok := d.scalar(p.v, sub, "a label value")
		if !vok {
			ok = false
			continue
		}
		if msg := policy.CheckLabel(p.k.Value, v); msg != "" {
			d.report(p.k, sub, codeLabel, "%s", msg)
			ok = false
			continue
		}
		if _, dup := out[p.k.Value]; dup {
			d.report(p.k, sub, codeYAMLDuplicateKey, "label %s is given twice: remove one", p.k.Value)
			ok = false
		}
		out[p.k.Value] = v
	}
	if len(out) > policy.MaxLabels {
		d.report(n, path, codeLabel, "%d labels: a service carries at most %d", len(out), policy.MaxLabels)
		ok = false
	}
	return out, ok
}

// placeByOrigin returns how the diagnostics of a service's final config
// (its own config n at path, with the policies of res merged in) are
// placed: at the value of the layer that set it last — in the service, or
// in the policy, whose message then names the service and the field. The
// same problem of a policy's value in several choices is reported once.
func (d *doc) placeByOrigin(n *yaml.Node, path string, res *policy.Result, s *Service, z *Zone) func(*sc.Diagnostic) bool {
	seen := map[string]bool{}
	return func(diag *sc.Diagnostic) bool {
		d.materialize(n) // nodeAt walks it
		os := res.Origins(diag.Path)
		o := policy.Origin{Kind: policy.Own}
		if len(os) > 0 {
			o = os[len(os)-1]
		}
		at, atPath := nodeAt(n, o.Path), path+o.Path
		if pl := z.policyAt[o.Policy]; o.Kind != policy.Own && pl != nil {
			at, atPath = nodeAt(pl.def, o.Path), pl.path+"/default"+o.Path
			field := diag.Path
			if field == "" {
				field = "the whole record"
			}
			key := atPath + "|" + diag.Code
			if seen[key] {
				return false
			}
			seen[key] = true
			diag.Message = fmt.Sprintf("policy %s, applied to service %s, sets %s of its config: %s; fix the policy, narrow its targetRef, or override the field in the service", o.Policy, s.Name, field, diag.Message)
		}
		loc := d.at(at, atPath, codeYAMLValue, "")
		diag.Path, diag.Line, diag.Column, diag.Offset = loc.Path, loc.Line, loc.Column, loc.Offset
		return true
	}
}

// nodeAt returns the deepest node on the way to JSON pointer path below n.
func nodeAt(n *yaml.Node, path string) *yaml.Node {
	n = deref(n)
	if n == nil || path == "" {
		return n
	}
	for _, seg := range strings.Split(strings.TrimPrefix(path, "/"), "/") {
		seg = strings.NewReplacer("~1", "/", "~0", "~").Replace(seg)
		var next *yaml.Node
		switch n.Kind {
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				if n.Content[i].Value == seg {
					next = deref(n.Content[i+1])
					break
				}
			}
		case yaml.SequenceNode:
			if i, err := strconv.Atoi(seg); err == nil && i >= 0 && i < len(n.Content) {
				next = deref(n.Content[i])
			}
		}
		if next == nil {
			return n
		}
		n = next
	}
	return n
}
