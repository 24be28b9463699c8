package serviceconfig

import "sync"

// CodeInfo describes one diagnostic code.
type CodeInfo struct {
	Code     string
	Severity Severity
	// Summary is a one-line description for documentation.
	Summary string
	// Why says where the rule comes from and why it has its severity
	// (docs/rules.md): an error is what the spec makes invalid, or what
	// every client refuses; a warning is valid, but a named client reads it
	// differently or refuses it, or it does not do what it seems to.
	Why string
}

// The codes a caller acts on (see [Codes] for all of them): the ones a tool
// adds its own advice to, and the one it reports itself ([InputTooLarge]).
// Compare Diagnostic.Code with these rather than with literals, so that a
// misspelt code fails to compile.
const (
	// CodeInputTooLarge is an input beyond what any tool reads.
	CodeInputTooLarge string = "input-too-large"
	// CodeGrpcGoChannelFailure was the refusal of a record grpc-go's own
	// resolver fails its channel on; no longer reported since clients are
	// declared ([PublishOptions].Clients), kept so that it is not reused.
	CodeGrpcGoChannelFailure string = "grpc-go-channel-failure"
	// CodeMisspelledField refuses a config with a field one typo away from
	// one gRPC defines ([PublishOptions].AllowMisspelledFields).
	CodeMisspelledField string = "misspelled-field"
)

// diagCode is a diagnostic code of this package. Every diagnostic is made
// from one (checker.report, diagCode.String and severity), so a code that
// is not declared here does not compile, and the severity is the one it is
// registered with.
type diagCode uint8

// The codes, in documentation order.
const (
	// The input as a whole.
	codeInputTooLarge diagCode = iota + 1
	codeDiagnosticsOmitted

	// JSON text.
	codeJSONSyntax
	codeJSONDuplicateKey
	codeJSONTooDeep
	codeNonASCII

	// TXT record.
	codeTXTSyntax
	codeTXTNoRecord
	codeTXTPrefixSplit
	codeTXTMultipleConfig
	codeTXTAttributeSpelling
	codeTXTOtherRecords
	codeTXTStringTooLong
	codeTXTSizeUDP
	codeTXTSizeEDNS
	codeTXTTooLarge

	// Choice list (gRFC A2).
	codeChoicesType
	codeChoicesEmpty
	codeChoiceType
	codeChoiceUnknownKey
	codeChoiceClientLanguage
	codeChoiceClientHostname
	codeChoicePercentage
	codeChoicePercentageZero
	codeChoiceServiceConfig
	codeChoiceEmptyList
	codeDynParamsConstraint
	codeDynParamsTooDeep
	codeDynParamsEmptyAnd
	codeDynParamsEmptyOr
	codeDynParamsKeyset
	codeDynParamsOverlap
	codeDynParamsGap
	codeDynParamsAnalysisIncomplete
	codeChoiceUnreachable
	codeChoicesNoCatchAll
	codeChoiceExtensionKey
	codeGrpcGoChannelFailure
	codeMisspelledField
	codeChoiceLanguageCase

	// Service config.
	codeServiceConfigType
	codeUnknownField
	codeFieldCase
	codeNullValue
	codeNumberString
	codeNumberForm
	codeNumberRange
	codeWrongType
	codeMethodConfig
	codeMethodName
	codeMethodNameSlash
	codeMethodNameDuplicate
	codeMethodNameMissing
	codeDuration
	codeDurationForm
	codeDurationFraction
	codeDurationNegative
	codeTimeout
	codeMessageSize
	codeRetryPolicy
	codeRetryPerAttemptTimeout
	codeHedgingPolicy
	codeRetryAndHedging
	codeMaxAttemptsCapped
	codeStatusCode
	codeStatusCodeCase
	codeStatusCodeNumber
	codeStatusCodeOK
	codeRetryThrottling
	codeTokenRatioPrecision
	codeLBConfig
	codeLBConfigEmpty
	codeLBNoKnownPolicy
	codeLBPolicyUnsupported
	codeLBFallbackConfig
	codeLBPolicyXDS
	codeLBPolicyConfig
	codeLBPolicy
	codeLBPolicyCompat
	codeLBPolicyIgnored
	codeRLSLookupScheme
	codeProtoDefaultValue
	codeHealthCheckConfig
	codeHeaderExtraction
	codeHeaderName
	codeHeaderNameDuplicate

	// DNSSEC of a record looked up (lint --trust-anchor).
	codeDNSSECBogus
	codeDNSSECInsecure
	codeDNSSECExpiring

	numCodes
)

// codes is the registry of every diagnostic this package emits, indexed by
// code. A code's severity is fixed here so that the same problem is never
// an error in one place and a warning in another. Codes are part of the
// public contract: never rename one, only add.
var codes = [numCodes]codeID{
	// The input as a whole.
	codeInputTooLarge:      {CodeInputTooLarge, Error},
	codeDiagnosticsOmitted: {"diagnostics-omitted", Warning},

	// JSON text.
	codeJSONSyntax:       {"json-syntax", Error},
	codeJSONDuplicateKey: {"json-duplicate-key", Error},
	codeJSONTooDeep:      {"json-too-deep", Error},
	codeNonASCII:         {"non-ascii", Error},

	// TXT record.
	codeTXTSyntax:            {"txt-syntax", Error},
	codeTXTNoRecord:          {"txt-no-record", Error},
	codeTXTPrefixSplit:       {"txt-prefix-split", Warning},
	codeTXTMultipleConfig:    {"txt-multiple-config", Error},
	codeTXTAttributeSpelling: {"txt-attribute-spelling", Warning},
	codeTXTOtherRecords:      {"txt-other-records", Warning},
	codeTXTStringTooLong:     {"txt-string-too-long", Error},
	codeTXTSizeUDP:           {"txt-size-udp", Warning},
	codeTXTSizeEDNS:          {"txt-size-edns", Warning},
	codeTXTTooLarge:          {"txt-too-large", Error},

	// Choice list (gRFC A2).
	codeChoicesType:                 {"choices-type", Error},
	codeChoicesEmpty:                {"choices-empty", Error},
	codeChoiceType:                  {"choice-type", Error},
	codeChoiceUnknownKey:            {"choice-unknown-key", Error},
	codeChoiceClientLanguage:        {"choice-client-language", Error},
	codeChoiceClientHostname:        {"choice-client-hostname", Error},
	codeChoicePercentage:            {"choice-percentage", Error},
	codeChoicePercentageZero:        {"choice-percentage-zero", Warning},
	codeChoiceServiceConfig:         {"choice-service-config", Error},
	codeChoiceEmptyList:             {"choice-empty-list", Warning},
	codeDynParamsConstraint:         {"dynparams-constraint", Error},
	codeDynParamsTooDeep:            {"dynparams-too-deep", Error},
	codeDynParamsEmptyAnd:           {"dynparams-empty-and", Warning},
	codeDynParamsEmptyOr:            {"dynparams-empty-or", Warning},
	codeDynParamsKeyset:             {"dynparams-keyset", Warning},
	codeDynParamsOverlap:            {"dynparams-overlap", Warning},
	codeDynParamsGap:                {"dynparams-gap", Warning},
	codeDynParamsAnalysisIncomplete: {"dynparams-analysis-incomplete", Warning},
	codeChoiceUnreachable:           {"choice-unreachable", Warning},
	codeChoicesNoCatchAll:           {"choices-no-catch-all", Warning},
	codeChoiceExtensionKey:          {"choice-extension-key", Warning},
	codeGrpcGoChannelFailure:        {CodeGrpcGoChannelFailure, Error},
	codeMisspelledField:             {CodeMisspelledField, Error},
	codeChoiceLanguageCase:          {"choice-language-case", Warning},

	// Service config.
	codeServiceConfigType:      {"service-config-type", Error},
	codeUnknownField:           {"unknown-field", Warning},
	codeFieldCase:              {"field-case", Warning},
	codeNullValue:              {"null-value", Warning},
	codeNumberString:           {"number-string", Warning},
	codeNumberForm:             {"number-form", Warning},
	codeNumberRange:            {"number-range", Warning},
	codeWrongType:              {"wrong-type", Error},
	codeMethodConfig:           {"method-config", Error},
	codeMethodName:             {"method-name", Error},
	codeMethodNameSlash:        {"method-name-slash", Warning},
	codeMethodNameDuplicate:    {"method-name-duplicate", Error},
	codeMethodNameMissing:      {"method-name-missing", Warning},
	codeDuration:               {"duration", Error},
	codeDurationForm:           {"duration-form", Warning},
	codeDurationFraction:       {"duration-fraction", Warning},
	codeDurationNegative:       {"duration-negative", Warning},
	codeTimeout:                {"timeout", Warning},
	codeMessageSize:            {"message-size", Error},
	codeRetryPolicy:            {"retry-policy", Error},
	codeRetryPerAttemptTimeout: {"retry-per-attempt-timeout", Warning},
	codeHedgingPolicy:          {"hedging-policy", Error},
	codeRetryAndHedging:        {"retry-and-hedging", Error},
	codeMaxAttemptsCapped:      {"max-attempts-capped", Warning},
	codeStatusCode:             {"status-code", Error},
	codeStatusCodeCase:         {"status-code-case", Warning},
	codeStatusCodeNumber:       {"status-code-number", Warning},
	codeStatusCodeOK:           {"status-code-ok", Warning},
	codeRetryThrottling:        {"retry-throttling", Error},
	codeTokenRatioPrecision:    {"token-ratio-precision", Warning},
	codeLBConfig:               {"lb-config", Error},
	codeLBConfigEmpty:          {"lb-config-empty", Warning},
	codeLBNoKnownPolicy:        {"lb-no-known-policy", Error},
	codeLBPolicyUnsupported:    {"lb-policy-unsupported", Warning},
	codeLBFallbackConfig:       {"lb-fallback-config", Warning},
	codeLBPolicyXDS:            {"lb-policy-xds", Warning},
	codeLBPolicyConfig:         {"lb-policy-config", Error},
	codeLBPolicy:               {"lb-policy", Error},
	codeLBPolicyCompat:         {"lb-policy-compat", Warning},
	codeLBPolicyIgnored:        {"lb-policy-ignored", Warning},
	codeRLSLookupScheme:        {"rls-lookup-scheme", Warning},
	codeProtoDefaultValue:      {"proto-default-value", Warning},
	codeHealthCheckConfig:      {"health-check-config", Error},
	codeHeaderExtraction:       {"header-extraction", Error},
	codeHeaderName:             {"header-name", Error},
	codeHeaderNameDuplicate:    {"header-name-duplicate", Error},

	// DNSSEC of a record looked up.
	codeDNSSECBogus:    {"dnssec-bogus", Error},
	codeDNSSECInsecure: {"dnssec-insecure", Warning},
	codeDNSSECExpiring: {"dnssec-expiring", Warning},
}

// codeDocs describes each code, for Codes and the documentation: kept apart
// from codes so that a program that only validates (a gRPC client using
// the resolver) does not carry the text.
var codeDocs = [numCodes]codeDoc{
	// The input as a whole.
	codeInputTooLarge:      {"the input is larger than any record DNS can carry could be written in (1 MiB of text), or than the publisher reads (64 MiB)", "a resource bound: a DNS message holds 65 535 bytes, so no larger record can be served, and 1 MiB of text is room for any way of writing one"},
	codeDiagnosticsOmitted: {"more problems than are listed per input: the rest are counted, not shown", "not a problem of its own: at most 100 diagnostics are listed per input, errors first"},

	// JSON text.
	codeJSONSyntax:       {"the text is not valid JSON", "gRFC A2/A21: a record that does not parse is invalid"},
	codeJSONDuplicateKey: {"an object has two members with the same name", "RFC 8259 leaves it undefined; C-core and grpc-java 1.68.1 and later reject, grpc-go, grpc-js and older grpc-java (1.41, measured) take the last: our semantics (README, Semantics) make it invalid"},
	codeJSONTooDeep:      {"JSON nested deeper than any service config needs", "a resource bound: no valid config nests that deep"},
	codeNonASCII:         {"TXT records are ASCII; the config holds other bytes", "gRFC A2: \"the contents of the service config are also ASCII\""},

	// TXT record.
	codeTXTSyntax:            {"the TXT presentation text cannot be read (quotes, escapes)", "RFC 1035 presentation format"},
	codeTXTNoRecord:          {"no TXT record starts with grpc_config=", "gRFC A2: the config is the grpc_config attribute"},
	codeTXTPrefixSplit:       {"the grpc_config= prefix is split across strings", "valid (gRFC A2 joins a record's strings): grpc-go and grpc-java read it, grpc-js and C-core's c-ares resolver look in the first string and see no config"},
	codeTXTMultipleConfig:    {"more than one TXT record starts with grpc_config=", "our semantics (README, Semantics): two configs are ambiguous"},
	codeTXTAttributeSpelling: {"the attribute is not written exactly grpc_config= (RFC 1464 allows it; gRPC clients do not)", "valid RFC 1464, but grpc-go, C-core and grpc-js see no config"},
	codeTXTOtherRecords:      {"other TXT records share the owner name; grpc-go joins them all", "valid, but grpc-go joins every TXT record and fails to parse"},
	codeTXTStringTooLong:     {"a TXT string is longer than 255 bytes", "RFC 1035 §3.3: a character-string holds at most 255 bytes"},
	codeTXTSizeUDP:           {"the answer exceeds 512 bytes: clients without EDNS must retry over TCP", "valid; costs a TCP round trip"},
	codeTXTSizeEDNS:          {"the answer exceeds 1232 bytes: most resolvers get it truncated and retry over TCP", "valid; costs a TCP round trip"},
	codeTXTTooLarge:          {"the record cannot fit in a 65535-byte DNS message", "RFC 1035: no DNS message can carry it"},

	// Choice list (gRFC A2).
	codeChoicesType:                 {"the grpc_config value is not a JSON list of choices", "gRFC A2: the value is a JSON list of choices"},
	codeChoicesEmpty:                {"the list of choices is empty", "gRFC A2: \"A list of one or more service config choices\" (every client reads it as no config)"},
	codeChoiceType:                  {"a choice is not a JSON object", "gRFC A2: each choice is an object"},
	codeChoiceUnknownKey:            {"a choice has a key gRFC A2 does not define", "gRFC A2: \"If any unexpected field name is present in this object, the entire config is considered invalid\" (grpc-go and C-core ignore the key; grpc-java and grpc-js check only the choices up to the one they pick)"},
	codeChoiceClientLanguage:        {"clientLanguage is not a list of strings", "gRFC A2: [string]"},
	codeChoiceClientHostname:        {"clientHostname is not a list of strings", "gRFC A2: [string]"},
	codeChoicePercentage:            {"percentage is not an integer from 0 to 100", "gRFC A2: \"All other numbers are considered invalid\""},
	codeChoicePercentageZero:        {"percentage 0 matches no client", "valid, but the choice is never used"},
	codeChoiceServiceConfig:         {"serviceConfig is missing or not an object", "gRFC A2: \"If this field is not an object, or is missing ... the entire config is considered invalid\""},
	codeChoiceEmptyList:             {"an empty clientLanguage or clientHostname list: A2, grpc-java and C-core's current resolver match all; grpc-go, grpc-js and C-core 1.51 match none", "valid (gRFC A2: \"If a field is absent or empty, it matches all clients\"), but grpc-go and grpc-js read it as matching nothing, as C-core 1.51 did (grpcio, measured)"},
	codeDynParamsConstraint:         {"a dynamicParameterConstraints message is malformed", "xDS TP2's DynamicParameterConstraints message"},
	codeDynParamsTooDeep:            {"dynamic parameter constraints nest more than 32 levels", "a resource bound of our extension (README, Dynamic parameters)"},
	codeDynParamsEmptyAnd:           {"an empty andConstraints matches every client", "valid, probably not meant"},
	codeDynParamsEmptyOr:            {"an empty orConstraints matches no client", "valid, probably not meant"},
	codeDynParamsKeyset:             {"the choices with dynamic parameter constraints do not all constrain the same keys (TP2)", "valid; TP2's best practice"},
	codeDynParamsOverlap:            {"two choices' dynamic parameter constraints match the same parameters (TP2)", "valid; TP2's best practice"},
	codeDynParamsGap:                {"a parameter set over the named keys and values matches no choice (TP2)", "valid; TP2's best practice"},
	codeDynParamsAnalysisIncomplete: {"the variant analysis gave up; some findings may be missing", "says lint could not finish"},
	codeChoiceUnreachable:           {"no client can ever select this choice: earlier choices take every client it matches", "valid, probably not meant"},
	codeChoicesNoCatchAll:           {"no choice matches every client: grpc-go and grpc-js fail the channel when none matches", "valid (gRFC A21: no match means no config), but grpc-go and grpc-js fail the channel"},
	codeChoiceExtensionKey:          {"a choice uses dynamicParameterConstraints, which other gRPC clients reject or ignore", "our extension: grpc-java and grpc-js reject the record when they come to the choice (they stop at the first that matches), grpc-go and C-core ignore the key"},
	codeGrpcGoChannelFailure:        {"no longer reported: a record grpc-go would fail its channel on is refused by the diagnostic that says why, when go is among the declared clients (compat.clients, --clients)", "kept so that the code is never reused: the declared clients (docs/rules.md#clients) replaced the grpc-go-only gate, and compat.allowGrpcGoFailure takes go out of them"},
	codeMisspelledField:             {"a field one typo away from one gRPC defines, which clients would drop silently: refused unless allowed (compat.allowMisspelledFields, encode --allow-misspelled-fields)", "the publisher's compat gate (docs/rules.md#severity): valid by the spec (unknown-field, a warning when linting a record), but published only when allowed"},
	codeChoiceLanguageCase:          {"clientLanguage names a client's language in a form it does not match: Go other than \"GO\" (grpc-go), Node other than \"node\" (grpc-js), a language built on C-core without \"c++\"", "valid (gRFC A2: case-insensitive), but grpc-go and grpc-js compare exactly, and C-core matches only \"c++\""},

	// Service config.
	codeServiceConfigType:      {"the service config is not a JSON object", "service_config.proto: a ServiceConfig message"},
	codeUnknownField:           {"a field gRPC does not define (ignored by clients)", "gRFC A21: \"unknown fields do not affect validation\"; probably a typo"},
	codeFieldCase:              {"a field name differs from a known one only in case: grpc-go reads it, other clients ignore it", "valid (an unknown field), but grpc-go's case-insensitive JSON reads it as the field"},
	codeNullValue:              {"a field or a choice criterion is null, which the spec reads as absent: grpc-java and grpc-js reject it", "valid (proto3 JSON: null is the default value; service_config.proto says so of names; gRFC A2: an absent criterion matches all clients), but grpc-java and grpc-js throw"},
	codeNumberString:           {"a number is written as a JSON string: valid proto3 JSON, but grpc-go (and grpc-js where it reads the field) reject it", "valid (proto3 JSON accepts numbers as strings; C-core and grpc-java 1.43 and later read them), but grpc-go, grpc-js and older grpc-java (1.41, measured) reject"},
	codeNumberForm:             {"a whole number is written with a fraction or exponent (3.0, 1e2): grpc-go and C-core reject it", "valid proto3 JSON, but grpc-go and C-core parse integers strictly"},
	codeNumberRange:            {"a number the spec allows but a client cannot hold (grpc-java's signed 32-bit message sizes)", "valid (uint32), but grpc-java rejects values above 2147483647"},
	codeWrongType:              {"a field has the wrong JSON type", "service_config.proto gives every field a type"},
	codeMethodConfig:           {"a methodConfig entry is malformed", "service_config.proto: repeated MethodConfig"},
	codeMethodName:             {"a methodConfig name is malformed", "service_config.proto: \"If the 'service' field is empty, the 'method' field must be empty\""},
	codeMethodNameSlash:        {"a methodConfig service or method name contains '/', so it matches no call", "valid strings, but no call has such a path"},
	codeMethodNameDuplicate:    {"two methodConfig entries name the same method, service or default", "service_config.proto: \"Each name entry must be unique across the entire ServiceConfig\""},
	codeMethodNameMissing:      {"a methodConfig entry has no name and applies to no call", "valid (service_config.proto: it \"will be skipped\"), but grpc-js rejects an entry without name"},
	codeDuration:               {"a duration is not written as seconds with an \"s\" suffix, or is out of range", "proto3 JSON of google.protobuf.Duration"},
	codeDurationForm:           {"a duration spelled as proto3 JSON allows but some clients do not read (\".5s\", \"1.s\", \"+1s\")", "valid proto3 JSON (Go's protojson and grpc-go read it), but C-core, grpc-java or grpc-js reject it"},
	codeDurationFraction:       {"a duration with 1 to 8 fraction digits, which grpc-js misreads (\"0.1s\" as 1 ns)", "valid, but grpc-js reads it differently"},
	codeDurationNegative:       {"a negative duration where the spec does not forbid one, which some clients reject", "valid google.protobuf.Duration, but the named clients reject negative values"},
	codeTimeout:                {"a methodConfig timeout is negative", "valid google.protobuf.Duration, but C-core and grpc-js reject it and grpc-go and grpc-java fail every call"},
	codeMessageSize:            {"a message size limit is not a non-negative integer", "service_config.proto: google.protobuf.UInt32Value"},
	codeRetryPolicy:            {"a retryPolicy breaks gRFC A6", "gRFC A6, \"Validation of retryPolicy\""},
	codeRetryPerAttemptTimeout: {"retryPolicy.perAttemptRecvTimeout is not positive: C-core and grpc-java, which read it, reject the config", "not a field of the spec (ignored there), but C-core and grpc-java read it"},
	codeHedgingPolicy:          {"a hedgingPolicy breaks gRFC A6", "gRFC A6, \"Validation of hedgingPolicy\""},
	codeRetryAndHedging:        {"a methodConfig sets both retryPolicy and hedgingPolicy", "service_config.proto: oneof retry_or_hedging_policy (gRFC A6)"},
	codeMaxAttemptsCapped:      {"maxAttempts above 5 is capped at 5 by gRPC clients", "valid (gRFC A6: \"treated as 5 without being considered a validation error\")"},
	codeStatusCode:             {"a status code is not a gRPC status code name or number", "gRFC A6: \"Each status code MUST be a valid gRPC status code\""},
	codeStatusCodeCase:         {"a status code name is not upper-case (grpc-go, C-core and grpc-java reject it in a retryPolicy)", "valid (gRFC A6: \"the case-insensitive string form\"), but the named clients compare exactly"},
	codeStatusCodeNumber:       {"a retryPolicy status code written as a number, which C-core rejects", "valid (gRFC A6: \"the integer form\"), but C-core reads only names"},
	codeStatusCodeOK:           {"a status code list names OK, which grpc-java rejects", "valid (gRFC A6 does not forbid it), but pointless and grpc-java rejects it"},
	codeRetryThrottling:        {"retryThrottling breaks gRFC A6", "gRFC A6, \"Validation of retryThrottling\""},
	codeTokenRatioPrecision:    {"tokenRatio has more than 3 decimal places (ignored by gRFC A6) or an exponent (C-core rejects it)", "valid (gRFC A6: \"Decimal places beyond 3 are ignored\"), but clients read it differently"},
	codeLBConfig:               {"loadBalancingConfig is malformed", "service_config.proto: each entry holds exactly one policy whose config is an object"},
	codeLBConfigEmpty:          {"loadBalancingConfig is an empty list, which proto3 reads as unset; grpc-go and C-core reject it", "valid (gRFC A24: unset uses the default, distinct from \"none are supported\"), but grpc-go and C-core reject it"},
	codeLBNoKnownPolicy:        {"loadBalancingConfig names no policy of the gRPC spec", "service_config.proto: \"If the list doesn't contain any supported policy, the whole service config is invalid\""},
	codeLBPolicyUnsupported:    {"some clients implement none of the listed policies", "valid, but the named clients reject the config (grpc-js falls back to pick_first)"},
	codeLBFallbackConfig:       {"a later policy entry, which clients lacking the first policy use, is invalid or malformed for them", "valid (clients stop at the first policy they support), but the named clients reach this entry and reject it"},
	codeLBPolicyXDS:            {"the chosen policy is an xDS policy, which has no backends without an xDS resolver", "valid, but does not work from DNS"},
	codeLBPolicyConfig:         {"the configuration of a load-balancing policy is invalid", "the policy's gRFC (A42, A48, A50, A58, A62, A68, A76) or the RLS design"},
	codeLBPolicy:               {"loadBalancingPolicy names no policy a gRPC client knows, or one that needs a config", "gRFC A21: \"loadBalancingPolicy\": \"UnknownPolicy\" is invalid; C-core's requires_config"},
	codeLBPolicyCompat:         {"loadBalancingPolicy is valid, but some clients read it differently or lack the policy", "valid (C-core and grpc-java lower-case it), but grpc-go matches names exactly and grpc-js ignores the field"},
	codeLBPolicyIgnored:        {"loadBalancingPolicy is ignored because loadBalancingConfig is set", "valid (service_config.proto: used only if loadBalancingConfig is unset), probably not meant"},
	codeRLSLookupScheme:        {"an rls lookupService target with a scheme clients have no resolver for", "valid (a gRPC URI), but clients reject it unless the application registers the scheme"},
	codeProtoDefaultValue:      {"a field left out or set to its proto3 default (0, \"\"), which the spec reads as unset, but named clients reject", "valid (proto3: the default value is the field unset; rls_config.proto: cacheSizeBytes \"omitted or set to zero\" takes the client default), but the named clients require a value"},
	codeHealthCheckConfig:      {"healthCheckConfig is malformed", "gRFC A17: HealthCheckConfig {serviceName}"},
	codeHeaderExtraction:       {"a headerExtraction rule is malformed", "our extension (docs/headers.md)"},
	codeHeaderName:             {"a headerExtraction headerName is not a valid, unreserved, lower-case metadata key", "our extension (docs/headers.md)"},
	codeHeaderNameDuplicate:    {"two headerExtraction rules of one method add the same header", "our extension (docs/headers.md)"},

	// DNSSEC of a record looked up.
	codeDNSSECBogus:    {"the answer fails DNSSEC validation from the trust anchor: forged, unsigned, expired, or a denial without proof", "RFC 4035 §5: a validating client refuses it (our resolver with TrustAnchors keeps its last config, docs/dnssec.md)"},
	codeDNSSECInsecure: {"the name is under no trust anchor given: the answer was not validated", "RFC 4035 §4.3: insecure, so anyone answering the client's queries could have forged it"},
	codeDNSSECExpiring: {"a signature of the answer expires in less than twice the record's TTL", "RFC 6781 §4.4.2: a resolver caching the record past its signature's expiry fails to validate it; the publisher refreshes signatures a week ahead by default"},
}

// DNSSECDiagnostic is the diagnostic of a record looked up with DNSSEC
// validation: bogus (an error), insecure or expiring (warnings). msg says
// what was found.
func DNSSECDiagnostic(kind, msg string) Diagnostic {
	c := map[string]diagCode{"bogus": codeDNSSECBogus, "insecure": codeDNSSECInsecure, "expiring": codeDNSSECExpiring}[kind]
	if c == 0 {
		c = codeDNSSECBogus
	}
	return Diagnostic{Severity: c.severity(), Code: c.String(), Offset: -1, Message: msg}
}

// codeID is a code's identity: its text and its severity.
type codeID struct {
	Code     string
	Severity Severity
}

// codeDoc is a code's description (CodeInfo.Summary and Why).
type codeDoc struct{ Summary, Why string }

// codeByID finds a code by its text: for codes that come as data (the JSON
// Schema's x-code annotations, the JSON parser's errors).
var codeByID = sync.OnceValue(func() map[string]diagCode {
	m := make(map[string]diagCode, numCodes)
	for c := diagCode(1); c < numCodes; c++ {
		m[codes[c].Code] = c
	}
	return m
})

func (c diagCode) String() string     { return codes[c].Code }
func (c diagCode) severity() Severity { return codes[c].Severity }

// info is the whole description of a code.
func (c diagCode) info() CodeInfo {
	return CodeInfo{Code: codes[c].Code, Severity: codes[c].Severity, Summary: codeDocs[c].Summary, Why: codeDocs[c].Why}
}

// Codes returns every diagnostic code, in documentation order.
func Codes() []CodeInfo {
	out := make([]CodeInfo, 0, numCodes-1)
	for c := diagCode(1); c < numCodes; c++ {
		out = append(out, c.info())
	}
	return out
}

// lookupCode returns the description of a code.
func lookupCode(code string) (CodeInfo, bool) {
	c, ok := codeByID()[code]
	return c.info(), ok
}
