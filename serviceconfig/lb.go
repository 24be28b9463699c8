package serviceconfig

import (
	"slices"
	"strings"

	"github.com/grpc-config-dns/grpc-config-dns/serviceconfig/internal/jtree"
)

// lbPolicy describes a load-balancing policy that gRPC clients ship and that
// makes sense in a DNS-published config. check validates its config object;
// nil accepts any object.
type lbPolicy struct {
	name   string
	fields []string
	check  func(c *checker, cfg int32)
}

// lbPolicies lists the policies gRPC clients know without xDS. Policies that
// only xDS builds (cds, priority, xds_cluster_impl…) are left out: a DNS
// record naming them alone would fail every client.
var lbPolicies []lbPolicy

func init() {
	lbPolicies = []lbPolicy{
		{name: "pick_first", fields: []string{"shuffleAddressList"}, check: func(c *checker, cfg int32) {
			lbFields(c, cfg, "pick_first", map[string]jtree.Kind{"shuffleAddressList": jtree.Bool})
		}},
		{name: "round_robin", fields: nil, check: func(c *checker, cfg int32) {
			lbFields(c, cfg, "round_robin", nil)
		}},
		{name: "weighted_round_robin", check: checkWRR},
		{name: "least_request_experimental", check: checkLeastRequest},
		{name: "ring_hash_experimental", check: checkRingHash},
		{name: "grpclb", check: func(c *checker, cfg int32) {
			lbFields(c, cfg, "grpclb", map[string]jtree.Kind{"childPolicy": jtree.Array, "serviceName": jtree.String})
		}},
		{name: "rls_experimental", check: func(c *checker, cfg int32) {
			for _, req := range []string{"routeLookupConfig", "childPolicy", "childPolicyConfigTargetFieldName"} {
				if c.t.Get(cfg, req) < 0 {
					c.report(cfg, "lb-policy-config", "rls_experimental config is missing %s", req)
				}
			}
		}},
		{name: "outlier_detection_experimental", check: func(c *checker, cfg int32) {
			v := c.t.Get(cfg, "childPolicy")
			if v < 0 {
				c.report(cfg, "lb-policy-config", "outlier_detection_experimental config is missing childPolicy")
				return
			}
			c.pushKey(keyNodeOf(c.t, cfg, v))
			validateLBConfigList(c, v)
			c.pop()
		}},
	}
}

func lookupLBPolicy(name string) *lbPolicy {
	for i := range lbPolicies {
		if lbPolicies[i].name == name {
			return &lbPolicies[i]
		}
	}
	return nil
}

func lbPolicyNames() []string {
	out := make([]string, len(lbPolicies))
	for i, p := range lbPolicies {
		out[i] = p.name
	}
	return out
}

// validateLBConfigList checks a loadBalancingConfig list: each entry an
// object with exactly one policy; at least one policy known to clients.
// Clients use the first entry they know, so that entry's config is checked.
func validateLBConfigList(c *checker, v int32) {
	t := c.t
	if !c.want(v, jtree.Array, "lb-config", "loadBalancingConfig") {
		return
	}
	known := false
	c.elements(v, func(_ int, e int32) {
		if !c.want(e, jtree.Object, "lb-config", "a loadBalancingConfig entry") {
			return
		}
		// An entry that names a known policy counts as one even when it is
		// malformed: that is a different problem, reported on its own.
		for k := t.Nodes[e].First; k >= 0; k = t.Nodes[t.Nodes[k].Next].Next {
			if lookupLBPolicy(t.Str(k)) != nil {
				known = true
			}
		}
		if t.Nodes[e].Len != 1 {
			c.report(e, "lb-config", "a loadBalancingConfig entry must hold exactly one policy, like {\"round_robin\":{}}, not %d; list alternatives as separate entries, most preferred first", t.Nodes[e].Len)
			return
		}
		k := t.Nodes[e].First
		cfg := t.Nodes[k].Next
		c.pushKey(k)
		defer c.pop()
		if !c.want(cfg, jtree.Object, "lb-config", "the config of policy "+string(t.Raw(k))) {
			return
		}
		p := lookupLBPolicy(t.Str(k))
		if p == nil {
			return
		}
		// Every known entry is checked, not only the first: a client that
		// lacks the first policy falls back to the next one.
		if p.check != nil {
			p.check(c, cfg)
		}
	})
	if !known && t.Nodes[v].Len > 0 {
		msg := "loadBalancingConfig names no policy gRPC clients know, so they reject the config; add a fallback such as {\"round_robin\":{}} (known: " + strings.Join(lbPolicyNames(), ", ") + ")"
		if e := t.Nodes[v].First; t.Nodes[e].Kind == jtree.Object && t.Nodes[e].Len == 1 {
			if s := Suggest(t.Str(t.Nodes[e].First), lbPolicyNames()); s != "" {
				msg = "loadBalancingConfig names no policy gRPC clients know: did you mean \"" + s + "\"?"
			}
		}
		c.report(v, "lb-no-known-policy", "%s", msg)
	}
	if t.Nodes[v].Len == 0 {
		c.report(v, "lb-config", "loadBalancingConfig is an empty list: name a policy, like [{\"round_robin\":{}}], or remove the field")
	}
}

// validateLBPolicy checks the deprecated loadBalancingPolicy field.
func validateLBPolicy(c *checker, v int32) {
	t := c.t
	if !c.want(v, jtree.String, "lb-policy", "loadBalancingPolicy") {
		return
	}
	name := t.Str(v)
	switch name {
	case "pick_first", "round_robin":
		return
	}
	if p := lookupLBPolicy(strings.ToLower(name)); p != nil && (p.name == "pick_first" || p.name == "round_robin") {
		c.report(v, "lb-policy", "loadBalancingPolicy %q must be lower-case: write %q", name, p.name)
		return
	}
	if lookupLBPolicy(name) != nil {
		c.report(v, "lb-policy", "loadBalancingPolicy %q cannot be configured this way: use \"loadBalancingConfig\":[{%q:{}}]", name, name)
		return
	}
	msg := "loadBalancingPolicy " + string(t.Raw(v)) + " is not a policy gRPC clients know: use \"round_robin\" or \"pick_first\""
	if s := Suggest(name, []string{"round_robin", "pick_first"}); s != "" {
		msg = "loadBalancingPolicy " + string(t.Raw(v)) + " is not a policy gRPC clients know: did you mean \"" + s + "\"?"
	}
	c.report(v, "lb-policy", "%s", msg)
}

// lbFields checks that cfg holds only the given fields with the given kinds.
func lbFields(c *checker, cfg int32, policy string, fields map[string]jtree.Kind) {
	t := c.t
	names := make([]string, 0, len(fields))
	for n := range fields {
		names = append(names, n)
	}
	slices.Sort(names)
	c.members(cfg, func(k, v int32) {
		want, ok := fields[t.Str(k)]
		switch {
		case !ok:
			c.unknownField(k, "unknown-field", policy+" config", names)
		case t.Is(k, "childPolicy"):
			validateLBConfigList(c, v)
		default:
			c.want(v, want, "lb-policy-config", policy+"."+t.Str(k))
		}
	})
}

func checkWRR(c *checker, cfg int32) {
	t := c.t
	c.members(cfg, func(k, v int32) {
		switch {
		case t.Is(k, "enableOobLoadReport"):
			c.want(v, jtree.Bool, "lb-policy-config", "weighted_round_robin.enableOobLoadReport")
		case t.Is(k, "oobReportingPeriod"), t.Is(k, "blackoutPeriod"), t.Is(k, "weightExpirationPeriod"), t.Is(k, "weightUpdatePeriod"):
			if d, ok := duration(c, v, "weighted_round_robin."+t.Str(k)); ok && d.neg() {
				c.report(v, "lb-policy-config", "weighted_round_robin.%s must not be negative", t.Str(k))
			}
		case t.Is(k, "errorUtilizationPenalty"):
			if c.want(v, jtree.Number, "lb-policy-config", "weighted_round_robin.errorUtilizationPenalty") {
				if f, ok := t.Float(v); !ok || f < 0 {
					c.report(v, "lb-policy-config", "weighted_round_robin.errorUtilizationPenalty must not be negative")
				}
			}
		default:
			c.unknownField(k, "unknown-field", "weighted_round_robin config", []string{"enableOobLoadReport", "oobReportingPeriod", "blackoutPeriod", "weightExpirationPeriod", "weightUpdatePeriod", "errorUtilizationPenalty"})
		}
	})
}

func checkLeastRequest(c *checker, cfg int32) {
	t := c.t
	c.members(cfg, func(k, v int32) {
		if !t.Is(k, "choiceCount") {
			c.unknownField(k, "unknown-field", "least_request_experimental config", []string{"choiceCount"})
			return
		}
		if n, ok := t.Int(v); c.kind(v) != jtree.Number || !ok || n < 2 {
			c.report(v, "lb-policy-config", "least_request_experimental.choiceCount must be a whole number of at least 2 (clients cap it at 10), not %s", describeKind(t, v))
		}
	})
}

// ringHashMax is the largest ring gRPC clients build (gRFC A42).
const ringHashMax = 8 * 1024 * 1024

func checkRingHash(c *checker, cfg int32) {
	t := c.t
	var minSize, maxSize int64 = -1, -1
	c.members(cfg, func(k, v int32) {
		switch {
		case t.Is(k, "minRingSize"), t.Is(k, "maxRingSize"):
			n, ok := t.Int(v)
			if c.kind(v) != jtree.Number || !ok || n < 1 || n > ringHashMax {
				c.report(v, "lb-policy-config", "ring_hash_experimental.%s must be a whole number from 1 to %d, not %s", t.Str(k), ringHashMax, describeKind(t, v))
				return
			}
			if t.Is(k, "minRingSize") {
				minSize = n
			} else {
				maxSize = n
			}
		case t.Is(k, "requestHashHeader"):
			c.want(v, jtree.String, "lb-policy-config", "ring_hash_experimental.requestHashHeader")
		default:
			c.unknownField(k, "unknown-field", "ring_hash_experimental config", []string{"minRingSize", "maxRingSize", "requestHashHeader"})
		}
	})
	// Defaults from gRFC A42: an absent bound still constrains the other.
	if minSize < 0 && maxSize < 0 {
		return
	}
	minVal, maxVal := minSize, maxSize
	if minVal < 0 {
		minVal = ringHashDefaultMin
	}
	if maxVal < 0 {
		maxVal = ringHashDefaultMax
	}
	if minVal > maxVal {
		c.report(cfg, "lb-policy-config", "ring_hash_experimental.minRingSize (%d%s) is larger than maxRingSize (%d%s)", minVal, defaultNote(minSize), maxVal, defaultNote(maxSize))
	}
}

// The defaults of minRingSize and maxRingSize (gRFC A42's LB policy
// config; grpc-go 1.85 balancer/ringhash): a minRingSize above 4096 needs
// an explicit maxRingSize.
const (
	ringHashDefaultMin = 1024
	ringHashDefaultMax = 4096
)

func defaultNote(v int64) string {
	if v < 0 {
		return ", the default"
	}
	return ""
}
