package serviceconfig

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/grpc-config-dns/grpc-config-dns/serviceconfig/internal/jtree"
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

var serviceConfigFields = []string{"loadBalancingConfig", "loadBalancingPolicy", "methodConfig", "retryThrottling", "healthCheckConfig"}

// validateServiceConfig checks the service config object at node v against
// the gRPC service config (service_config.proto and gRFCs A6, A21, A24).
func validateServiceConfig(c *checker, v int32) {
	t := c.t
	if !c.want(v, jtree.Object, "service-config-type", "a service config") {
		return
	}
	var lbPolicyKey, lbConfig int32 = -1, -1
	names := make(map[string]int32)
	c.members(v, func(k, val int32) {
		switch {
		case t.Is(k, "loadBalancingConfig"):
			lbConfig = val
			validateLBConfigList(c, val)
		case t.Is(k, "loadBalancingPolicy"):
			lbPolicyKey = k
			validateLBPolicy(c, val)
		case t.Is(k, "methodConfig"):
			if !c.want(val, jtree.Array, "method-config", "methodConfig") {
				return
			}
			c.elements(val, func(_ int, mc int32) { validateMethodConfig(c, mc, names) })
		case t.Is(k, "retryThrottling"):
			validateRetryThrottling(c, val)
		case t.Is(k, "healthCheckConfig"):
			if c.want(val, jtree.Object, "health-check-config", "healthCheckConfig") {
				c.members(val, func(k2, v2 int32) {
					if t.Is(k2, "serviceName") {
						c.want(v2, jtree.String, "health-check-config", "healthCheckConfig.serviceName")
						return
					}
					c.unknownField(k2, "unknown-field", "healthCheckConfig", []string{"serviceName"})
				})
			}
		default:
			c.unknownField(k, "unknown-field", "the service config", serviceConfigFields)
		}
	})
	if lbPolicyKey >= 0 && lbConfig >= 0 {
		c.pushKey(lbPolicyKey)
		c.report(lbPolicyKey, "lb-policy-ignored", "loadBalancingPolicy is ignored because loadBalancingConfig is also set; remove one of them")
		c.pop()
	}
}

var methodConfigFields = []string{"name", "waitForReady", "timeout", "maxRequestMessageBytes", "maxResponseMessageBytes", "retryPolicy", "hedgingPolicy", "headerExtraction"}

func validateMethodConfig(c *checker, mc int32, names map[string]int32) {
	t := c.t
	if !c.want(mc, jtree.Object, "method-config", "a methodConfig entry") {
		return
	}
	var retryKey, hedgingKey int32 = -1, -1
	hasName := false
	c.members(mc, func(k, v int32) {
		switch {
		case t.Is(k, "name"):
			hasName = true
			validateNames(c, v, names)
		case t.Is(k, "waitForReady"):
			c.want(v, jtree.Bool, "wrong-type", "waitForReady")
		case t.Is(k, "timeout"):
			if d, ok := duration(c, v, "timeout"); ok && d.neg() {
				c.report(v, "timeout", "timeout %s is negative: write a positive duration like \"1.5s\", or remove it for no timeout", t.Raw(v))
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
			c.unknownField(k, "unknown-field", "a methodConfig entry", methodConfigFields)
		}
	})
	if !hasName {
		c.report(mc, "method-name-missing", "this methodConfig entry has no \"name\" list, so it applies to no call; add \"name\":[{}] to make it the default for every method")
	}
	if retryKey >= 0 && hedgingKey >= 0 {
		c.pushKey(hedgingKey)
		c.report(hedgingKey, "retry-and-hedging", "a methodConfig may set retryPolicy or hedgingPolicy, not both (gRFC A6); remove one")
		c.pop()
	}
}

// validateNames checks a methodConfig name list and records each name in
// names, so that a name used twice anywhere in the config is reported.
func validateNames(c *checker, v int32, names map[string]int32) {
	t := c.t
	if !c.want(v, jtree.Array, "method-name", "methodConfig name") {
		return
	}
	if t.Nodes[v].Len == 0 {
		c.report(v, "method-name-missing", "the name list is empty, so this methodConfig applies to no call; add [{}] to make it the default for every method")
	}
	c.elements(v, func(_ int, n int32) {
		if !c.want(n, jtree.Object, "method-name", "a methodConfig name") {
			return
		}
		service, method := "", ""
		serviceNode, methodNode := int32(-1), int32(-1)
		ok := true
		c.members(n, func(k, val int32) {
			switch {
			case t.Is(k, "service"):
				if ok = ok && c.want(val, jtree.String, "method-name", "service"); ok {
					service, serviceNode = t.Str(val), val
				}
			case t.Is(k, "method"):
				if ok = ok && c.want(val, jtree.String, "method-name", "method"); ok {
					method, methodNode = t.Str(val), val
				}
			default:
				c.unknownField(k, "unknown-field", "a methodConfig name", []string{"service", "method"})
			}
		})
		if !ok {
			return
		}
		if service == "" && method != "" {
			c.report(methodNode, "method-name", "method %q is named without a service: set \"service\" too (a method name alone matches nothing)", method)
			return
		}
		if strings.Contains(service, "/") {
			c.report(serviceNode, "method-name", "service %q contains '/': write the fully-qualified service name, like \"pkg.Service\", and the method separately", service)
			return
		}
		if strings.Contains(method, "/") {
			c.report(methodNode, "method-name", "method %q contains '/': write the method name alone, like \"Get\"", method)
			return
		}
		key := service + "/" + method
		what := fmt.Sprintf("method %s/%s", service, method)
		switch {
		case service == "":
			what = "the default for all methods ({} or {\"service\":\"\"})"
		case method == "":
			what = fmt.Sprintf("the default for service %s", service)
		}
		if _, dup := names[key]; dup {
			c.report(n, "method-name-duplicate", "%s is named by more than one methodConfig entry; a name may appear only once in the whole service config", what)
			return
		}
		names[key] = n
	})
}

// durationValue is a parsed google.protobuf.Duration.
type durationValue struct{ sec, nanos int64 }

func (d durationValue) neg() bool      { return d.sec < 0 || d.nanos < 0 }
func (d durationValue) positive() bool { return d.sec > 0 || d.nanos > 0 }

// duration checks that v is a duration string and returns it.
func duration(c *checker, v int32, name string) (durationValue, bool) {
	t := c.t
	if t.Nodes[v].Kind != jtree.String {
		hint := ""
		if t.Nodes[v].Kind == jtree.Number {
			hint = fmt.Sprintf("; write \"%ss\"", t.Raw(v))
		}
		c.report(v, "duration", "%s must be a duration string like \"1.5s\", not %s%s", name, describeKind(t, v), hint)
		return durationValue{}, false
	}
	str := t.Str(v)
	sec, nanos, err := parseDurationParts(str)
	if err != nil {
		c.report(v, "duration", "%s: %v", name, err)
		return durationValue{}, false
	}
	if digits := fractionDigits(str[:len(str)-1]); digits > 0 && digits < 9 {
		c.shortFractions = append(c.shortFractions, v)
		c.report(v, "duration-fraction", "%s %s has %d fraction digit(s): grpc-js takes the digits after the point as nanoseconds, so it reads this as %s; write %q (9 digits), which every client reads alike", name, t.Raw(v), digits, grpcJSMisread(str, sec), FormatDuration(time.Duration(sec)*time.Second+time.Duration(nanos)))
	}
	return durationValue{sec, nanos}, true
}

// messageSize checks maxRequestMessageBytes and maxResponseMessageBytes: a
// non-negative integer. gRPC clients cap values above their int range.
func messageSize(c *checker, k, v int32) {
	t := c.t
	name := t.Str(k)
	if t.Nodes[v].Kind != jtree.Number {
		hint := ""
		if t.Nodes[v].Kind == jtree.String {
			hint = "; drop the quotes (grpc-go rejects numbers written as strings)"
		}
		c.report(v, "message-size", "%s must be a number of bytes, not %s%s", name, describeKind(t, v), hint)
		return
	}
	n, ok := t.Int(v)
	if !ok {
		if t.IsInteger(v) && t.Raw(v)[0] != '-' {
			return // larger than int64: clients saturate
		}
		c.report(v, "message-size", "%s must be a whole number of bytes, not %s", name, t.Raw(v))
		return
	}
	if n < 0 {
		c.report(v, "message-size", "%s must not be negative (got %d)", name, n)
	}
}

var retryPolicyFields = []string{"maxAttempts", "initialBackoff", "maxBackoff", "backoffMultiplier", "retryableStatusCodes", "perAttemptRecvTimeout"}

func validateRetryPolicy(c *checker, v int32) {
	t := c.t
	if !c.want(v, jtree.Object, "retry-policy", "retryPolicy") {
		return
	}
	seen := map[string]bool{}
	c.members(v, func(k, val int32) {
		switch {
		case t.Is(k, "maxAttempts"):
			seen["maxAttempts"] = true
			maxAttempts(c, val, "retry-policy", "retryPolicy")
		case t.Is(k, "initialBackoff"), t.Is(k, "maxBackoff"), t.Is(k, "perAttemptRecvTimeout"):
			name := t.Str(k)
			seen[name] = true
			if d, ok := duration(c, val, name); ok && !d.positive() {
				c.report(val, "retry-policy", "retryPolicy.%s must be greater than zero, not %s", name, t.Raw(val))
			}
		case t.Is(k, "backoffMultiplier"):
			seen["backoffMultiplier"] = true
			if !c.want(val, jtree.Number, "retry-policy", "retryPolicy.backoffMultiplier") {
				return
			}
			if f, ok := t.Float(val); !ok || !(f > 0) || math.IsInf(f, 0) {
				c.report(val, "retry-policy", "retryPolicy.backoffMultiplier must be a number greater than zero, not %s", t.Raw(val))
			}
		case t.Is(k, "retryableStatusCodes"):
			seen["retryableStatusCodes"] = true
			if n := statusCodes(c, val, "retryableStatusCodes", "retry-policy"); n == 0 && t.Nodes[val].Kind == jtree.Array {
				c.report(val, "retry-policy", "retryPolicy.retryableStatusCodes must name at least one status code, like [\"UNAVAILABLE\"]")
			}
		default:
			c.unknownField(k, "unknown-field", "retryPolicy", retryPolicyFields)
		}
	})
	if missing := missingFields(retryPolicyFields[:5], seen); missing != "" {
		c.report(v, "retry-policy", "retryPolicy is missing %s, which gRFC A6 requires (gRPC clients reject the whole config)", missing)
	}
}

var hedgingPolicyFields = []string{"maxAttempts", "hedgingDelay", "nonFatalStatusCodes"}

func validateHedgingPolicy(c *checker, v int32) {
	t := c.t
	if !c.want(v, jtree.Object, "hedging-policy", "hedgingPolicy") {
		return
	}
	hasMax := false
	c.members(v, func(k, val int32) {
		switch {
		case t.Is(k, "maxAttempts"):
			hasMax = true
			maxAttempts(c, val, "hedging-policy", "hedgingPolicy")
		case t.Is(k, "hedgingDelay"):
			if d, ok := duration(c, val, "hedgingDelay"); ok && d.neg() {
				c.report(val, "hedging-policy", "hedgingPolicy.hedgingDelay must not be negative, not %s", t.Raw(val))
			}
		case t.Is(k, "nonFatalStatusCodes"):
			statusCodes(c, val, "nonFatalStatusCodes", "hedging-policy")
		default:
			c.unknownField(k, "unknown-field", "hedgingPolicy", hedgingPolicyFields)
		}
	})
	if !hasMax {
		c.report(v, "hedging-policy", "hedgingPolicy is missing maxAttempts, which gRFC A6 requires")
	}
}

func maxAttempts(c *checker, v int32, code, policy string) {
	t := c.t
	n, ok := t.Int(v)
	if t.Nodes[v].Kind != jtree.Number || !ok {
		if t.IsInteger(v) && t.Raw(v)[0] != '-' {
			ok, n = true, math.MaxInt64
		} else {
			c.report(v, code, "%s.maxAttempts must be a whole number greater than 1, not %s", policy, describeKind(t, v))
			return
		}
	}
	if n < 2 {
		c.report(v, code, "%s.maxAttempts must be greater than 1 (it counts the original attempt), not %d", policy, n)
		return
	}
	if n > 5 {
		c.report(v, "max-attempts-capped", "%s.maxAttempts %s is above 5: gRPC clients cap it at 5 unless configured otherwise; write 5", policy, t.Raw(v))
	}
}

var statusCodeNames = []string{
	"OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED",
	"NOT_FOUND", "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED",
	"FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED",
	"INTERNAL", "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED",
}

// statusCodes checks a list of status codes (names or numbers 0..16) and
// returns its length.
func statusCodes(c *checker, v int32, name, code string) int {
	t := c.t
	if !c.want(v, jtree.Array, code, name) {
		return -1
	}
	c.elements(v, func(_ int, e int32) {
		switch t.Nodes[e].Kind {
		case jtree.Number:
			if n, ok := t.Int(e); !ok || n < 0 || n > 16 {
				c.report(e, "status-code", "%s is not a gRPC status code: numbers run from 0 (OK) to 16 (UNAUTHENTICATED)", t.Raw(e))
			}
		case jtree.String:
			s := t.Str(e)
			for _, n := range statusCodeNames {
				if s == n {
					return
				}
			}
			for _, n := range statusCodeNames {
				if strings.EqualFold(s, n) {
					c.caseCodes = append(c.caseCodes, rewrite{e, n})
					c.report(e, "status-code-case", "status code %q is not upper-case: gRFC A6 allows it, but grpc-go, C-core and grpc-java reject the whole config; write %q", s, n)
					return
				}
			}
			if c.full("status-code") {
				c.report(e, "status-code", "") // counted only: skip the suggestion
				return
			}
			msg := fmt.Sprintf("%q is not a gRPC status code name", s)
			if sug := Suggest(s, statusCodeNames); sug != "" {
				msg += fmt.Sprintf(": did you mean %q?", sug)
			} else {
				msg += " (UNAVAILABLE, DEADLINE_EXCEEDED, RESOURCE_EXHAUSTED, …)"
			}
			c.report(e, "status-code", "%s", msg)
		default:
			c.report(e, "status-code", "a status code must be a name like \"UNAVAILABLE\" or a number, not %s", describeKind(t, e))
		}
	})
	return int(t.Nodes[v].Len)
}

func validateRetryThrottling(c *checker, v int32) {
	t := c.t
	if !c.want(v, jtree.Object, "retry-throttling", "retryThrottling") {
		return
	}
	hasMax, hasRatio := false, false
	c.members(v, func(k, val int32) {
		switch {
		case t.Is(k, "maxTokens"):
			hasMax = true
			n, ok := t.Int(val)
			if t.Nodes[val].Kind != jtree.Number || !ok || n <= 0 || n > 1000 {
				c.report(val, "retry-throttling", "retryThrottling.maxTokens must be a whole number in 1..1000, not %s", describeKind(t, val))
			}
		case t.Is(k, "tokenRatio"):
			hasRatio = true
			if !c.want(val, jtree.Number, "retry-throttling", "retryThrottling.tokenRatio") {
				return
			}
			f, ok := t.Float(val)
			if !ok || !(f > 0) || math.IsInf(f, 0) {
				c.report(val, "retry-throttling", "retryThrottling.tokenRatio must be a number greater than zero, not %s", t.Raw(val))
				return
			}
			if raw := string(t.Raw(val)); strings.ContainsAny(raw, "eE") || fractionDigits(raw) > 3 {
				c.report(val, "retry-throttling", "retryThrottling.tokenRatio %s has more than 3 decimal places, which gRPC clients do not support; round it (e.g. 0.1)", t.Raw(val))
			}
		default:
			c.unknownField(k, "unknown-field", "retryThrottling", []string{"maxTokens", "tokenRatio"})
		}
	})
	if !hasMax {
		c.report(v, "retry-throttling", "retryThrottling is missing maxTokens, which gRFC A6 requires")
	}
	if !hasRatio {
		c.report(v, "retry-throttling", "retryThrottling is missing tokenRatio, which gRFC A6 requires")
	}
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
