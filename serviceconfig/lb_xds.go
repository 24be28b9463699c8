package serviceconfig

import "github.com/grpc-config-dns/grpc-config-dns/internal/jtree"

// The xDS policies of service_config.proto. They are useless from DNS (an
// xDS resolver gives them their clusters and endpoints), so lint warns when
// one is chosen (lb-policy-xds), but a config naming one is still judged
// by the spec: the shape service_config.proto gives the message, with the
// fields marked "Required" there, or that C-core, the one client that
// registers these policies without an xDS resolver, requires.

// checkCds: CdsConfig, "string cluster = 1; // Required." (C-core's cds.cc
// agrees: Field("cluster"), OptionalField("isDynamic")).
func checkCds(c *checker, cfg int32) {
	policyFields(c, cfg, "cds_experimental", []pfield{
		{"cluster", stringField("cds_experimental.cluster")},
		{"isDynamic", boolField("cds_experimental.isDynamic")},
	})
	require(c, cfg, "cds_experimental", "cluster")
}

// checkXdsClusterImpl: XdsClusterImplLoadBalancingPolicyConfig, whose
// cluster is "Required". C-core (xds_cluster_impl.cc) reads the cluster
// name from "clusterName" instead and rejects a config without it, so a
// config valid for the spec works in C-core only with both.
func checkXdsClusterImpl(c *checker, cfg int32) {
	const p = "xds_cluster_impl_experimental"
	ignore := func(*checker, int32) {} // deprecated fields, not used any more
	policyFields(c, cfg, p, []pfield{
		{"cluster", stringField(p + ".cluster")},
		{"clusterName", stringField(p + ".clusterName")}, // C-core's
		{"childPolicy", childPolicy(p)},
		{"edsServiceName", stringField(p + ".edsServiceName")},
		{"lrsLoadReportingServerName", stringField(p + ".lrsLoadReportingServerName")},
		{"lrsLoadReportingServer", ignore},
		{"maxConcurrentRequests", ignore},
		{"dropCategories", ignore},
		{"telemetryLabels", ignore},
	})
	switch {
	case c.field(cfg, "cluster") < 0 && c.field(cfg, "clusterName") >= 0:
		c.report(cfg, codeLBPolicyConfig, "%s is missing cluster, which service_config.proto requires: clusterName is C-core's name for it, which the spec does not know; set cluster too", p)
	case c.field(cfg, "cluster") < 0:
		require(c, cfg, p, "cluster")
	case c.field(cfg, "clusterName") < 0:
		c.refuse(cfg, codeLBPolicyUnsupported, clientCore, "%s has no clusterName: C-core, which registers the policy, reads the cluster name from clusterName, not from the spec's cluster, and rejects the whole config; set both", p)
	}
	require(c, cfg, p, "childPolicy")
}

// checkOverrideHost: OverrideHostLoadBalancingPolicyConfig; C-core
// (xds_override_host.cc) requires clusterName and the child policy.
func checkOverrideHost(name string) func(c *checker, cfg int32) {
	return overrideHostPolicy(name).check // one body for both names (lb.go)
}

// overrideHostPolicy is the name of an override host policy.
type overrideHostPolicy string

func (p overrideHostPolicy) check(c *checker, cfg int32) {
	name := string(p)
	policyFields(c, cfg, name, []pfield{
		{"clusterName", stringField(name + ".clusterName")},
		{"childPolicy", childPolicy(name)},
		{"overrideHostStatus", func(*checker, int32) {}}, // deprecated
	})
	require(c, cfg, name, "clusterName", "childPolicy")
}

// checkWrrLocality: XdsWrrLocalityLoadBalancingPolicyConfig; C-core
// (xds_wrr_locality.cc) requires the child policy.
func checkWrrLocality(c *checker, cfg int32) {
	const p = "xds_wrr_locality_experimental"
	policyFields(c, cfg, p, []pfield{{"childPolicy", childPolicy(p)}})
	require(c, cfg, p, "childPolicy")
}

// childMap checks a map<string, message> field whose values are checked by
// each.
func childMap(what string, each func(c *checker, v int32)) func(*checker, int32) {
	return childMapField{what, each}.check // one body (lb.go's durationField)
}

type childMapField struct {
	what string
	each func(c *checker, v int32)
}

func (f childMapField) check(c *checker, v int32) {
	if c.want(v, jtree.Object, codeLBPolicyConfig, f.what) {
		c.fields(v, func(_, e int32) {
			if c.want(e, jtree.Object, codeLBPolicyConfig, "an entry of "+f.what) {
				f.each(c, e)
			}
		})
	}
}

// checkPriority: PriorityLoadBalancingPolicyConfig, children by name and
// the priorities naming them in order. C-core (priority.cc) requires both
// fields and each child's config, and rejects a priority that names no
// child ("unknown priorit(ies)").
func checkPriority(c *checker, cfg int32) {
	const p = "priority_experimental"
	t := c.t
	policyFields(c, cfg, p, []pfield{
		{"children", childMap(p+".children", func(c *checker, e int32) {
			// proto3 JSON parsers accept a field's proto name as well as
			// its JSON name; C-core reads ignore_reresolution_requests only.
			policyFields(c, e, p+" child", []pfield{
				{"config", childPolicy(p)},
				{"ignoreReresolutionRequests", boolField(p + " child.ignoreReresolutionRequests")},
				{"ignore_reresolution_requests", boolField(p + " child.ignore_reresolution_requests")},
			})
			require(c, e, p+" child", "config")
		})},
		{"priorities", func(c *checker, v int32) {
			if !c.want(v, jtree.Array, codeLBPolicyConfig, p+".priorities") {
				return
			}
			children := c.field(cfg, "children")
			c.elements(v, func(_ int, e int32) {
				if c.want(e, jtree.String, codeLBPolicyConfig, "a priority") && children >= 0 && t.Nodes[children].Kind == jtree.Object && c.field(children, t.Str(e)) < 0 {
					c.report(e, codeLBPolicyConfig, "priority %s names no entry of %s.children", t.Raw(e), p)
				}
			})
		}},
	})
	require(c, cfg, p, "children", "priorities")
}

// checkWeightedTarget: WeightedTargetLoadBalancingPolicyConfig. grpc-go
// registers it too (its weightedroundrobin package imports it) and reads
// the message as proto3 does: targets and weight may be left out (an
// empty map, a weight of 0). C-core requires both (weighted_target.cc:
// Field("targets"), Field("weight")), so leaving one out is valid with a
// warning naming C-core. A target's child policy list must name a policy
// (service_config.proto, LoadBalancingConfig: "If the list doesn't contain
// any supported policy, the whole service config is invalid"; grpc-go has
// nothing to build without one).
func checkWeightedTarget(c *checker, cfg int32) {
	const p = "weighted_target_experimental"
	policyFields(c, cfg, p, []pfield{
		{"targets", childMap(p+".targets", func(c *checker, e int32) {
			policyFields(c, e, p+" target", []pfield{
				{"weight", func(c *checker, v int32) {
					c.protoNumber(v, p+" target.weight", codeLBPolicyConfig, numUint32, clientGo)
				}},
				{"childPolicy", childPolicy(p)},
			})
			require(c, e, p+" target", "childPolicy")
			if c.field(e, "weight") < 0 {
				c.refuse(e, codeProtoDefaultValue, clientCore, "this %s target has no weight, which proto3 reads as 0 (grpc-go agrees), but C-core requires it and rejects the whole config; set \"weight\"", p)
			}
		})},
	})
	if c.field(cfg, "targets") < 0 {
		c.refuse(cfg, codeProtoDefaultValue, clientCore, "%s has no targets, which proto3 reads as none (grpc-go agrees), but C-core requires the field and rejects the whole config; set \"targets\"", p)
	}
}

// checkClusterManager: XdsClusterManagerLoadBalancingPolicyConfig; C-core
// (xds_cluster_manager.cc) requires the children and each child's policy.
func checkClusterManager(c *checker, cfg int32) {
	const p = "xds_cluster_manager_experimental"
	policyFields(c, cfg, p, []pfield{
		{"children", childMap(p+".children", func(c *checker, e int32) {
			policyFields(c, e, p+" child", []pfield{{"childPolicy", childPolicy(p)}})
			require(c, e, p+" child", "childPolicy")
		})},
	})
	require(c, cfg, p, "children")
}
