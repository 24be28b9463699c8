package serviceconfig

import "slices"

// CodeInfo describes one diagnostic code.
type CodeInfo struct {
	Code     string
	Severity Severity
	// Summary is a one-line description for documentation.
	Summary string
}

// codes is the registry of every diagnostic this package emits. A code's
// severity is fixed here so that the same problem is never an error in one
// place and a warning in another. Codes are part of the public contract:
// never rename one, only add.
var codes = []CodeInfo{
	// The input as a whole.
	{"input-too-large", Error, "the input is larger than any record DNS can carry could be written in (1 MiB of text), or than the publisher reads (64 MiB)"},
	{"diagnostics-omitted", Warning, "more problems than are listed per input: the rest are counted, not shown"},

	// JSON text.
	{"json-syntax", Error, "the text is not valid JSON"},
	{"json-duplicate-key", Error, "an object has two members with the same name"},
	{"json-too-deep", Error, "JSON nested deeper than any service config needs"},
	{"non-ascii", Error, "TXT records are ASCII; the config holds other bytes"},

	// TXT record.
	{"txt-syntax", Error, "the TXT presentation text cannot be read (quotes, escapes)"},
	{"txt-no-record", Error, "no TXT record starts with grpc_config="},
	{"txt-prefix-split", Error, "the grpc_config= prefix is split across strings"},
	{"txt-multiple-config", Error, "more than one TXT record starts with grpc_config="},
	{"txt-attribute-spelling", Warning, "the attribute is not written exactly grpc_config= (RFC 1464 allows it; gRPC clients do not)"},
	{"txt-other-records", Warning, "other TXT records share the owner name; grpc-go joins them all"},
	{"txt-string-too-long", Error, "a TXT string is longer than 255 bytes"},
	{"txt-size-udp", Warning, "the answer exceeds 512 bytes: clients without EDNS must retry over TCP"},
	{"txt-size-edns", Warning, "the answer exceeds 1232 bytes: most resolvers get it truncated and retry over TCP"},
	{"txt-too-large", Error, "the record cannot fit in a 65535-byte DNS message"},

	// Choice list (gRFC A2).
	{"choices-type", Error, "the grpc_config value is not a JSON list of choices"},
	{"choices-empty", Error, "the list of choices is empty"},
	{"choice-type", Error, "a choice is not a JSON object"},
	{"choice-unknown-key", Error, "a choice has a key gRFC A2 does not define"},
	{"choice-client-language", Error, "clientLanguage is not a list of strings"},
	{"choice-client-hostname", Error, "clientHostname is not a list of strings"},
	{"choice-percentage", Error, "percentage is not an integer from 0 to 100"},
	{"choice-percentage-zero", Warning, "percentage 0 matches no client"},
	{"choice-service-config", Error, "serviceConfig is missing or not an object"},
	{"choice-empty-list", Warning, "an empty clientLanguage or clientHostname list: A2 matches all, grpc-go, grpc-js and C-core match none"},
	{"dynparams-constraint", Error, "a dynamicParameterConstraints message is malformed"},
	{"dynparams-too-deep", Error, "dynamic parameter constraints nest more than 32 levels"},
	{"dynparams-empty-and", Warning, "an empty andConstraints matches every client"},
	{"dynparams-empty-or", Warning, "an empty orConstraints matches no client"},
	{"dynparams-keyset", Warning, "the choices with dynamic parameter constraints do not all constrain the same keys (TP2)"},
	{"dynparams-overlap", Warning, "two choices' dynamic parameter constraints match the same parameters (TP2)"},
	{"dynparams-gap", Warning, "a parameter set over the named keys and values matches no choice (TP2)"},
	{"dynparams-analysis-incomplete", Warning, "the variant analysis gave up; some findings may be missing"},
	{"choice-unreachable", Warning, "no client can ever select this choice: earlier choices take every client it matches"},
	{"choices-no-catch-all", Warning, "no choice matches every client: grpc-go and grpc-js fail the channel when none matches"},
	{"choice-extension-key", Warning, "a choice uses dynamicParameterConstraints, which other gRPC clients reject or ignore"},
	{"choice-language-case", Warning, "clientLanguage names Go in a case grpc-go does not match (it compares with \"GO\")"},

	// Service config.
	{"service-config-type", Error, "the service config is not a JSON object"},
	{"unknown-field", Warning, "a field gRPC does not define (ignored by clients)"},
	{"field-case", Warning, "a field name differs from a known one only in case: grpc-go reads it, other clients ignore it"},
	{"wrong-type", Error, "a field has the wrong JSON type"},
	{"method-config", Error, "a methodConfig entry is malformed"},
	{"method-name", Error, "a methodConfig name is malformed"},
	{"method-name-duplicate", Error, "two methodConfig entries name the same method, service or default"},
	{"method-name-missing", Warning, "a methodConfig entry has no name and applies to no call"},
	{"duration", Error, "a duration is not written as seconds with an \"s\" suffix, or is out of range"},
	{"duration-fraction", Warning, "a duration with 1 to 8 fraction digits, which grpc-js misreads (\"0.1s\" as 1 ns)"},
	{"timeout", Error, "a methodConfig timeout is negative"},
	{"message-size", Error, "a message size limit is not a non-negative integer"},
	{"retry-policy", Error, "a retryPolicy breaks gRFC A6"},
	{"hedging-policy", Error, "a hedgingPolicy breaks gRFC A6"},
	{"retry-and-hedging", Error, "a methodConfig sets both retryPolicy and hedgingPolicy"},
	{"max-attempts-capped", Warning, "maxAttempts above 5 is capped at 5 by gRPC clients"},
	{"status-code", Error, "a status code is not a gRPC status code name or number"},
	{"status-code-case", Warning, "a status code name is not upper-case (grpc-go, C-core and grpc-java reject it)"},
	{"retry-throttling", Error, "retryThrottling breaks gRFC A6"},
	{"lb-config", Error, "loadBalancingConfig is malformed"},
	{"lb-no-known-policy", Error, "loadBalancingConfig names no policy a gRPC client knows"},
	{"lb-policy-config", Error, "the configuration of a load-balancing policy is invalid"},
	{"lb-policy", Error, "loadBalancingPolicy names no policy a gRPC client knows"},
	{"lb-policy-ignored", Warning, "loadBalancingPolicy is ignored because loadBalancingConfig is set"},
	{"health-check-config", Error, "healthCheckConfig is malformed"},
	{"header-extraction", Error, "a headerExtraction rule is malformed"},
	{"header-name", Error, "a headerExtraction headerName is not a valid, unreserved, lower-case metadata key"},
	{"header-name-duplicate", Error, "two headerExtraction rules of one method add the same header"},
}

var codeIndex = func() map[string]CodeInfo {
	m := make(map[string]CodeInfo, len(codes))
	for _, c := range codes {
		if _, dup := m[c.Code]; dup {
			panic("serviceconfig: duplicate diagnostic code " + c.Code)
		}
		m[c.Code] = c
	}
	return m
}()

// Codes returns every diagnostic code, in documentation order.
func Codes() []CodeInfo { return slices.Clone(codes) }

// LookupCode returns the description of a code.
func LookupCode(code string) (CodeInfo, bool) {
	c, ok := codeIndex[code]
	return c, ok
}

func severityOf(code string) Severity {
	if c, ok := codeIndex[code]; ok {
		return c.Severity
	}
	panic("serviceconfig: unregistered diagnostic code " + code)
}
