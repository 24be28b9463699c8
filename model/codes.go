package model

import sc "github.com/grpc-config-dns/grpc-config-dns/serviceconfig"

// diagCode is a diagnostic code of this package. Every diagnostic is made
// from one (doc.at, doc.report), so a code that is not declared here does
// not compile, and the severity is the one it is registered with.
// Diagnostics about the service configs inside a publisher config keep the
// codes of package serviceconfig.
type diagCode uint8

// The codes, in documentation order.
const (
	codeConfigTooLarge diagCode = iota + 1
	codeYAMLSyntax
	codeYAMLDuplicateKey
	codeYAMLValue
	codeUnknownKey
	codeFieldType
	codeMissingField
	codeZoneDuplicate
	codeZoneNested
	codeNameSyntax
	codeNameOutsideZone
	codeNameRepeatsOrigin
	codeNameReserved
	codeServiceDuplicate
	codeServiceEmpty
	codeCompatConflict
	codeChoicesAndConfig
	codeAddressSyntax
	codeAddressDuplicate
	codeDurationSyntax
	codeTTLRange
	codeTTLLarge
	codeAnswerTooLarge
	codeNSMissing
	codeNSNoAddress
	codeNSNoAddressStandalone
	codeNSGlueOutsideZone
	codeNSAddressConflict
	codeSOATimers
	codeTSIGKey
	codeTSIGKeyShort
	codeTSIGKeyUnknown
	codeTransferACL
	codeTransferOpen
	codeNotifyNotAllowed
	codeNotifyTarget
	codeUDPSize
	codeUDPSizeFragmentation
	codeServerOption
	codeSRVPort
	codeSRVNoAddress
	codePolicy
	codePolicyDuplicate
	codePolicyUnused
	codeLabel
	codeDNSSEC
	codeDNSSECTimes

	numCodes
)

// codes is the registry of every diagnostic code this package emits about
// a publisher config itself, indexed by code. Codes are part of the public
// contract: never rename one, only add.
var codes = [numCodes]sc.CodeInfo{
	codeConfigTooLarge:        {Code: "config-too-large", Severity: sc.Error, Summary: "the config is beyond what the publisher reads: 64 MiB, 12 million YAML values, or aliases expanding past that"},
	codeYAMLSyntax:            {Code: "yaml-syntax", Severity: sc.Error, Summary: "the file is not valid YAML or JSON"},
	codeYAMLDuplicateKey:      {Code: "yaml-duplicate-key", Severity: sc.Error, Summary: "a mapping has the same key twice"},
	codeYAMLValue:             {Code: "yaml-value", Severity: sc.Error, Summary: "a YAML value has no exact JSON equivalent (octal or hex numbers, .inf, binary, too deep or too large)"},
	codeUnknownKey:            {Code: "unknown-key", Severity: sc.Error, Summary: "a key the publisher config does not define (often a typo)"},
	codeFieldType:             {Code: "field-type", Severity: sc.Error, Summary: "a field has the wrong type (a list where a mapping belongs, …)"},
	codeMissingField:          {Code: "missing-field", Severity: sc.Error, Summary: "a required field is missing"},
	codeZoneDuplicate:         {Code: "zone-duplicate", Severity: sc.Error, Summary: "two zones have the same origin"},
	codeZoneNested:            {Code: "zone-nested", Severity: sc.Error, Summary: "a zone lies inside another zone"},
	codeNameSyntax:            {Code: "name-syntax", Severity: sc.Error, Summary: "a domain name is malformed or too long"},
	codeNameOutsideZone:       {Code: "name-outside-zone", Severity: sc.Error, Summary: "a service name lies outside its zone"},
	codeNameRepeatsOrigin:     {Code: "name-repeats-origin", Severity: sc.Warning, Summary: "a relative name ends with the origin (a missing final dot?)"},
	codeNameReserved:          {Code: "name-reserved", Severity: sc.Error, Summary: "a service name starts with _grpc_config, which the publisher generates"},
	codeServiceDuplicate:      {Code: "service-duplicate", Severity: sc.Error, Summary: "two services have the same name"},
	codeServiceEmpty:          {Code: "service-empty", Severity: sc.Warning, Summary: "a service has neither addresses nor a service config"},
	codeCompatConflict:        {Code: "compat-conflict", Severity: sc.Error, Summary: "bareHostCompat and compat.bareHost disagree"},
	codeChoicesAndConfig:      {Code: "choices-and-config", Severity: sc.Error, Summary: "a service sets both choices and serviceConfig"},
	codeAddressSyntax:         {Code: "address-syntax", Severity: sc.Error, Summary: "an address is not an IPv4 or IPv6 address"},
	codeAddressDuplicate:      {Code: "address-duplicate", Severity: sc.Error, Summary: "an address is listed twice for one name"},
	codeDurationSyntax:        {Code: "duration-syntax", Severity: sc.Error, Summary: "a TTL or timer is not whole seconds or a duration like 5m"},
	codeTTLRange:              {Code: "ttl-range", Severity: sc.Error, Summary: "a TTL or timer is out of range"},
	codeTTLLarge:              {Code: "ttl-large", Severity: sc.Warning, Summary: "a TTL above one day: resolvers cap it, and config changes take that long to reach clients"},
	codeAnswerTooLarge:        {Code: "answer-too-large", Severity: sc.Error, Summary: "an answer cannot fit in a 65535-byte DNS message"},
	codeNSMissing:             {Code: "ns-missing", Severity: sc.Error, Summary: "a zone has no nameservers"},
	codeNSNoAddress:           {Code: "ns-no-address", Severity: sc.Error, Summary: "a nameserver inside a transferred zone has no address (secondaries like BIND refuse the zone)"},
	codeNSNoAddressStandalone: {Code: "ns-no-address-standalone", Severity: sc.Warning, Summary: "a nameserver inside a zone that is not transferred has no address (the zone works from this server alone)"},
	codeNSGlueOutsideZone:     {Code: "ns-glue-outside-zone", Severity: sc.Error, Summary: "addresses are given for a nameserver outside the zone, which the zone cannot serve"},
	codeNSAddressConflict:     {Code: "ns-address-conflict", Severity: sc.Error, Summary: "a nameserver and a service both give addresses for the same name"},
	codeSOATimers:             {Code: "soa-timers", Severity: sc.Warning, Summary: "SOA timers that make secondaries expire the zone between refreshes"},
	codeTSIGKey:               {Code: "tsig-key", Severity: sc.Error, Summary: "a TSIG key is malformed (name, algorithm, base64 secret) or defined twice"},
	codeTSIGKeyShort:          {Code: "tsig-key-short", Severity: sc.Warning, Summary: "a TSIG secret shorter than its hash output (RFC 8945 §6)"},
	codeTSIGKeyUnknown:        {Code: "tsig-key-unknown", Severity: sc.Error, Summary: "a transfer names a TSIG key that is not defined"},
	codeTransferACL:           {Code: "transfer-acl", Severity: sc.Error, Summary: "a transfer allow entry is not an IP address or prefix"},
	codeTransferOpen:          {Code: "transfer-open", Severity: sc.Warning, Summary: "zone transfers are allowed to every address without a TSIG key"},
	codeNotifyNotAllowed:      {Code: "notify-not-allowed", Severity: sc.Warning, Summary: "a notified secondary is not allowed to transfer the zone"},
	codeNotifyTarget:          {Code: "notify-target", Severity: sc.Error, Summary: "a notify target is not IP[:PORT]"},
	codeUDPSize:               {Code: "udp-size", Severity: sc.Error, Summary: "maxUDPSize is outside 512..65535"},
	codeUDPSizeFragmentation:  {Code: "udp-size-fragmentation", Severity: sc.Warning, Summary: "maxUDPSize above 1232 risks IP fragmentation (DNS flag day 2020)"},
	codeServerOption:          {Code: "server-option", Severity: sc.Error, Summary: "a server option is out of range"},
	codeSRVPort:               {Code: "srv-port", Severity: sc.Error, Summary: "a service port is not a whole number from 1 to 65535"},
	codeSRVNoAddress:          {Code: "srv-no-address", Severity: sc.Error, Summary: "a service names a port but has no addresses for its SRV record to point at"},
	codePolicy:                {Code: "policy", Severity: sc.Error, Summary: "a policy is malformed: its name, targetRef or default"},
	codePolicyDuplicate:       {Code: "policy-duplicate", Severity: sc.Error, Summary: "two policies of a zone have the same name"},
	codePolicyUnused:          {Code: "policy-unused", Severity: sc.Warning, Summary: "a policy selects no service of its zone (a typo in its targetRef?)"},
	codeLabel:                 {Code: "label-syntax", Severity: sc.Error, Summary: "a service label is malformed"},
	codeDNSSEC:                {Code: "dnssec", Severity: sc.Error, Summary: "a zone's dnssec: settings are malformed (algorithm, keys, denial, signature times)"},
	codeDNSSECTimes:           {Code: "dnssec-times", Severity: sc.Warning, Summary: "signatures are refreshed less than two TTLs before they expire: a cached record can outlive its signature"},
}

func (c diagCode) String() string        { return codes[c].Code }
func (c diagCode) severity() sc.Severity { return codes[c].Severity }
