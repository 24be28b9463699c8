package model

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"maps"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	sc "github.com/grpc-config-dns/grpc-config-dns/serviceconfig"
	"github.com/grpc-config-dns/grpc-config-dns/serviceconfig/policy"
)

// A store keeps a zone's policies as objects of their own, beside its
// services: ValidatePolicy checks one, WithPolicies gives a zone (read by
// ValidateZone) the policies its services are then validated under.

// ValidatePolicy checks the spec of policy name of zone z (YAML or JSON:
// targetRef and default, and the name again if it likes, which must then
// be the same) with the rules of a policy in a publisher config, and
// returns the policy or nil and diagnostics holding an error.
func ValidatePolicy(z *Zone, name string, spec []byte) (*policy.Policy, sc.Diagnostics) {
	d, root := specDoc(spec, "policy "+name, nil)
	if root == nil {
		return nil, d.diagnostics()
	}
	if msg := policy.CheckName(name); msg != "" {
		d.report(root, "/name", codePolicy, "policy name %q: %s", name, msg)
		return nil, d.diagnostics()
	}
	if v, s := d.specName(root, "name", name); v != nil && (s == nil || s.Kind != yaml.ScalarNode || strings.TrimSpace(s.Value) != name) {
		d.report(v, "/name", codeFieldType, "the spec's name is not the policy's name %s: leave name out, or make it the same", name)
		return nil, d.diagnostics()
	}
	p, _ := d.policy(root, "", z)
	ds := d.diagnostics()
	if ds.HasErrors() || p == nil {
		return nil, ds
	}
	return p, ds
}

// WithPolicies returns a copy of z, without services, whose services are
// merged with ps (policies of z from ValidatePolicy, in any order) when
// validated. Diagnostics that a policy's value causes in a service are
// placed in the policy: their path is the pointer into the policy's spec
// (/default/…), and their message names the policy, the service and the
// field. It fails when two policies have the same name.
func (z *Zone) WithPolicies(ps []*policy.Policy) (*Zone, error) {
	out := *z
	out.Services, out.Policies, out.PolicySet, out.policyAt = nil, nil, nil, nil
	if len(ps) == 0 {
		return &out, nil
	}
	set, err := policy.NewSet(ps)
	if err != nil {
		return nil, err
	}
	out.Policies = slices.Clone(ps)
	slices.SortFunc(out.Policies, policy.Less)
	out.PolicySet = set
	out.policyAt = make(map[string]*policyPlace, len(ps))
	for _, p := range out.Policies {
		if _, dup := out.policyAt[p.Name]; dup {
			return nil, fmt.Errorf("zone %s has two policies named %s", z.Origin, p.Name)
		}
		sum := sha256.Sum256(fmt.Appendf(slices.Clone(p.Default), "|%s|%v|%s|%v", p.Name, p.TargetRef.Kind, p.TargetRef.Name, p.TargetRef.Labels))
		out.policyAt[p.Name] = &policyPlace{digest: string(sum[:])}
	}
	return &out, nil
}

// ServiceTarget is what policies of zone z select service name (relative
// or absolute) by: its metadata labels, or, for an object stored before
// labels moved to metadata, the labels of its spec (which ValidateService
// then reads too).
func (z *Zone) ServiceTarget(name string, labels map[string]string, spec []byte) policy.Target {
	return policy.Target{Name: absName(name, z.Origin), Labels: ServiceLabels(labels, spec)}
}

// ServiceLabels returns the labels of a stored service: those of its
// metadata, else those its spec holds (where an older version wrote
// them), read as validation reads them (a scalar 1 is the label "1"), so
// that a policy selects the services validation applies it to. Nil when
// the spec has none, or invalid ones (its validation fails).
func ServiceLabels(labels map[string]string, spec []byte) map[string]string {
	if len(labels) > 0 {
		return labels
	}
	// The key is written as it is, or with an escape (JSON writes a
	// letter escaped only as \u): no spec without either has labels.
	if !bytes.Contains(spec, []byte("labels")) && bytes.IndexByte(spec, '\\') < 0 {
		return nil
	}
	d, root := specDoc(spec, "a service", nil)
	if root == nil {
		return nil
	}
	k, v := member(root, "labels")
	if k == nil {
		return nil
	}
	out, ok := d.labels(v, "/labels")
	if !ok || len(out) == 0 {
		return nil
	}
	return out
}

// addLabels adds labels: {…} to mapping n, with no position: diagnostics
// about them carry their path only.
func addLabels(n *yaml.Node, labels map[string]string) {
	m := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		m.Content = append(m.Content,
			&yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: k},
			&yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: labels[k], Style: yaml.DoubleQuotedStyle})
	}
	n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: "labels"}, m)
}
