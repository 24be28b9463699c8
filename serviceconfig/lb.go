package serviceconfig

import (
	"sort"
	"strconv"
	"strings"

	"github.com/grpc-config-dns/grpc-config-dns/internal/jtree"
)

// lbPolicy is a load-balancing policy of the LoadBalancingConfig oneof of
// service_config.proto: the spec knows every one of them, so a list naming
// one is valid as far as the spec goes; clients says which gRPC clients
// implement it under that name, so lint can say who cannot use it.
type lbPolicy struct {
	name string
	// clients implement the policy under this name in a client that reads
	// DNS (grpc-go: a package the application imports; grpc-java: an
	// artifact on the class path).
	clients client
	// emptyOK: an empty config is valid, so the policy may be named by the
	// deprecated loadBalancingPolicy field (C-core's
	// LoadBalancingPolicyExists(name, &requires_config)).
	emptyOK bool
	// xdsOnly policies get their addresses and settings from an xDS
	// resolver; from DNS they leave the channel without working backends.
	xdsOnly bool
	check   func(c *checker, cfg int32)
}

// lbPolicies lists every policy of service_config.proto. Which clients
// implement which (testdata/peers has the evidence):
//   - grpc-js registers pick_first, round_robin and weighted_round_robin
//     under these names; its outlier detection is "outlier_detection" and its
//     xDS package's ring hash "ring_hash", names the spec does not know.
//   - C-core has no least_request, and registers random subsetting as
//     "random_subsetting" with a snake_case config.
//   - grpc-go registers outlier_detection_experimental and the xDS policies
//     only with its xds package, which DNS clients do not import, except
//     weighted_target_experimental, which its weightedroundrobin package
//     imports.
var lbPolicies []lbPolicy

// The table is filled in init: the policies' checks look themselves up.
func init() {
	lbPolicies = []lbPolicy{
		{name: "pick_first", clients: allClients, emptyOK: true, check: checkPickFirst},
		{name: "round_robin", clients: allClients, emptyOK: true, check: checkRoundRobin},
		{name: "weighted_round_robin", clients: allClients, emptyOK: true, check: checkWRR},
		{name: "least_request_experimental", clients: clientGo | clientJava, emptyOK: true, check: checkLeastRequest},
		{name: "ring_hash_experimental", clients: clientGo | clientCore | clientJava, emptyOK: true, check: checkRingHash},
		{name: "grpclb", clients: clientGo | clientCore | clientJava, emptyOK: true, check: checkGrpclb},
		{name: "rls_experimental", clients: clientGo | clientCore | clientJava, check: checkRLS},
		{name: "outlier_detection_experimental", clients: clientCore | clientJava, check: checkOutlierDetection},
		{name: "random_subsetting_experimental", clients: clientGo | clientJava, check: checkRandomSubsetting},
		{name: "priority_experimental", clients: clientCore, xdsOnly: true, check: checkPriority},
		// grpc-go's weightedroundrobin package registers weighted_target.
		{name: "weighted_target_experimental", clients: clientGo | clientCore, xdsOnly: true, check: checkWeightedTarget},
		{name: "xds_cluster_manager_experimental", clients: clientCore, xdsOnly: true, check: checkClusterManager},
		{name: "cds_experimental", clients: clientCore, xdsOnly: true, check: checkCds},
		{name: "xds_cluster_impl_experimental", clients: clientCore, xdsOnly: true, check: checkXdsClusterImpl},
		{name: "override_host_experimental", xdsOnly: true, check: checkOverrideHost("override_host_experimental")},
		{name: "xds_override_host_experimental", clients: clientCore, xdsOnly: true, check: checkOverrideHost("xds_override_host_experimental")},
		{name: "xds_wrr_locality_experimental", clients: clientCore, xdsOnly: true, check: checkWrrLocality},
		// Deprecated in service_config.proto; no client registers them today.
		{name: "xds_cluster_resolver_experimental", xdsOnly: true},
		{name: "lrs_experimental", xdsOnly: true},
		{name: "eds_experimental", xdsOnly: true},
		{name: "xds", xdsOnly: true},
		{name: "xds_experimental", xdsOnly: true},
	}
	lbPolicyIndex = make(map[string]*lbPolicy, len(lbPolicies))
	for i := range lbPolicies {
		lbPolicyIndex[lbPolicies[i].name] = &lbPolicies[i]
		if !lbPolicies[i].xdsOnly {
			usableNames = append(usableNames, lbPolicies[i].name)
		}
	}
}

var (
	lbPolicyIndex map[string]*lbPolicy
	// usableNames are the policies worth suggesting for a typo: those
	// some client can use from DNS.
	usableNames []string
)

// lbList says how a list of LoadBalancingConfig entries is read where it
// appears.
type lbList struct {
	what string
	// emptyIsUnset: an empty list is the same as an absent field (proto3
	// has no other way to say it), and the field is optional.
	emptyIsUnset bool
	// allowed narrows the policies a parent accepts as its child (grpclb:
	// "Currently, the only supported values are round_robin and
	// pick_first"); nil allows every policy of the spec.
	allowed []string
	// clients read this list: every client for loadBalancingConfig, those
	// implementing the parent policy for a child list.
	clients client
	// fallback are the clients that use fallbackTo, instead of rejecting
	// the config, when the list names no policy they have.
	fallback   client
	fallbackTo string
}

// topLevelList is loadBalancingConfig. grpc-js falls back to its default
// policy when it has none of the listed ones (resolving-load-balancer.ts:
// selectLbConfigFromList(configs, true)).
var topLevelList = lbList{what: "loadBalancingConfig", emptyIsUnset: true, clients: allClients, fallback: clientJS, fallbackTo: "pick_first"}

func (l *lbList) allows(name string) *lbPolicy {
	p := lbPolicyIndex[name]
	if p == nil || (l.allowed != nil && !contains(l.allowed, name)) {
		return nil
	}
	return p
}

// validateLBConfigList checks a list of LoadBalancingConfig entries. The
// spec (service_config.proto, LoadBalancingConfig): clients "iterate
// through the list in order and stop at the first policy that they
// support"; "If the config for the first supported policy is invalid, the
// whole service config is invalid"; "If the list doesn't contain any
// supported policy, the whole service config is invalid". Which policy is
// first depends on the client, so the spec's choice (the first policy of
// the spec) is checked with errors, and each client's own choice, when it
// differs, with a warning naming that client.
func validateLBConfigList(c *checker, v int32, l lbList) {
	if !c.want(v, jtree.Array, codeLBConfig, l.what) {
		return
	}
	if c.t.Nodes[v].Len == 0 {
		emptyLBConfigList(c, v, l)
		return
	}
	entries, chosen, malformed := lbEntries(c, v, l)
	if chosen < 0 {
		if !malformed {
			reportNoKnownPolicy(c, v, l)
		}
		return
	}
	checkChosenPolicy(c, entries[chosen], chosen)
	none, fallbacks := clientChoices(entries, chosen, l.clients)
	if none != 0 {
		reportUnsupported(c, v, l, none, entries[chosen].p.name)
	}
	checkFallbacks(c, entries, chosen, fallbacks)
}

// emptyLBConfigList reports an empty list of policies.
func emptyLBConfigList(c *checker, v int32, l lbList) {
	switch {
	case !l.emptyIsUnset:
		c.report(v, codeLBConfig, "%s is an empty list: it must name a policy, like [{\"round_robin\":{}}]", l.what)
	case l.clients == allClients:
		// gRFC A24: "If unset, will use whatever algorithm is specified by
		// the balancer", distinct from "If none are supported".
		c.refuse(v, codeLBConfigEmpty, clientGo|clientCore, "loadBalancingConfig is an empty list, which proto3 reads as unset (the default policy, or loadBalancingPolicy), as grpc-java and grpc-js do; grpc-go and C-core reject the whole config: remove the field")
	}
}

// lbEntry is one entry of a list of policies: its node, the policy's name
// (key, -1 when the entry is malformed) and config nodes, and the policy
// when the spec knows it.
type lbEntry struct {
	node, key, cfg int32
	p              *lbPolicy
}

// lbEntries reads the entries of list v, reports those that are malformed,
// and returns them with the index of the spec's choice (the first policy
// of the spec; -1 for none) and whether any entry was malformed.
func lbEntries(c *checker, v int32, l lbList) (entries []lbEntry, chosen int, malformed bool) {
	t := c.t
	chosen = -1
	c.elements(v, func(i int, e int32) {
		ent := lbEntry{node: e, key: -1, cfg: -1}
		defer func() { entries = append(entries, ent) }()
		problem := ""
		// grpc-js validates the shape of every entry, grpc-java also that
		// each config is an object.
		who := clientJava | clientJS
		switch {
		case t.Nodes[e].Kind != jtree.Object:
			problem = "must be an object naming one policy, like {\"round_robin\":{}}, not " + describeKind(t, e)
		case t.Nodes[e].Len != 1:
			problem = "must hold exactly one policy, like {\"round_robin\":{}}; list alternatives as separate entries, most preferred first"
		default:
			ent.key = t.Nodes[e].First
			ent.cfg = t.Nodes[ent.key].Next
			if t.Nodes[ent.cfg].Kind != jtree.Object {
				problem = "holds a policy whose config is " + describeKind(t, ent.cfg) + ": a policy's config must be an object, like {}"
				who = clientJava
			}
		}
		if problem != "" {
			malformed = true
			if chosen < 0 {
				// Every client examines the entries up to the one it uses.
				c.report(e, codeLBConfig, "a %s entry %s", l.what, problem)
			} else if who &= l.clients; who != 0 {
				c.refuse(e, codeLBFallbackConfig, who, "this %s entry %s: clients stop at the first policy they support, but %s %s every entry and %s the whole config", l.what, problem, who, who.verb("checks", "check"), who.verb("rejects", "reject"))
			}
			ent.key = -1
			return
		}
		ent.p = l.allows(t.Str(ent.key))
		if ent.p != nil && chosen < 0 {
			chosen = i
		}
	})
	return entries, chosen, malformed
}

// checkChosenPolicy validates the config of the spec's choice, entry i,
// with errors.
func checkChosenPolicy(c *checker, ch lbEntry, i int) {
	c.pushIdx(i)
	c.pushKey(ch.key)
	defer c.pop()
	defer c.pop()
	if ch.p.xdsOnly {
		c.report(ch.key, codeLBPolicyXDS, "%s is an xDS policy: it takes its cluster and endpoints from an xDS resolver, so a channel that reads this record from DNS has no usable backends; name a policy such as round_robin first", ch.p.name)
	}
	if ch.p.check != nil {
		ch.p.check(c, ch.cfg)
	}
}

// clientChoices finds the entry each client uses: none are the clients
// that support no listed policy; fallbacks maps the entries other than the
// spec's choice to the clients that use them.
func clientChoices(entries []lbEntry, chosen int, clients client) (none client, fallbacks map[int]client) {
	fallbacks = map[int]client{}
	for bit := client(1); bit&allClients != 0; bit <<= 1 {
		if clients&bit == 0 {
			continue
		}
		idx := -1
		for i, e := range entries {
			if e.p != nil && e.p.clients&bit != 0 {
				idx = i
				break
			}
			if e.key < 0 && i > chosen && bit&(clientJava|clientJS) == 0 {
				break // a malformed entry stops the others; already said
			}
		}
		switch {
		case idx < 0:
			none |= bit
		case idx != chosen:
			fallbacks[idx] |= bit
		}
	}
	return none, fallbacks
}

// checkFallbacks validates the configs that clients lacking the spec's
// choice use, and warns, naming those clients, of the first error in each.
func checkFallbacks(c *checker, entries []lbEntry, chosen int, fallbacks map[int]client) {
	idxs := make([]int, 0, len(fallbacks))
	for i := range fallbacks {
		idxs = append(idxs, i)
	}
	sort.Ints(idxs)
	for _, i := range idxs {
		e := entries[i]
		if e.p.check == nil {
			continue
		}
		sub := &checker{t: c.t, path: append([]seg(nil), c.path...)}
		sub.pushIdx(i)
		sub.pushKey(e.key)
		e.p.check(sub, e.cfg)
		for _, d := range sub.diags {
			if d.Severity == Error {
				who := fallbacks[i]
				c.pushIdx(i)
				c.pushKey(e.key)
				c.refuse(e.key, codeLBFallbackConfig, who, "%s %s %s, so %s %s %s and %s the whole config: %s (at %s)", who, who.verb("lacks", "lack"), entries[chosen].p.name, who, who.verb("uses", "use"), e.p.name, who.verb("rejects", "reject"), d.Message, d.Path)
				c.pop()
				c.pop()
				break
			}
		}
	}
}

// ownPolicyNames are policies that a client registers under a name the
// spec does not know, with a config of its own: a list naming only such
// policies is invalid (service_config.proto), but that client uses it.
var ownPolicyNames = [...]struct {
	name, spec string
	who        client
}{
	// C-core's random_subsetting.cc: "random_subsetting", with subset_size.
	{"random_subsetting", "random_subsetting_experimental", clientCore},
	// grpc-js's load-balancer-outlier-detection.ts: "outlier_detection",
	// with snake_case fields.
	{"outlier_detection", "outlier_detection_experimental", clientJS},
	// C-core's autosharding.cc, a sharding policy of its own; the spec's
	// nearest is slicer_experimental (gRFC A119), with other fields.
	{"autosharding_experimental", "", clientCore},
}

// reportNoKnownPolicy reports a list that names no policy of the spec:
// service_config.proto, LoadBalancingConfig: "If the list doesn't contain
// any supported policy, the whole service config is invalid". The message
// says what each client that reads the list does: one that has a listed
// policy under that name uses it, grpc-js falls back to pick_first (at the
// top level), the others reject the config.
func reportNoKnownPolicy(c *checker, v int32, l lbList) {
	t := c.t
	var names []string
	var own ownPolicies
	for e := t.Nodes[v].First; e >= 0; e = t.Nodes[e].Next {
		if t.Nodes[e].Kind != jtree.Object || t.Nodes[e].Len != 1 {
			continue
		}
		n := t.Str(t.Nodes[e].First)
		names = append(names, n)
		own.note(n, l)
	}
	known := usableNames
	if l.allowed != nil {
		known = l.allowed
	}
	rest := l.clients &^ own.users
	fallback := rest & l.fallback
	var what []string
	if r := rest &^ fallback; r != 0 {
		what = append(what, r.String()+" "+r.verb("rejects", "reject")+" the whole config")
	}
	what = append(what, own.uses...)
	if fallback != 0 {
		what = append(what, fallback.String()+" "+fallback.verb("uses", "use")+" "+l.fallbackTo+" instead")
	}
	of := "of the gRPC spec"
	if l.allowed != nil {
		of = "it allows"
	}
	msg := l.what + " names no policy " + of + " (" + strings.Join(quoteAll(names), ", ") + "), so the config is invalid: " + strings.Join(what, "; ")
	if own.spec != "" {
		c.report(v, codeLBNoKnownPolicy, "%s; write the spec's %q, with its fields", msg, own.spec)
		return
	}
	for _, n := range names {
		if s := Suggest(n, known); s != "" {
			c.report(v, codeLBNoKnownPolicy, "%s: did you mean %q?", msg, s)
			return
		}
	}
	c.report(v, codeLBNoKnownPolicy, "%s; name a policy they have, such as {\"round_robin\":{}} (%s)", msg, strings.Join(known, ", "))
}

// ownPolicies is what reportNoKnownPolicy learns of the clients that have
// a policy of a list under a name of their own (ownPolicyNames): which
// clients, a sentence on each such entry, and the spec's name for the
// first.
type ownPolicies struct {
	users client
	uses  []string
	spec  string
}

// note adds what the clients of l that no entry before took do with an
// entry naming policy n.
func (o *ownPolicies) note(n string, l lbList) {
	for _, p := range ownPolicyNames {
		if p.name != n || p.who&l.clients&^o.users == 0 || l.allowed != nil {
			continue
		}
		o.users |= p.who & l.clients
		theirs := "its own, not the spec's " + p.spec
		if p.spec == "" {
			theirs = "its own, not one of the spec"
		}
		o.uses = append(o.uses, p.who.String()+" "+p.who.verb("has", "have")+" a policy named \""+n+"\" ("+theirs+") and "+p.who.verb("uses", "use")+" that entry")
		if o.spec == "" {
			o.spec = p.spec
		}
	}
}

// reportUnsupported says which clients implement none of the policies of a
// list. Those of l.fallback use a default policy where the others reject.
func reportUnsupported(c *checker, v int32, l lbList, none client, first string) {
	reject := none &^ l.fallback
	var parts []string
	if reject != 0 {
		parts = append(parts, reject.String()+" "+reject.verb("rejects", "reject")+" the whole config")
	}
	if f := none & l.fallback; f != 0 {
		parts = append(parts, f.String()+" "+f.verb("uses", "use")+" "+l.fallbackTo+" instead")
	}
	c.refuse(v, codeLBPolicyUnsupported, reject, "%s %s none of the policies of %s (the spec's choice is %s): %s; add a policy every client has, like {\"round_robin\":{}}, as the last entry", none, none.verb("implements", "implement"), l.what, first, strings.Join(parts, ", and "))
}

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = `"` + s + `"`
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// validateLBPolicy checks the deprecated loadBalancingPolicy field, which
// service_config.proto keeps as the enum LoadBalancingPolicy (ROUND_ROBIN)
// and clients read as a policy name: C-core and grpc-java lower-case it and
// accept any policy whose empty config is valid; grpc-go looks the name up
// as written and falls back to pick_first when it has no such policy;
// grpc-js ignores the field. gRFC A21 makes an unknown name invalid.
// moot says loadBalancingConfig is set, so clients do not use the name.
func validateLBPolicy(c *checker, v int32, moot bool) {
	t := c.t
	if !c.want(v, jtree.String, codeLBPolicy, "loadBalancingPolicy") {
		return
	}
	name := t.Str(v)
	if name == "" || name == lbPolicyUnspecified {
		lbPolicyUnset(c, v, name, moot)
		return
	}
	lower := strings.ToLower(name)
	p := lbPolicyIndex[lower]
	if p == nil {
		msg := "loadBalancingPolicy " + string(t.Raw(v)) + " is not a policy gRPC clients know (gRFC A21: an unknown policy makes the config invalid)"
		if s := Suggest(lower, usableNames); s != "" {
			msg += ": did you mean \"" + s + "\"?"
		} else {
			msg += "; use \"round_robin\" or \"pick_first\""
		}
		c.report(v, codeLBPolicy, "%s", msg)
		return
	}
	if !p.emptyOK {
		c.report(v, codeLBPolicy, "loadBalancingPolicy %s names %s, which needs a config: clients reject it here; use \"loadBalancingConfig\":[{%q:{...}}]", t.Raw(v), p.name, p.name)
		return
	}
	if !moot {
		lbPolicyCompat(c, v, name, lower, p)
	}
}

// lbPolicyCompat says how each client reads loadBalancingPolicy v, name,
// which names p (lower is name lower-cased): grpc-go as written, falling
// back to pick_first; C-core and grpc-java lower-cased, rejecting a
// policy they lack; grpc-js not at all.
func lbPolicyCompat(c *checker, v int32, name, lower string, p *lbPolicy) {
	var reject, misread client
	var notes []string
	if name != lower {
		c.goText = append(c.goText, rewrite{v, strconv.Quote(lower)})
		if lower != "pick_first" {
			misread = clientGo
			notes = append(notes, "grpc-go looks policy names up as written and uses pick_first instead of "+lower)
		}
	}
	if lacking := allClients &^ clientJS &^ p.clients; lacking != 0 {
		if lacking&clientGo != 0 && name == lower {
			misread = clientGo
			notes = append(notes, "grpc-go lacks "+lower+" and uses pick_first instead")
		}
		if r := lacking &^ clientGo; r != 0 {
			reject = r
			notes = append(notes, r.String()+" "+r.verb("lacks", "lack")+" "+lower+" and "+r.verb("rejects", "reject")+" the whole config")
		}
	}
	if lower != "pick_first" {
		notes = append(notes, "grpc-js ignores loadBalancingPolicy and uses pick_first")
	}
	if len(notes) == 0 {
		return
	}
	fix := "write \"loadBalancingConfig\":[{\"" + lower + "\":{}}], which every client reads alike"
	if name != lower && lower != "pick_first" {
		fix = "write \"" + lower + "\", or better " + fix[len("write "):]
	}
	c.misread(v, codeLBPolicyCompat, reject, misread, "loadBalancingPolicy %s is valid, but %s; %s", c.t.Raw(v), strings.Join(notes, "; "), fix)
}

// lbPolicyUnspecified is the zero value of service_config.proto's enum
// LoadBalancingPolicy, as proto3 JSON writes it.
const lbPolicyUnspecified = "UNSPECIFIED"

// lbPolicyUnset checks a loadBalancingPolicy that proto3 reads as unset:
// "" (a string field's default; the field is the enum LoadBalancingPolicy
// in service_config.proto, which clients read as a string) or UNSPECIFIED
// (the enum's zero value). The default policy applies ("If no LB policy is
// configured here, then the default is pick_first"). grpc-go agrees (it
// has no such policy and uses pick_first), C-core skips an empty name
// (JsonPostLoad: "if (!parsed_deprecated_lb_policy_.empty())") but looks
// "unspecified" up and rejects it, grpc-java looks either up, unless
// loadBalancingConfig is set, and rejects it; grpc-js ignores the field.
func lbPolicyUnset(c *checker, v int32, name string, moot bool) {
	who, what := clientJava, "is empty"
	if name != "" {
		who, what = clientCore|clientJava, "is the zero value of service_config.proto's enum LoadBalancingPolicy"
	}
	unset := "the default policy, pick_first, as grpc-go does"
	if moot {
		who &^= clientJava // it reads loadBalancingConfig only
		unset = "loadBalancingConfig names the policy"
	}
	if who == 0 {
		return
	}
	c.refuse(v, codeProtoDefaultValue, who, "loadBalancingPolicy %s %s, which proto3 reads as unset (%s), but %s %s up a policy named %q and %s the whole config; remove the member", c.t.Raw(v), what, unset, who, who.verb("looks", "look"), strings.ToLower(name), who.verb("rejects", "reject"))
}

// pfield is a known member of a policy's config and its check.
type pfield struct {
	name  string
	check func(c *checker, v int32)
}

// policyFields checks the members of a policy's config: each known one
// with its function, the rest reported as unknown. A slice, not a map:
// lint builds these tables for every config it checks.
func policyFields(c *checker, cfg int32, policy string, fields []pfield) {
	t := c.t
	c.fields(cfg, func(k, v int32) {
		for _, f := range fields {
			if t.Is(k, f.name) {
				f.check(c, v)
				return
			}
		}
		names := make([]string, len(fields))
		for i, f := range fields {
			names[i] = f.name
		}
		sort.Strings(names)
		c.unknownField(k, codeUnknownField, policy+" config", names)
	})
}

// require reports the required members of obj that are absent or null.
func require(c *checker, obj int32, what string, names ...string) {
	var missing []string
	for _, n := range names {
		if c.field(obj, n) < 0 {
			missing = append(missing, n)
		}
	}
	if len(missing) > 0 {
		c.report(obj, codeLBPolicyConfig, "%s is missing %s, which it requires", what, joinAnd(missing))
	}
}

func joinAnd(m []string) string {
	switch len(m) {
	case 0:
		return ""
	case 1:
		return m[0]
	}
	return strings.Join(m[:len(m)-1], ", ") + " and " + m[len(m)-1]
}

// The field checks that many policies share are method values of small
// rule types, not closures returned by helpers: the compiler inlines such
// a helper and compiles a copy of its closure at every call site (eight
// copies of durationField's), which cost a gRPC client of the resolver
// about 23 kB (resolver's TestClientSize). A method value shares one body.

// kindField checks that a field is of one JSON kind.
type kindField struct {
	what string
	kind jtree.Kind
}

func (f kindField) check(c *checker, v int32) { c.want(v, f.kind, codeLBPolicyConfig, f.what) }

func boolField(what string) func(c *checker, v int32) {
	return kindField{what, jtree.Bool}.check
}

func stringField(what string) func(c *checker, v int32) {
	return kindField{what, jtree.String}.check
}

// durationField checks a Duration field of a policy config whose spec
// allows negative values; refuseNeg names the clients that reject them.
func durationField(what string, refuseNeg client) func(c *checker, v int32) {
	return negDurationField{what, refuseNeg}.check
}

type negDurationField struct {
	what      string
	refuseNeg client
}

func (f negDurationField) check(c *checker, v int32) {
	if d, ok := duration(c, v, f.what); ok && d.neg() {
		refuseNeg := negRefusers(d, f.refuseNeg)
		c.refuse(v, codeDurationNegative, refuseNeg, "%s %s is negative: the spec does not forbid it, but %s %s the whole config; write a positive duration", f.what, c.t.Raw(v), refuseNeg, refuseNeg.verb("rejects", "reject"))
	}
}

// nonNegDuration checks a Duration field that the spec says must not be
// negative.
func nonNegDuration(what, src string) func(c *checker, v int32) {
	return nonNegDurationField{what, src}.check
}

type nonNegDurationField struct{ what, src string }

func (f nonNegDurationField) check(c *checker, v int32) {
	if d, ok := duration(c, v, f.what); ok && d.neg() {
		c.report(v, codeLBPolicyConfig, "%s %s must not be negative (%s)", f.what, c.t.Raw(v), f.src)
	}
}

// checkPickFirst: PickFirstConfig (gRFC A62).
func checkPickFirst(c *checker, cfg int32) {
	policyFields(c, cfg, "pick_first", []pfield{
		{"shuffleAddressList", boolField("pick_first.shuffleAddressList")},
	})
}

// checkRoundRobin: RoundRobinConfig has no fields.
func checkRoundRobin(c *checker, cfg int32) {
	policyFields(c, cfg, "round_robin", nil)
}

// checkWRR: WeightedRoundRobinLbConfig (gRFC A58, A114): "Configuration is
// rejected if [errorUtilizationPenalty] is negative". The periods may be
// anything; C-core rejects negative durations everywhere.
func checkWRR(c *checker, cfg int32) {
	period := func(name string) func(*checker, int32) {
		return durationField("weighted_round_robin."+name, clientCore)
	}
	policyFields(c, cfg, "weighted_round_robin", []pfield{
		{"enableOobLoadReport", boolField("weighted_round_robin.enableOobLoadReport")},
		{"oobReportingPeriod", period("oobReportingPeriod")},
		{"blackoutPeriod", period("blackoutPeriod")},
		{"weightExpirationPeriod", period("weightExpirationPeriod")},
		{"weightUpdatePeriod", period("weightUpdatePeriod")},
		// gRFC A114: repeated string; names a client cannot use are skipped.
		{"metricNamesForComputingUtilization", func(c *checker, v int32) {
			if c.want(v, jtree.Array, codeLBPolicyConfig, "weighted_round_robin.metricNamesForComputingUtilization") {
				c.elements(v, func(_ int, e int32) { c.want(e, jtree.String, codeLBPolicyConfig, "a metric name") })
			}
		}},
		{"errorUtilizationPenalty", func(c *checker, v int32) {
			if n, ok := c.protoNumber(v, "weighted_round_robin.errorUtilizationPenalty", codeLBPolicyConfig, numFloat, clientGo); ok && !(n.f >= 0) {
				c.report(v, codeLBPolicyConfig, "weighted_round_robin.errorUtilizationPenalty must not be negative (gRFC A58), not %s", c.t.Raw(v))
			}
		}},
	})
}

// checkLeastRequest: gRFC A48: "If choice_count < 2, the config will be
// rejected"; above 10 it is treated as 10.
func checkLeastRequest(c *checker, cfg int32) {
	policyFields(c, cfg, "least_request_experimental", []pfield{
		{"choiceCount", func(c *checker, v int32) {
			if n, ok := c.protoNumber(v, "least_request_experimental.choiceCount", codeLBPolicyConfig, numUint64, clientGo); ok && n.i < 2 {
				c.report(v, codeLBPolicyConfig, "least_request_experimental.choiceCount must be at least 2 (gRFC A48; clients cap it at 10), not %s", c.t.Raw(v))
			}
		}},
	})
}

// ringHashMax is the largest ring gRPC clients accept (gRFC A42: "values
// above 8M will be NACKed").
const ringHashMax = 8 * 1024 * 1024

// The defaults of minRingSize and maxRingSize (gRFC A42's LB policy
// config): a minRingSize above 4096 needs an explicit maxRingSize.
const (
	ringHashDefaultMin = 1024
	ringHashDefaultMax = 4096
)

// checkRingHash: RingHashLoadBalancingConfig (gRFC A42, A76).
func checkRingHash(c *checker, cfg int32) {
	t := c.t
	var minSize, maxSize int64 = -1, -1
	policyFields(c, cfg, "ring_hash_experimental", []pfield{
		{"minRingSize", ringSizeField{"minRingSize", &minSize}.check},
		{"maxRingSize", ringSizeField{"maxRingSize", &maxSize}.check},
		{"requestHashHeader", func(c *checker, v int32) {
			if !c.want(v, jtree.String, codeLBPolicyConfig, "ring_hash_experimental.requestHashHeader") {
				return
			}
			// gRFC A76: "if the request_hash_header field contains a value
			// that is not a valid header name, then the configuration is
			// rejected", and so is a binary (-bin) header.
			h := strings.ToLower(t.Str(v))
			switch {
			case h == "":
			case !validHeaderName(h):
				c.report(v, codeLBPolicyConfig, "ring_hash_experimental.requestHashHeader %s is not a valid header name (gRFC A76): use lower-case letters, digits, '-', '_' and '.'", t.Raw(v))
			case strings.HasSuffix(h, "-bin"):
				c.report(v, codeLBPolicyConfig, "ring_hash_experimental.requestHashHeader %s names a binary header, which gRFC A76 rejects: hash on a text header", t.Raw(v))
			}
		}},
	})
	// An absent bound still constrains the other through its default.
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
		c.report(cfg, codeLBPolicyConfig, "ring_hash_experimental.minRingSize (%d%s) is larger than maxRingSize (%d%s)", minVal, defaultNote(minSize), maxVal, defaultNote(maxSize))
	}
}

// ringSizeField checks ring_hash_experimental's minRingSize or
// maxRingSize and stores a valid value in dst (a method value, for one
// body: see durationField).
type ringSizeField struct {
	name string
	dst  *int64
}

func (f ringSizeField) check(c *checker, v int32) {
	what := "ring_hash_experimental." + f.name
	n, ok := c.protoNumber(v, what, codeLBPolicyConfig, numUint64, clientGo)
	if !ok {
		return
	}
	if n.i == 0 {
		// proto3: 0 is the field unset, so the default applies.
		c.refuse(v, codeProtoDefaultValue, clientCore|clientJava, "%s is 0, which proto3 reads as unset (the default, %d), but C-core and grpc-java reject the whole config; leave the field out", what, map[string]int{"minRingSize": ringHashDefaultMin, "maxRingSize": ringHashDefaultMax}[f.name])
		return
	}
	if n.i > ringHashMax {
		c.report(v, codeLBPolicyConfig, "%s must be at most %d (gRFC A42: \"values above 8M will be NACKed\"), not %s", what, ringHashMax, c.t.Raw(v))
		return
	}
	*f.dst = n.i
}

func defaultNote(v int64) string {
	if v < 0 {
		return ", the default"
	}
	return ""
}

// validHeaderName: an HTTP/2 header name as gRPC metadata keys are written,
// lower-case tokens of [0-9a-z-_.].
func validHeaderName(h string) bool {
	if h == "" {
		return false
	}
	for i := 0; i < len(h); i++ {
		b := h[i]
		if !(b >= 'a' && b <= 'z' || b >= '0' && b <= '9' || b == '-' || b == '_' || b == '.') {
			return false
		}
	}
	return true
}

// checkGrpclb: GrpcLbConfig. Its childPolicy is optional ("If unset,
// defaults to round_robin"), and "Currently, the only supported values are
// round_robin and pick_first".
func checkGrpclb(c *checker, cfg int32) {
	policyFields(c, cfg, "grpclb", []pfield{
		{"childPolicy", func(c *checker, v int32) {
			// grpc-go uses round_robin unless pick_first comes first
			// (grpclb_config.go: childIsPickFirst).
			validateLBConfigList(c, v, lbList{what: "grpclb.childPolicy", emptyIsUnset: true,
				allowed: []string{"round_robin", "pick_first"}, clients: lbPolicyIndex["grpclb"].clients,
				fallback: clientGo, fallbackTo: "round_robin"})
		}},
		{"serviceName", stringField("grpclb.serviceName")},
		// Read by grpc-java only, which rejects a negative timeout.
		{"initialFallbackTimeout", durationField("grpclb.initialFallbackTimeout", clientJava)},
	})
}

// checkOutlierDetection: OutlierDetectionLoadBalancingConfig, validated as
// gRFC A50 says: durations non-negative, the four percentages at most 100,
// and a child policy.
func checkOutlierDetection(c *checker, cfg int32) {
	const src = outlierDetectionSpec
	pct := func(what string) func(*checker, int32) { return odPercentField(what).check }
	count := func(what string) func(*checker, int32) { return odCountField(what).check }
	ejection := func(what string, fields []pfield) func(*checker, int32) {
		return odEjectionField{what, fields}.check
	}
	const od = "outlier_detection_experimental."
	policyFields(c, cfg, "outlier_detection_experimental", []pfield{
		{"interval", nonNegDuration(od+"interval", src)},
		{"baseEjectionTime", nonNegDuration(od+"baseEjectionTime", src)},
		{"maxEjectionTime", nonNegDuration(od+"maxEjectionTime", src)},
		{"maxEjectionPercent", pct(od + "maxEjectionPercent")},
		{"successRateEjection", ejection(od+"successRateEjection", []pfield{
			{"stdevFactor", count(od + "successRateEjection.stdevFactor")},
			{"enforcementPercentage", pct(od + "successRateEjection.enforcementPercentage")},
			{"minimumHosts", count(od + "successRateEjection.minimumHosts")},
			{"requestVolume", count(od + "successRateEjection.requestVolume")},
		})},
		{"failurePercentageEjection", ejection(od+"failurePercentageEjection", []pfield{
			{"threshold", pct(od + "failurePercentageEjection.threshold")},
			{"enforcementPercentage", pct(od + "failurePercentageEjection.enforcementPercentage")},
			{"minimumHosts", count(od + "failurePercentageEjection.minimumHosts")},
			{"requestVolume", count(od + "failurePercentageEjection.requestVolume")},
		})},
		{"childPolicy", childPolicy("outlier_detection_experimental")},
	})
	require(c, cfg, "outlier_detection_experimental", "childPolicy")
}

// The field checks of outlier_detection_experimental, method values for
// one body each (see durationField).

const outlierDetectionSpec = "gRFC A50"

// odPercentField is a percentage: a uint32 of at most 100.
type odPercentField string

func (what odPercentField) check(c *checker, v int32) {
	if n, ok := c.protoNumber(v, string(what), codeLBPolicyConfig, numUint32, 0); ok && n.i > 100 {
		c.report(v, codeLBPolicyConfig, "%s must be at most 100 (%s), not %s", string(what), outlierDetectionSpec, c.t.Raw(v))
	}
}

// odCountField is a uint32.
type odCountField string

func (what odCountField) check(c *checker, v int32) {
	c.protoNumber(v, string(what), codeLBPolicyConfig, numUint32, 0)
}

// odEjectionField is an ejection config, an object with fields.
type odEjectionField struct {
	what   string
	fields []pfield
}

func (f odEjectionField) check(c *checker, v int32) {
	if c.want(v, jtree.Object, codeLBPolicyConfig, f.what) {
		policyFields(c, v, f.what, f.fields)
	}
}

// childPolicy checks the required child policy list of a parent policy.
func childPolicy(parent string) func(*checker, int32) {
	return childPolicyField(parent).check
}

// childPolicyField is the parent policy of a childPolicy field.
type childPolicyField string

func (parent childPolicyField) check(c *checker, v int32) {
	p := string(parent)
	validateLBConfigList(c, v, lbList{what: p + ".childPolicy", clients: lbPolicyIndex[p].clients})
}

// checkRandomSubsetting: RandomSubsettingLoadBalancingConfig (gRFC A68):
// subsetSize "is required and must be greater than 0"; the child policy
// "is required".
func checkRandomSubsetting(c *checker, cfg int32) {
	policyFields(c, cfg, "random_subsetting_experimental", []pfield{
		{"subsetSize", func(c *checker, v int32) {
			if n, ok := c.protoNumber(v, "random_subsetting_experimental.subsetSize", codeLBPolicyConfig, numUint32, clientGo); ok && n.i < 1 {
				c.report(v, codeLBPolicyConfig, "random_subsetting_experimental.subsetSize must be greater than 0 (gRFC A68)")
			}
		}},
		{"childPolicy", childPolicy("random_subsetting_experimental")},
	})
	require(c, cfg, "random_subsetting_experimental", "subsetSize", "childPolicy")
}
