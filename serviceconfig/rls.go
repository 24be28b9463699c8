package serviceconfig

import (
	"strings"

	"github.com/grpc-config-dns/grpc-config-dns/serviceconfig/internal/jtree"
)

// The rls_experimental policy: RlsLoadBalancingPolicyConfig of
// service_config.proto around grpc.lookup.v1.RouteLookupConfig
// (grpc/lookup/v1/rls_config.proto). Its validation rules are those of the
// gRPC RLS design, which grpc-go (balancer/rls/config.go, where they are
// listed), C-core (rls.cc) and grpc-java (RlsProtoConverters) implement
// alike; their tests are in testdata/peers.

const rlsName = "rls_experimental"

// knownSchemes are the target schemes gRPC clients resolve without extra
// registration; a lookupService with another scheme needs a resolver the
// application registers.
var knownSchemes = []string{"dns", "ipv4", "ipv6", "unix", "unix-abstract", "passthrough", "xds", "google-c2p", "vsock", "dnsconfig"}

func checkRLS(c *checker, cfg int32) {
	const rls = rlsName + "."
	policyFields(c, cfg, rlsName, []pfield{
		{"routeLookupConfig", checkRouteLookupConfig},
		// "if specified, must parse as valid service config".
		{"routeLookupChannelServiceConfig", func(c *checker, v int32) {
			if c.want(v, jtree.Object, "lb-policy-config", rls+"routeLookupChannelServiceConfig") {
				validateServiceConfig(c, v)
			}
		}},
		// "must find a valid child policy with a valid config".
		{"childPolicy", childPolicy(rlsName)},
		// "must be set and non-empty".
		{"childPolicyConfigTargetFieldName", func(c *checker, v int32) {
			if c.want(v, jtree.String, "lb-policy-config", rls+"childPolicyConfigTargetFieldName") && c.t.Str(v) == "" {
				c.report(v, "lb-policy-config", "%schildPolicyConfigTargetFieldName must not be empty: it names the field of the child policy's config that receives the target", rls)
			}
		}},
	})
	require(c, cfg, rlsName, "routeLookupConfig", "childPolicy", "childPolicyConfigTargetFieldName")
}

func checkRouteLookupConfig(c *checker, rlc int32) {
	const what = rlsName + ".routeLookupConfig"
	t := c.t
	if !c.want(rlc, jtree.Object, "lb-policy-config", what) {
		return
	}
	paths := map[string]bool{}
	policyFields(c, rlc, what, []pfield{
		{"grpcKeybuilders", func(c *checker, v int32) {
			// "must have at least one entry"; "must not have two entries
			// with the same Name".
			if !c.want(v, jtree.Array, "lb-policy-config", what+".grpcKeybuilders") {
				return
			}
			if t.Nodes[v].Len == 0 {
				c.report(v, "lb-policy-config", "%s.grpcKeybuilders must have at least one key builder", what)
			}
			c.elements(v, func(_ int, kb int32) { checkKeyBuilder(c, kb, paths) })
		}},
		{"httpKeybuilders", func(c *checker, v int32) {
			// Used by HTTP proxies, not gRPC clients, which ignore it.
			c.want(v, jtree.Array, "lb-policy-config", what+".httpKeybuilders")
		}},
		{"lookupService", func(c *checker, v int32) {
			// "must be set and must parse as a target URI".
			if !c.want(v, jtree.String, "lb-policy-config", what+".lookupService") {
				return
			}
			s := t.Str(v)
			if s == "" {
				c.report(v, "lb-policy-config", "%s.lookupService must not be empty: write the lookup service's target, like \"rls.example.com:443\"", what)
				return
			}
			lookupScheme(c, v, s)
		}},
		{"lookupServiceTimeout", durationField(what+".lookupServiceTimeout", clientCore)},
		{"maxAge", durationField(what+".maxAge", clientCore)},
		{"staleAge", durationField(what+".staleAge", clientCore)},
		{"cacheSizeBytes", func(c *checker, v int32) {
			// An int64, which proto3 JSON writes as a string. rls_config.proto:
			// "If this field is omitted or set to zero, a client default will
			// be used"; grpc-go and C-core require it greater than 0 (the RLS
			// design), grpc-java takes an absent one as the default.
			n, ok := c.protoNumber(v, what+".cacheSizeBytes", "lb-policy-config", numInt64, 0)
			switch {
			case ok && n.i < 0:
				c.report(v, "lb-policy-config", "%s.cacheSizeBytes must not be negative, not %s", what, t.Raw(v))
			case ok && n.i == 0:
				who := clientGo | clientCore | clientJava
				c.refuse(v, "proto-default-value", who, "%s.cacheSizeBytes is 0, which rls_config.proto reads as the client default, but %s reject the whole config; set the cache size in bytes, like \"1048576\"", what, who)
			}
		}},
		{"validTargets", func(c *checker, v int32) {
			if c.want(v, jtree.Array, "lb-policy-config", what+".validTargets") {
				c.elements(v, func(_ int, e int32) { c.want(e, jtree.String, "lb-policy-config", "a validTargets entry") })
			}
		}},
		{"defaultTarget", func(c *checker, v int32) {
			if c.want(v, jtree.String, "lb-policy-config", what+".defaultTarget") && t.Str(v) == "" {
				// proto3: an empty string is the field unset.
				c.refuse(v, "proto-default-value", clientCore, "%s.defaultTarget is empty, which proto3 reads as unset, but C-core rejects the whole config; remove it", what)
			}
		}},
	})
	require(c, rlc, what, "grpcKeybuilders", "lookupService")
	if c.field(rlc, "cacheSizeBytes") < 0 {
		who := clientGo | clientCore
		c.refuse(rlc, "proto-default-value", who, "%s has no cacheSizeBytes, which rls_config.proto allows (a client default is used, as grpc-java does), but %s reject the whole config; set the cache size in bytes, like \"cacheSizeBytes\":\"1048576\"", what, who)
	}
	// "if stale_age is set, then max_age must also be set".
	if c.field(rlc, "staleAge") >= 0 && c.field(rlc, "maxAge") < 0 {
		c.report(rlc, "lb-policy-config", "%s sets staleAge without maxAge: set maxAge too (staleAge only shortens it)", what)
	}
}

// checkKeyBuilder checks one GrpcKeyBuilder: "must have at least one Name";
// "must not have a Name with the service field unset or empty"; each
// headers entry "must not have required_match set" and "must not have key
// unset or empty"; "across all headers, constant_keys and extra_keys
// fields: must not have the same key specified twice".
func checkKeyBuilder(c *checker, kb int32, paths map[string]bool) {
	const what = rlsName + ".routeLookupConfig.grpcKeybuilders[]"
	t := c.t
	if !c.want(kb, jtree.Object, "lb-policy-config", "a grpcKeybuilders entry") {
		return
	}
	keys := map[string]bool{}
	key := func(v int32, where string) {
		k := t.Str(v)
		if keys[k] {
			c.report(v, "lb-policy-config", "key %q is used twice in this key builder (%s): headers, constantKeys and extraKeys must name different keys", k, where)
		}
		keys[k] = true
	}
	policyFields(c, kb, what, []pfield{
		{"names", func(c *checker, v int32) {
			if !c.want(v, jtree.Array, "lb-policy-config", "names") {
				return
			}
			if t.Nodes[v].Len == 0 {
				c.report(v, "lb-policy-config", "a key builder's names must list at least one {\"service\":…}")
			}
			c.elements(v, func(_ int, n int32) {
				if !c.want(n, jtree.Object, "lb-policy-config", "a key builder name") {
					return
				}
				service, method := "", ""
				policyFields(c, n, "a key builder name", []pfield{
					{"service", func(c *checker, v int32) {
						if c.want(v, jtree.String, "lb-policy-config", "service") {
							service = t.Str(v)
						}
					}},
					{"method", func(c *checker, v int32) {
						if c.want(v, jtree.String, "lb-policy-config", "method") {
							method = t.Str(v)
						}
					}},
				})
				if service == "" {
					c.report(n, "lb-policy-config", "a key builder name needs a service: the service field is required")
					return
				}
				p := "/" + service + "/" + method
				if paths[p] {
					c.report(n, "lb-policy-config", "%s is named by two key builder names: each must be unique across grpcKeybuilders", p)
				}
				paths[p] = true
			})
		}},
		{"headers", func(c *checker, v int32) {
			if !c.want(v, jtree.Array, "lb-policy-config", "headers") {
				return
			}
			c.elements(v, func(_ int, h int32) {
				if !c.want(h, jtree.Object, "lb-policy-config", "a headers entry") {
					return
				}
				policyFields(c, h, "a headers entry", []pfield{
					{"key", func(c *checker, v int32) {
						if c.want(v, jtree.String, "lb-policy-config", "key") {
							if t.Str(v) == "" {
								c.report(v, "lb-policy-config", "a headers entry's key must not be empty")
								return
							}
							key(v, "headers")
						}
					}},
					{"names", func(c *checker, v int32) {
						if !c.want(v, jtree.Array, "lb-policy-config", "names") {
							return
						}
						if t.Nodes[v].Len == 0 {
							c.report(v, "lb-policy-config", "a headers entry must list at least one header name")
						}
						c.elements(v, func(_ int, e int32) {
							if c.want(e, jtree.String, "lb-policy-config", "a header name") && t.Str(e) == "" {
								c.report(e, "lb-policy-config", "a header name must not be empty")
							}
						})
					}},
					{"requiredMatch", func(c *checker, v int32) {
						if c.want(v, jtree.Bool, "lb-policy-config", "requiredMatch") && t.Bool(v) {
							c.report(v, "lb-policy-config", "requiredMatch must not be set for gRPC key builders (rls_config.proto: \"For gRPC, it is an error to specify required_match\")")
						}
					}},
				})
				if c.field(h, "key") < 0 {
					c.report(h, "lb-policy-config", "a headers entry needs a key")
				}
				if c.field(h, "names") < 0 {
					c.report(h, "lb-policy-config", "a headers entry needs names")
				}
			})
		}},
		{"extraKeys", func(c *checker, v int32) {
			if !c.want(v, jtree.Object, "lb-policy-config", "extraKeys") {
				return
			}
			extra := func(c *checker, v int32) {
				if !c.want(v, jtree.String, "lb-policy-config", "an extraKeys value") {
					return
				}
				if t.Str(v) == "" {
					// proto3: "" is unset; C-core rejects it as set.
					c.refuse(v, "proto-default-value", clientCore, "this extraKeys value is empty, which proto3 reads as unset, but C-core rejects the whole config; remove it")
					return
				}
				key(v, "extraKeys")
			}
			policyFields(c, v, "extraKeys", []pfield{{"host", extra}, {"service", extra}, {"method", extra}})
		}},
		{"constantKeys", func(c *checker, v int32) {
			if !c.want(v, jtree.Object, "lb-policy-config", "constantKeys") {
				return
			}
			c.fields(v, func(k, val int32) {
				if t.Str(k) == "" {
					c.report(k, "lb-policy-config", "a constantKeys key must not be empty")
				} else {
					key(k, "constantKeys")
				}
				c.want(val, jtree.String, "lb-policy-config", "a constantKeys value")
			})
		}},
	})
	if n := c.field(kb, "names"); n < 0 {
		c.report(kb, "lb-policy-config", "a key builder needs names, like [{\"service\":\"pkg.Service\"}]")
	}
}

// lookupScheme warns about a lookupService whose scheme clients cannot
// resolve. grpc-go parses the target as a URL, so a "host:port" has the
// scheme "host" for it and fails unless a resolver has that name; C-core and
// grpc-java retry such a target with "dns:///" in front.
func lookupScheme(c *checker, v int32, s string) {
	const what = rlsName + ".routeLookupConfig.lookupService"
	i := strings.IndexByte(s, ':')
	if i <= 0 || !isScheme(s[:i]) || contains(knownSchemes, strings.ToLower(s[:i])) {
		return
	}
	if strings.HasPrefix(s[i:], "://") {
		who := clientGo | clientCore | clientJava
		c.refuse(v, "rls-lookup-scheme", who, "%s %s uses the scheme %q, for which clients have no resolver unless the application registers one: %s reject the whole config; write a target like \"dns:///rls.example.com:443\"", what, c.t.Raw(v), s[:i], who)
		return
	}
	c.refuse(v, "rls-lookup-scheme", clientGo, "%s %s is valid for C-core and grpc-java, which resolve it with dns, but grpc-go parses %q as a URI scheme it has no resolver for and rejects the whole config; write \"dns:///%s\"", what, c.t.Raw(v), s[:i], s)
}

// isScheme: RFC 3986 scheme = ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ).
func isScheme(s string) bool {
	for i := 0; i < len(s); i++ {
		b := s[i]
		switch {
		case b >= 'a' && b <= 'z', b >= 'A' && b <= 'Z':
		case i > 0 && (b >= '0' && b <= '9' || b == '+' || b == '-' || b == '.'):
		default:
			return false
		}
	}
	return s != ""
}
