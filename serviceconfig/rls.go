package serviceconfig

import (
	"strings"

	"github.com/grpc-config-dns/grpc-config-dns/internal/jtree"
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
			if c.want(v, jtree.Object, codeLBPolicyConfig, rls+"routeLookupChannelServiceConfig") {
				validateServiceConfig(c, v)
			}
		}},
		// "must find a valid child policy with a valid config".
		{"childPolicy", childPolicy(rlsName)},
		// "must be set and non-empty".
		{"childPolicyConfigTargetFieldName", func(c *checker, v int32) {
			if c.want(v, jtree.String, codeLBPolicyConfig, rls+"childPolicyConfigTargetFieldName") && c.t.Str(v) == "" {
				c.report(v, codeLBPolicyConfig, "%schildPolicyConfigTargetFieldName must not be empty: it names the field of the child policy's config that receives the target", rls)
			}
		}},
	})
	require(c, cfg, rlsName, "routeLookupConfig", "childPolicy", "childPolicyConfigTargetFieldName")
}

func checkRouteLookupConfig(c *checker, rlc int32) {
	const what = rlsName + ".routeLookupConfig"
	t := c.t
	if !c.want(rlc, jtree.Object, codeLBPolicyConfig, what) {
		return
	}
	paths := map[string]bool{}
	policyFields(c, rlc, what, []pfield{
		{"grpcKeybuilders", func(c *checker, v int32) {
			// "must have at least one entry"; "must not have two entries
			// with the same Name".
			if !c.want(v, jtree.Array, codeLBPolicyConfig, what+".grpcKeybuilders") {
				return
			}
			if t.Nodes[v].Len == 0 {
				c.report(v, codeLBPolicyConfig, "%s.grpcKeybuilders must have at least one key builder", what)
			}
			c.elements(v, func(_ int, kb int32) { checkKeyBuilder(c, kb, paths) })
		}},
		{"httpKeybuilders", func(c *checker, v int32) {
			// Used by HTTP proxies, not gRPC clients, which ignore it.
			c.want(v, jtree.Array, codeLBPolicyConfig, what+".httpKeybuilders")
		}},
		{"lookupService", checkLookupService},
		{"lookupServiceTimeout", durationField(what+".lookupServiceTimeout", clientCore)},
		{"maxAge", durationField(what+".maxAge", clientCore)},
		{"staleAge", durationField(what+".staleAge", clientCore)},
		{"cacheSizeBytes", checkCacheSizeBytes},
		{"validTargets", func(c *checker, v int32) {
			if c.want(v, jtree.Array, codeLBPolicyConfig, what+".validTargets") {
				c.elements(v, func(_ int, e int32) { c.want(e, jtree.String, codeLBPolicyConfig, "a validTargets entry") })
			}
		}},
		{"defaultTarget", func(c *checker, v int32) {
			if c.want(v, jtree.String, codeLBPolicyConfig, what+".defaultTarget") && t.Str(v) == "" {
				// proto3: an empty string is the field unset.
				c.refuse(v, codeProtoDefaultValue, clientCore, "%s.defaultTarget is empty, which proto3 reads as unset, but C-core rejects the whole config; remove it", what)
			}
		}},
	})
	require(c, rlc, what, "grpcKeybuilders", "lookupService")
	if c.field(rlc, "cacheSizeBytes") < 0 {
		who := clientGo | clientCore
		c.refuse(rlc, codeProtoDefaultValue, who, "%s has no cacheSizeBytes, which rls_config.proto allows (a client default is used, as grpc-java does), but %s reject the whole config; set the cache size in bytes, like \"cacheSizeBytes\":\"1048576\"", what, who)
	}
	// "if stale_age is set, then max_age must also be set".
	if c.field(rlc, "staleAge") >= 0 && c.field(rlc, "maxAge") < 0 {
		c.report(rlc, codeLBPolicyConfig, "%s sets staleAge without maxAge: set maxAge too (staleAge only shortens it)", what)
	}
}

// checkLookupService checks routeLookupConfig.lookupService: "must be set
// and must parse as a target URI".
func checkLookupService(c *checker, v int32) {
	const what = rlsName + ".routeLookupConfig"
	if !c.want(v, jtree.String, codeLBPolicyConfig, what+".lookupService") {
		return
	}
	s := c.t.Str(v)
	if s == "" {
		c.report(v, codeLBPolicyConfig, "%s.lookupService must not be empty: write the lookup service's target, like \"rls.example.com:443\"", what)
		return
	}
	lookupScheme(c, v, s)
}

// checkCacheSizeBytes checks routeLookupConfig.cacheSizeBytes, an int64,
// which proto3 JSON writes as a string. rls_config.proto: "If this field
// is omitted or set to zero, a client default will be used"; grpc-go and
// C-core require it greater than 0 (the RLS design), grpc-java takes an
// absent one as the default.
func checkCacheSizeBytes(c *checker, v int32) {
	const what = rlsName + ".routeLookupConfig"
	n, ok := c.protoNumber(v, what+".cacheSizeBytes", codeLBPolicyConfig, numInt64, 0)
	switch {
	case ok && n.i < 0:
		c.report(v, codeLBPolicyConfig, "%s.cacheSizeBytes must not be negative, not %s", what, c.t.Raw(v))
	case ok && n.i == 0:
		who := clientGo | clientCore | clientJava
		c.refuse(v, codeProtoDefaultValue, who, "%s.cacheSizeBytes is 0, which rls_config.proto reads as the client default, but %s reject the whole config; set the cache size in bytes, like \"1048576\"", what, who)
	}
}

// checkKeyBuilder checks one GrpcKeyBuilder: "must have at least one Name";
// "must not have a Name with the service field unset or empty"; each
// headers entry "must not have required_match set" and "must not have key
// unset or empty"; "across all headers, constant_keys and extra_keys
// fields: must not have the same key specified twice".
func checkKeyBuilder(c *checker, kb int32, paths map[string]bool) {
	const what = rlsName + ".routeLookupConfig.grpcKeybuilders[]"
	if !c.want(kb, jtree.Object, codeLBPolicyConfig, "a grpcKeybuilders entry") {
		return
	}
	b := &keyBuilder{t: c.t, keys: map[string]bool{}, paths: paths}
	policyFields(c, kb, what, []pfield{
		{"names", b.names},
		{"headers", b.headers},
		{"extraKeys", b.extraKeys},
		{"constantKeys", b.constantKeys},
	})
	if n := c.field(kb, "names"); n < 0 {
		c.report(kb, codeLBPolicyConfig, "a key builder needs names, like [{\"service\":\"pkg.Service\"}]")
	}
}

// keyBuilder checks the fields of one GrpcKeyBuilder.
type keyBuilder struct {
	t *jtree.Tree
	// keys are the keys the builder's fields name so far; paths the
	// /service/method paths of every builder of the list.
	keys, paths map[string]bool
}

// key notes the key at v, named in field where, and reports it when
// another field of the builder named it already.
func (b *keyBuilder) key(c *checker, v int32, where string) {
	k := b.t.Str(v)
	if b.keys[k] {
		c.report(v, codeLBPolicyConfig, "key %q is used twice in this key builder (%s): headers, constantKeys and extraKeys must name different keys", k, where)
	}
	b.keys[k] = true
}

// names checks the builder's names: at least one, each with a service,
// each path unique across the list.
func (b *keyBuilder) names(c *checker, v int32) {
	t := b.t
	if !c.want(v, jtree.Array, codeLBPolicyConfig, "names") {
		return
	}
	if t.Nodes[v].Len == 0 {
		c.report(v, codeLBPolicyConfig, "a key builder's names must list at least one {\"service\":…}")
	}
	c.elements(v, func(_ int, n int32) {
		if !c.want(n, jtree.Object, codeLBPolicyConfig, "a key builder name") {
			return
		}
		service, method := "", ""
		policyFields(c, n, "a key builder name", []pfield{
			{"service", func(c *checker, v int32) {
				if c.want(v, jtree.String, codeLBPolicyConfig, "service") {
					service = t.Str(v)
				}
			}},
			{"method", func(c *checker, v int32) {
				if c.want(v, jtree.String, codeLBPolicyConfig, "method") {
					method = t.Str(v)
				}
			}},
		})
		if service == "" {
			c.report(n, codeLBPolicyConfig, "a key builder name needs a service: the service field is required")
			return
		}
		p := "/" + service + "/" + method
		if b.paths[p] {
			c.report(n, codeLBPolicyConfig, "%s is named by two key builder names: each must be unique across grpcKeybuilders", p)
		}
		b.paths[p] = true
	})
}

// headers checks the builder's headers entries: a key and header names
// each, no requiredMatch.
func (b *keyBuilder) headers(c *checker, v int32) {
	t := b.t
	if !c.want(v, jtree.Array, codeLBPolicyConfig, "headers") {
		return
	}
	c.elements(v, func(_ int, h int32) {
		if !c.want(h, jtree.Object, codeLBPolicyConfig, "a headers entry") {
			return
		}
		policyFields(c, h, "a headers entry", []pfield{
			{"key", func(c *checker, v int32) {
				if c.want(v, jtree.String, codeLBPolicyConfig, "key") {
					if t.Str(v) == "" {
						c.report(v, codeLBPolicyConfig, "a headers entry's key must not be empty")
						return
					}
					b.key(c, v, "headers")
				}
			}},
			{"names", func(c *checker, v int32) {
				if !c.want(v, jtree.Array, codeLBPolicyConfig, "names") {
					return
				}
				if t.Nodes[v].Len == 0 {
					c.report(v, codeLBPolicyConfig, "a headers entry must list at least one header name")
				}
				c.elements(v, func(_ int, e int32) {
					if c.want(e, jtree.String, codeLBPolicyConfig, "a header name") && t.Str(e) == "" {
						c.report(e, codeLBPolicyConfig, "a header name must not be empty")
					}
				})
			}},
			{"requiredMatch", func(c *checker, v int32) {
				if c.want(v, jtree.Bool, codeLBPolicyConfig, "requiredMatch") && t.Bool(v) {
					c.report(v, codeLBPolicyConfig, "requiredMatch must not be set for gRPC key builders (rls_config.proto: \"For gRPC, it is an error to specify required_match\")")
				}
			}},
		})
		if c.field(h, "key") < 0 {
			c.report(h, codeLBPolicyConfig, "a headers entry needs a key")
		}
		if c.field(h, "names") < 0 {
			c.report(h, codeLBPolicyConfig, "a headers entry needs names")
		}
	})
}

// extraKeys checks the builder's extraKeys: host, service and method,
// each a key.
func (b *keyBuilder) extraKeys(c *checker, v int32) {
	if !c.want(v, jtree.Object, codeLBPolicyConfig, "extraKeys") {
		return
	}
	extra := func(c *checker, v int32) {
		if !c.want(v, jtree.String, codeLBPolicyConfig, "an extraKeys value") {
			return
		}
		if b.t.Str(v) == "" {
			// proto3: "" is unset; C-core rejects it as set.
			c.refuse(v, codeProtoDefaultValue, clientCore, "this extraKeys value is empty, which proto3 reads as unset, but C-core rejects the whole config; remove it")
			return
		}
		b.key(c, v, "extraKeys")
	}
	policyFields(c, v, "extraKeys", []pfield{{"host", extra}, {"service", extra}, {"method", extra}})
}

// constantKeys checks the builder's constantKeys: non-empty keys with
// string values.
func (b *keyBuilder) constantKeys(c *checker, v int32) {
	if !c.want(v, jtree.Object, codeLBPolicyConfig, "constantKeys") {
		return
	}
	c.fields(v, func(k, val int32) {
		if b.t.Str(k) == "" {
			c.report(k, codeLBPolicyConfig, "a constantKeys key must not be empty")
		} else {
			b.key(c, k, "constantKeys")
		}
		c.want(val, jtree.String, codeLBPolicyConfig, "a constantKeys value")
	})
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
		c.refuse(v, codeRLSLookupScheme, who, "%s %s uses the scheme %q, for which clients have no resolver unless the application registers one: %s reject the whole config; write a target like \"dns:///rls.example.com:443\"", what, c.t.Raw(v), s[:i], who)
		return
	}
	c.refuse(v, codeRLSLookupScheme, clientGo, "%s %s is valid for C-core and grpc-java, which resolve it with dns, but grpc-go parses %q as a URI scheme it has no resolver for and rejects the whole config; write \"dns:///%s\"", what, c.t.Raw(v), s[:i], s)
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
