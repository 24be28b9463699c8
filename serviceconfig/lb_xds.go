package serviceconfig

import "github.com/grpc-config-dns/grpc-config-dns/serviceconfig/internal/jtree"

// The xDS policies of service_config.proto. They are useless from DNS (an
// xDS resolver gives them their clusters and endpoints), so lint warns when
// one is chosen (lb-policy-xds), but a config naming one is still judged
// by the spec: the shape service_config.proto gives the message, with the
// fields marked "Required" there, or that C-core, the one client that
// registers these policies without an xDS resolver, requires.

func checkCds(c *checker, cfg int32) {
	policyFields(c, cfg, "cds_experimental", []pfield{
		{"cluster", stringField("cds_experimental.cluster")},
		{"isDynamic", boolField("cds_experimental.isDynamic")},
	})
	require(c, cfg, "cds_experimental", "cluster")
}

func checkXdsClusterImpl(c *checker, cfg int32) {
	const p = "xds_cluster_impl_experimental"
	ignore := func(*checker, int32) {} // deprecated fields, not used any more
	policyFields(c, cfg, p, []pfield{
		{"cluster", stringField(p + ".cluster")},
		{"childPolicy", childPolicy(p)},
		{"edsServiceName", stringField(p + ".edsServiceName")},
		{"lrsLoadReportingServerName", stringField(p + ".lrsLoadReportingServerName")},
		{"lrsLoadReportingServer", ignore},
		{"maxConcurrentRequests", ignore},
		{"dropCategories", ignore},
		{"telemetryLabels", ignore},
	})
	require(c, cfg, p, "cluster", "childPolicy")
}

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

func checkPriority(c *checker, cfg int32) {
	const p = "priority_experimental"
	t := c.t
	policyFields(c, cfg, p, []pfield{
		{"children", childMap(p+".children", func(c *checker, e int32) {
			policyFields(c, e, p+" child", []pfield{
				{"config", childPolicy(p)},
				{"ignoreReresolutionRequests", boolField(p + " child.ignoreReresolutionRequests")},
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

func checkWeightedTarget(c *checker, cfg int32) {
	const p = "weighted_target_experimental"
	policyFields(c, cfg, p, []pfield{
		{"targets", childMap(p+".targets", func(c *checker, e int32) {
			policyFields(c, e, p+" target", []pfield{
				{"weight", func(c *checker, v int32) {
					c.protoNumber(v, p+" target.weight", codeLBPolicyConfig, numUint32, 0)
				}},
				{"childPolicy", childPolicy(p)},
			})
			require(c, e, p+" target", "childPolicy")
		})},
	})
	require(c, cfg, p, "targets")
}

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
