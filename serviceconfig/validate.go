package serviceconfig

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/grpc-config-dns/grpc-config-dns/internal/jtree"
)

// ValidateServiceConfig validates one service config (a JSON object, the
// value of a choice's serviceConfig) and returns its diagnostics, sorted by
// position, with offsets into config.
func ValidateServiceConfig(config []byte) Diagnostics {
	t, err := jtree.Parse(config)
	if err != nil {
		return Diagnostics{syntaxDiagnostic(err)}
	}
	c := newChecker(t)
	validateServiceConfig(c, 0)
	c.diags.Sort()
	return c.diags
}

var serviceConfigFields = []string{"loadBalancingConfig", "loadBalancingPolicy", "methodConfig", "retryThrottling", "healthCheckConfig", "connectionScaling"}

// validateServiceConfig checks the service config object at node v against
// the ServiceConfig message of service_config.proto and the gRFCs that
// define its fields (A6, A21, A24 and the LB policies'). Every rule says
// where it comes from; docs/rules.md says how severities are chosen.
func validateServiceConfig(c *checker, v int32) {
	t := c.t
	if !c.want(v, jtree.Object, codeServiceConfigType, "a service config") {
		return
	}
	var lbPolicyKey, lbConfig int32 = -1, -1
	names := make(map[string]int32)
	// A non-empty loadBalancingConfig makes loadBalancingPolicy moot.
	lbSet := nonEmptyList(t, c.field(v, "loadBalancingConfig"))
	c.fields(v, func(k, val int32) {
		switch {
		case t.Is(k, "loadBalancingConfig"):
			lbConfig = val
			validateLBConfigList(c, val, topLevelList)
			if t.Nodes[val].Kind == jtree.Array && t.Nodes[val].Len == 0 {
				c.goDrop = append(c.goDrop, k)
			}
		case t.Is(k, "loadBalancingPolicy"):
			lbPolicyKey = k
			validateLBPolicy(c, val, lbSet)
		case t.Is(k, "methodConfig"):
			if c.want(val, jtree.Array, codeMethodConfig, "methodConfig") {
				c.elements(val, func(_ int, mc int32) { validateMethodConfig(c, mc, names) })
			}
		case t.Is(k, "retryThrottling"):
			validateRetryThrottling(c, val)
		case t.Is(k, "healthCheckConfig"):
			validateHealthCheckConfig(c, val)
		case t.Is(k, "connectionScaling"):
			validateConnectionScaling(c, val)
		default:
			c.unknownField(k, codeUnknownField, "the service config", serviceConfigFields)
		}
	})
	// An empty loadBalancingConfig is unset, and the policy then counts.
	if lbPolicyKey >= 0 && nonEmptyList(t, lbConfig) {
		c.pushKey(lbPolicyKey)
		c.report(lbPolicyKey, codeLBPolicyIgnored, "loadBalancingPolicy is ignored because loadBalancingConfig is also set; remove one of them")
		c.pop()
	}
}

// nonEmptyList reports whether v is a JSON array with an element; v is -1
// for a field that is absent.
func nonEmptyList(t *jtree.Tree, v int32) bool {
	return v >= 0 && t.Nodes[v].Kind == jtree.Array && t.Nodes[v].Len > 0
}

// validateHealthCheckConfig checks healthCheckConfig, gRFC A17's
// HealthCheckConfig {StringValue service_name}.
func validateHealthCheckConfig(c *checker, v int32) {
	if !c.want(v, jtree.Object, codeHealthCheckConfig, "healthCheckConfig") {
		return
	}
	c.fields(v, func(k, val int32) {
		if c.t.Is(k, "serviceName") {
			c.want(val, jtree.String, codeHealthCheckConfig, "healthCheckConfig.serviceName")
			return
		}
		c.unknownField(k, codeUnknownField, "healthCheckConfig", []string{"serviceName"})
	})
}

// validateConnectionScaling checks connectionScaling, gRFC A105's
// ConnectionScaling {UInt32Value max_connections_per_subchannel}, which
// C-core alone reads.
func validateConnectionScaling(c *checker, v int32) {
	if !c.want(v, jtree.Object, codeWrongType, "connectionScaling") {
		return
	}
	c.fields(v, func(k, val int32) {
		if c.t.Is(k, "maxConnectionsPerSubchannel") {
			c.protoNumber(val, "connectionScaling.maxConnectionsPerSubchannel", codeWrongType, numUint32, 0)
			return
		}
		c.unknownField(k, codeUnknownField, "connectionScaling", []string{"maxConnectionsPerSubchannel"})
	})
}

var methodConfigFields = []string{"name", "waitForReady", "timeout", "maxRequestMessageBytes", "maxResponseMessageBytes", "retryPolicy", "hedgingPolicy", "headerExtraction"}

func validateMethodConfig(c *checker, mc int32, names map[string]int32) {
	t := c.t
	if !c.want(mc, jtree.Object, codeMethodConfig, "a methodConfig entry") {
		return
	}
	var retryKey, hedgingKey int32 = -1, -1
	hasName := false
	c.fields(mc, func(k, v int32) {
		switch {
		case t.Is(k, "name"):
			hasName = true
			validateNames(c, v, names)
		case t.Is(k, "waitForReady"):
			c.want(v, jtree.Bool, codeWrongType, "waitForReady")
		case t.Is(k, "timeout"):
			// A Duration; nothing in the spec forbids a negative one.
			if d, ok := duration(c, v, "timeout"); ok && d.neg() {
				who := negRefusers(d, clientCore|clientJS)
				c.misread(v, codeTimeout, who, allClients&^who, "timeout %s is negative: the spec does not forbid it, but %s %s the whole config, and the clients that take it fail every call at once; write a positive duration like \"1.5s\", or remove it for no timeout", t.Raw(v), who, who.verb("rejects", "reject"))
			}
		case t.Is(k, "maxRequestMessageBytes"), t.Is(k, "maxResponseMessageBytes"):
			messageSize(c, k, v)
		case t.Is(k, "retryPolicy"):
			retryKey = k
			validateRetryPolicy(c, v)
		case t.Is(k, "hedgingPolicy"):
			hedgingKey = k
			validateHedgingPolicy(c, v)
		case t.Is(k, "headerExtraction"):
			validateHeaderExtraction(c, v)
		default:
			c.unknownField(k, codeUnknownField, "a methodConfig entry", methodConfigFields)
		}
	})
	if !hasName {
		// service_config.proto: "MethodConfig without names (empty list)
		// will be skipped"; grpc-js throws on it.
		c.refuse(mc, codeMethodNameMissing, clientJS, "this methodConfig entry has no \"name\" list, so it applies to no call (and grpc-js rejects the whole config); add \"name\":[{}] to make it the default for every method")
	}
	if retryKey >= 0 && hedgingKey >= 0 {
		// service_config.proto: oneof retry_or_hedging_policy; gRFC A6.
		c.pushKey(hedgingKey)
		c.report(hedgingKey, codeRetryAndHedging, "a methodConfig may set retryPolicy or hedgingPolicy, not both (gRFC A6); remove one")
		c.pop()
	}
}

// validateNames checks a methodConfig name list and records each name in
// names, so that a name used twice anywhere in the config is reported
// (service_config.proto: "Each name entry must be unique across the entire
// ServiceConfig").
func validateNames(c *checker, v int32, names map[string]int32) {
	if !c.want(v, jtree.Array, codeMethodName, "methodConfig name") {
		return
	}
	if c.t.Nodes[v].Len == 0 {
		c.report(v, codeMethodNameMissing, "the name list is empty, so this methodConfig applies to no call; add [{}] to make it the default for every method")
	}
	c.elements(v, func(_ int, n int32) { validateName(c, n, names) })
}

// validateName checks one name n of a methodConfig name list and records
// it in names (see validateNames).
func validateName(c *checker, n int32, names map[string]int32) {
	t := c.t
	if !c.want(n, jtree.Object, codeMethodName, "a methodConfig name") {
		return
	}
	service, method := "", ""
	serviceNode, methodNode := int32(-1), int32(-1)
	ok := true
	// service_config.proto: "In JSON representation, value \"\", value
	// `null`, and not present are the same".
	c.fields(n, func(k, val int32) {
		switch {
		case t.Is(k, "service"):
			if ok = ok && c.want(val, jtree.String, codeMethodName, "service"); ok {
				service, serviceNode = t.Str(val), val
			}
		case t.Is(k, "method"):
			if ok = ok && c.want(val, jtree.String, codeMethodName, "method"); ok {
				method, methodNode = t.Str(val), val
			}
		default:
			c.unknownField(k, codeUnknownField, "a methodConfig name", []string{"service", "method"})
		}
	})
	if !ok {
		return
	}
	if service == "" && method != "" {
		// "If the 'service' field is empty, the 'method' field must be
		// empty".
		c.report(methodNode, codeMethodName, "method %q is named without a service: set \"service\" too (a method name alone matches nothing)", method)
		return
	}
	// A '/' is legal in the spec but builds a path no call has.
	if strings.Contains(service, "/") {
		c.report(serviceNode, codeMethodNameSlash, "service %q contains '/', so the name matches no call: write the fully-qualified service name, like \"pkg.Service\", and the method separately", service)
	} else if strings.Contains(method, "/") {
		c.report(methodNode, codeMethodNameSlash, "method %q contains '/', so the name matches no call: write the method name alone, like \"Get\"", method)
	}
	// The joined path, as grpc-go keys names: {"a/b","c"} and {"a","b/c"}
	// are one name to it, which it refuses twice.
	key := service + "/" + method
	if _, dup := names[key]; dup {
		c.report(n, codeMethodNameDuplicate, "%s is named by more than one methodConfig entry; a name may appear only once in the whole service config", describeMethodName(service, method))
		return
	}
	names[key] = n
}

// describeMethodName says which calls a methodConfig name applies to.
func describeMethodName(service, method string) string {
	switch {
	case service == "":
		return "the default for all methods ({} or {\"service\":\"\"})"
	case method == "":
		return fmt.Sprintf("the default for service %s", service)
	}
	return fmt.Sprintf("method %s/%s", service, method)
}

// durationValue is a parsed google.protobuf.Duration.
type durationValue struct{ sec, nanos int64 }

func (d durationValue) neg() bool { return d.sec < 0 || d.nanos < 0 }

// negRefusers narrows the clients that reject negative values of a field
// to those that reject the negative duration d: C-core rejects negative
// seconds but reads "-0.5s" as 0.5 s, its seconds being "-0".
func negRefusers(d durationValue, who client) client {
	if d.sec < 0 {
		return who
	}
	return who &^ clientCore
}
func (d durationValue) positive() bool { return d.sec > 0 || d.nanos > 0 }

// duration checks that v is a google.protobuf.Duration in its proto3 JSON
// form and returns it.
func duration(c *checker, v int32, name string) (durationValue, bool) {
	t := c.t
	if t.Nodes[v].Kind != jtree.String {
		hint := ""
		if t.Nodes[v].Kind == jtree.Number {
			hint = fmt.Sprintf("; write \"%ss\"", t.Raw(v))
		}
		c.report(v, codeDuration, "%s must be a duration string like \"1.5s\", not %s%s", name, describeKind(t, v), hint)
		return durationValue{}, false
	}
	str := t.Str(v)
	sec, nanos, form, err := parseDurationParts(str)
	if err != nil {
		c.report(v, codeDuration, "%s: %v", name, err)
		return durationValue{}, false
	}
	if form != 0 {
		// What each client's duration parser does with these spellings.
		var who client
		var what string
		switch {
		case form&formNoInteger != 0:
			who, what = clientCore|clientJava|clientJS, "has no digits before the point"
		case form&formBarePoint != 0:
			who, what = clientCore|clientJS, "ends its number with a bare point"
		default:
			who, what = clientJS, "starts with '+'"
		}
		c.refuse(v, codeDurationForm, who, "%s %s %s: proto3 JSON allows it (grpc-go reads it), but %s %s the whole config; write %q", name, t.Raw(v), what, who, who.verb("rejects", "reject"), formatDuration(time.Duration(sec)*time.Second+time.Duration(nanos)))
	}
	if digits := fractionDigits(str[:len(str)-1]); digits > 0 && digits < 9 {
		c.shortFractions = append(c.shortFractions, v)
		if c.quiet.has(codeDurationFraction) {
			// The message costs more than the rest of the check.
			c.report(v, codeDurationFraction, "")
			return durationValue{sec, nanos}, true
		}
		c.report(v, codeDurationFraction, "%s %s has %d fraction digit(s): grpc-js takes the digits after the point as nanoseconds, so it reads this as %s; write %q (9 digits), which every client reads alike", name, t.Raw(v), digits, grpcJSMisread(str, sec), formatDuration(time.Duration(sec)*time.Second+time.Duration(nanos)))
	}
	return durationValue{sec, nanos}, true
}

// messageSize checks maxRequestMessageBytes and maxResponseMessageBytes:
// google.protobuf.UInt32Value.
func messageSize(c *checker, k, v int32) {
	t := c.t
	name := t.Str(k)
	n, ok := c.protoNumber(v, name, codeMessageSize, numUint32, clientGo)
	if ok && n.i > math.MaxInt32 {
		c.refuse(v, codeNumberRange, clientJava, "%s %s fits the spec's uint32, but grpc-java reads it as a signed 32-bit int and rejects the whole config; write at most %d", name, t.Raw(v), math.MaxInt32)
	}
}

var retryPolicyFields = []string{"maxAttempts", "initialBackoff", "maxBackoff", "backoffMultiplier", "retryableStatusCodes", "perAttemptRecvTimeout"}

// validateRetryPolicy applies gRFC A6's "Validation of retryPolicy".
func validateRetryPolicy(c *checker, v int32) {
	t := c.t
	if !c.want(v, jtree.Object, codeRetryPolicy, "retryPolicy") {
		return
	}
	seen := map[string]bool{}
	caseFrom := len(c.caseFields)
	c.fields(v, func(k, val int32) {
		switch {
		case t.Is(k, "maxAttempts"):
			seen["maxAttempts"] = true
			maxAttempts(c, val, codeRetryPolicy, "retryPolicy")
		case t.Is(k, "initialBackoff"), t.Is(k, "maxBackoff"):
			// A6 rule 2: "MUST have a duration value greater than 0".
			name := t.Str(k)
			seen[name] = true
			if d, ok := duration(c, val, name); ok && !d.positive() {
				c.report(val, codeRetryPolicy, "retryPolicy.%s must be greater than zero (gRFC A6), not %s", name, t.Raw(val))
			}
		case t.Is(k, "perAttemptRecvTimeout"):
			perAttemptRecvTimeout(c, val)
		case t.Is(k, "backoffMultiplier"):
			// A6 rule 3: "MUST be a JSON number greater than 0".
			seen["backoffMultiplier"] = true
			if n, ok := c.protoNumber(val, "retryPolicy.backoffMultiplier", codeRetryPolicy, numFloat, clientGo|clientJS); ok && (!(n.f > 0) || math.IsInf(n.f, 0)) {
				c.report(val, codeRetryPolicy, "retryPolicy.backoffMultiplier must be a number greater than zero (gRFC A6), not %s", t.Raw(val))
			}
		case t.Is(k, "retryableStatusCodes"):
			// A6 rule 4: "MUST be specified as a JSON array of status codes
			// and be non-empty".
			seen["retryableStatusCodes"] = true
			if n := statusCodes(c, val, "retryableStatusCodes", codeRetryPolicy, true); n == 0 && t.Nodes[val].Kind == jtree.Array {
				c.report(val, codeRetryPolicy, "retryPolicy.retryableStatusCodes must name at least one status code, like [\"UNAVAILABLE\"] (gRFC A6)")
			}
		default:
			c.unknownField(k, codeUnknownField, "retryPolicy", retryPolicyFields)
		}
	})
	if missing := missingFields(retryPolicyFields[:5], seen); missing != "" {
		who := "gRPC clients reject the whole config"
		if caseVariantOf(c.caseFields[caseFrom:], retryPolicyFields[:5], seen) {
			// grpc-go's own retry example writes MaxAttempts: grpc-go reads it.
			who = "C-core, grpc-java and grpc-js reject the whole config; grpc-go reads the fields written in another case (field-case) and accepts it"
		}
		c.report(v, codeRetryPolicy, "retryPolicy is missing %s, which gRFC A6 requires (%s)", missing, who)
	}
}

// perAttemptRecvTimeout is in neither gRFC A6 nor service_config.proto, so
// the spec ignores it; grpc-java reads it (and rejects a negative or
// malformed one), and C-core when hedging is enabled (and rejects anything
// but a positive duration). Its problems are warnings naming them.
func perAttemptRecvTimeout(c *checker, v int32) {
	t := c.t
	const what = "retryPolicy.perAttemptRecvTimeout"
	who, why := client(0), ""
	if t.Nodes[v].Kind != jtree.String {
		who, why = clientCore|clientJava, "is not a duration string"
	} else if sec, nanos, form, err := parseDurationParts(t.Str(v)); err != nil {
		who, why = clientCore|clientJava, "is not a duration"
	} else if d := (durationValue{sec, nanos}); d.neg() {
		who, why = clientCore|clientJava, "is negative"
	} else if !d.positive() {
		who, why = clientCore, "is zero"
	} else if form != 0 {
		who, why = clientCore|clientJava, "is spelled in a way they do not read"
	}
	if who != 0 {
		c.refuse(v, codeRetryPerAttemptTimeout, who, "%s %s %s: the spec does not define the field (so it is ignored there), but %s %s it and %s the whole config", what, t.Raw(v), why, who, who.verb("reads", "read"), who.verb("rejects", "reject"))
	}
}

var hedgingPolicyFields = []string{"maxAttempts", "hedgingDelay", "nonFatalStatusCodes"}

// validateHedgingPolicy applies gRFC A6's "Validation of hedgingPolicy".
// grpc-go and C-core do not implement hedging and ignore the field.
func validateHedgingPolicy(c *checker, v int32) {
	t := c.t
	if !c.want(v, jtree.Object, codeHedgingPolicy, "hedgingPolicy") {
		return
	}
	hasMax := false
	c.fields(v, func(k, val int32) {
		switch {
		case t.Is(k, "maxAttempts"):
			hasMax = true
			maxAttempts(c, val, codeHedgingPolicy, "hedgingPolicy")
		case t.Is(k, "hedgingDelay"):
			// A6 rule 2 asks only for a Duration: negative is legal.
			// C-core does not read hedgingPolicy.
			if d, ok := duration(c, val, "hedgingDelay"); ok && d.neg() {
				c.refuse(val, codeDurationNegative, clientJava|clientJS, "hedgingPolicy.hedgingDelay %s is negative: gRFC A6 does not forbid it, but grpc-java and grpc-js reject the whole config; write \"0s\" to send every attempt at once", t.Raw(val))
			}
		case t.Is(k, "nonFatalStatusCodes"):
			statusCodes(c, val, "nonFatalStatusCodes", codeHedgingPolicy, false)
		default:
			c.unknownField(k, codeUnknownField, "hedgingPolicy", hedgingPolicyFields)
		}
	})
	if !hasMax {
		c.report(v, codeHedgingPolicy, "hedgingPolicy is missing maxAttempts, which gRFC A6 requires")
	}
}

// maxAttempts: gRFC A6 rule 1, "MUST be a JSON integer value greater than
// 1. Values greater than 5 are treated as 5 without being considered a
// validation error" (a uint32 in service_config.proto).
func maxAttempts(c *checker, v int32, code diagCode, policy string) {
	t := c.t
	strict := clientGo | clientJS
	if policy == "hedgingPolicy" {
		strict = clientJS // grpc-go ignores hedgingPolicy
	}
	what := "retryPolicy.maxAttempts" // constants: every service has one
	if policy == "hedgingPolicy" {
		what = "hedgingPolicy.maxAttempts"
	} else if policy != "retryPolicy" {
		what = policy + ".maxAttempts"
	}
	n, ok := c.protoNumber(v, what, code, numUint64, strict)
	if !ok {
		return
	}
	if n.i < 2 {
		c.report(v, code, "%s.maxAttempts must be greater than 1 (it counts the original attempt), not %s", policy, t.Raw(v))
		return
	}
	if n.i > 5 {
		c.report(v, codeMaxAttemptsCapped, "%s.maxAttempts %s is above 5: gRPC clients cap it at 5 unless configured otherwise; write 5", policy, t.Raw(v))
	}
}

var statusCodeNames = []string{
	"OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED",
	"NOT_FOUND", "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED",
	"FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED",
	"INTERNAL", "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED",
}

// statusCodes checks a list of status codes and returns its length. gRFC
// A6: "Each status code MUST be a valid gRPC status code and specified in
// the integer form or the case-insensitive string form". retry says the
// list is a retryPolicy's, which grpc-go and C-core read; they ignore
// hedgingPolicy.
func statusCodes(c *checker, v int32, name string, code diagCode, retry bool) int {
	t := c.t
	if !c.want(v, jtree.Array, code, name) {
		return -1
	}
	caseRefusers, numberRefusers := clientJava, client(0)
	if retry {
		caseRefusers, numberRefusers = clientGo|clientCore|clientJava, clientCore
	}
	c.elements(v, func(_ int, e int32) {
		switch t.Nodes[e].Kind {
		case jtree.Number:
			statusCodeNumber(c, e, name, numberRefusers)
		case jtree.String:
			statusCodeName(c, e, name, caseRefusers)
		default:
			c.report(e, codeStatusCode, "a status code must be a name like \"UNAVAILABLE\" or a number, not %s", describeKind(t, e))
		}
	})
	return int(t.Nodes[v].Len)
}

// statusCodeNumber checks status code e of list name, written as a
// number, which the clients of refusers do not read.
func statusCodeNumber(c *checker, e int32, name string, refusers client) {
	t := c.t
	n, ok := t.Int(e)
	if !ok || n < 0 || n > 16 {
		c.report(e, codeStatusCode, "%s is not a gRPC status code: numbers run from 0 (OK) to 16 (UNAUTHENTICATED)", t.Raw(e))
		return
	}
	if n == 0 {
		c.refuse(e, codeStatusCodeOK, clientJava, "status code 0 (OK) in %s: gRFC A6 allows it, but a call that ends OK is never retried, and grpc-java rejects the whole config; remove it", name)
		return
	}
	if refusers != 0 {
		c.refuse(e, codeStatusCodeNumber, refusers, "status code %s is written as a number: gRFC A6 allows it, but C-core reads only names and rejects the whole config; write %q", t.Raw(e), statusCodeNames[n])
	}
}

// statusCodeName checks status code e of list name, written as a name,
// which the clients of caseRefusers read only in upper case.
func statusCodeName(c *checker, e int32, name string, caseRefusers client) {
	s := c.t.Str(e)
	for _, n := range statusCodeNames {
		if s == n {
			if n == "OK" {
				c.refuse(e, codeStatusCodeOK, clientJava, "status code \"OK\" in %s: gRFC A6 allows it, but a call that ends OK is never retried, and grpc-java rejects the whole config; remove it", name)
			}
			return
		}
	}
	for _, n := range statusCodeNames {
		if strings.EqualFold(s, n) {
			c.caseCodes = append(c.caseCodes, rewrite{e, n})
			c.refuse(e, codeStatusCodeCase, caseRefusers, "status code %q is not upper-case: gRFC A6 allows any case, but %s %s the whole config (grpc-js accepts it); write %q", s, caseRefusers, caseRefusers.verb("rejects", "reject"), n)
			return
		}
	}
	if c.full(codeStatusCode) {
		c.report(e, codeStatusCode, "") // counted only: skip the suggestion
		return
	}
	msg := fmt.Sprintf("%q is not a gRPC status code name", s)
	if sug := Suggest(s, statusCodeNames); sug != "" {
		msg += fmt.Sprintf(": did you mean %q?", sug)
	} else {
		msg += " (UNAVAILABLE, DEADLINE_EXCEEDED, RESOURCE_EXHAUSTED, …)"
	}
	c.report(e, codeStatusCode, "%s", msg)
}

// validateRetryThrottling applies gRFC A6's "Validation of retryThrottling".
func validateRetryThrottling(c *checker, v int32) {
	t := c.t
	if !c.want(v, jtree.Object, codeRetryThrottling, "retryThrottling") {
		return
	}
	hasMax, hasRatio := false, false
	c.fields(v, func(k, val int32) {
		switch {
		case t.Is(k, "maxTokens"):
			// Rule 1: "MUST be a JSON integer value in the range (0, 1000]".
			hasMax = true
			if n, ok := c.protoNumber(val, "retryThrottling.maxTokens", codeRetryThrottling, numUint32, clientGo|clientJS); ok && (n.i <= 0 || n.i > 1000) {
				c.report(val, codeRetryThrottling, "retryThrottling.maxTokens must be a whole number in 1..1000 (gRFC A6), not %s", t.Raw(val))
			}
		case t.Is(k, "tokenRatio"):
			// Rule 2: "MUST be a JSON floating point greater than 0. Decimal
			// places beyond 3 are ignored."
			hasRatio = true
			n, ok := c.protoNumber(val, "retryThrottling.tokenRatio", codeRetryThrottling, numFloat, clientGo|clientJS)
			if !ok {
				return
			}
			if !(n.f > 0) || math.IsInf(n.f, 0) {
				c.report(val, codeRetryThrottling, "retryThrottling.tokenRatio must be a number greater than zero (gRFC A6), not %s", t.Raw(val))
				return
			}
			raw := string(t.Raw(val))
			if t.Nodes[val].Kind == jtree.String {
				raw = t.Str(val)
			}
			switch {
			case strings.ContainsAny(raw, "eE"):
				c.refuse(val, codeTokenRatioPrecision, clientCore, "retryThrottling.tokenRatio %s has an exponent: C-core reads tokenRatio digit by digit and rejects the whole config; write it in decimal, like 0.1", excerptString(raw))
			case fractionDigits(raw) > 3:
				c.report(val, codeTokenRatioPrecision, "retryThrottling.tokenRatio %s has more than 3 decimal places: gRFC A6 ignores the rest (C-core and grpc-js do), but grpc-go and grpc-java use every digit; write %s", excerptString(raw), excerptString(truncateDecimals(raw, 3)))
			}
		default:
			c.unknownField(k, codeUnknownField, "retryThrottling", []string{"maxTokens", "tokenRatio"})
		}
	})
	if missing := missingThrottling(hasMax, hasRatio); missing != "" {
		c.report(v, codeRetryThrottling, "retryThrottling is missing %s, which gRFC A6 requires", missing)
	}
}

// caseVariantOf reports whether one of fields (names in another case than
// a field's) names a required field not seen.
func caseVariantOf(fields []rewrite, required []string, seen map[string]bool) bool {
	for _, f := range fields {
		if !seen[f.canon] && slices.Contains(required, f.canon) {
			return true
		}
	}
	return false
}

// missingThrottling names the required fields of retryThrottling not seen.
func missingThrottling(hasMax, hasRatio bool) string {
	switch {
	case !hasMax && !hasRatio:
		return "maxTokens and tokenRatio"
	case !hasMax:
		return "maxTokens"
	case !hasRatio:
		return "tokenRatio"
	}
	return ""
}

func truncateDecimals(raw string, n int) string {
	if i := strings.IndexByte(raw, '.'); i >= 0 && len(raw)-i-1 > n {
		return raw[:i+1+n]
	}
	return raw
}

// missingFields lists the required fields not in seen, as "a, b and c".
func missingFields(required []string, seen map[string]bool) string {
	var m []string
	for _, f := range required {
		if !seen[f] {
			m = append(m, f)
		}
	}
	switch len(m) {
	case 0:
		return ""
	case 1:
		return m[0]
	}
	return strings.Join(m[:len(m)-1], ", ") + " and " + m[len(m)-1]
}

func fractionDigits(raw string) int {
	if i := strings.IndexByte(raw, '.'); i >= 0 {
		return len(raw) - i - 1
	}
	return 0
}

// grpcJSMisread says what grpc-js makes of a duration with a short fraction:
// the fraction digits taken as a count of nanoseconds.
func grpcJSMisread(s string, sec int64) string {
	frac := s[strings.IndexByte(s, '.')+1 : len(s)-1]
	n := int64(0)
	for _, ch := range frac {
		n = n*10 + int64(ch-'0')
	}
	if sec < 0 {
		sec = -sec
	}
	return fmt.Sprintf("%d.%09ds", sec, n)
}
