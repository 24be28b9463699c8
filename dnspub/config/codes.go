package config

import (
	"slices"

	sc "github.com/grpc-config-dns/grpc-config-dns/serviceconfig"
)

// codes lists every diagnostic code this package emits about a publisher
// config itself. Diagnostics about the service configs inside it keep the
// codes of package serviceconfig. Codes are part of the public contract:
// never rename one, only add.
var codes = []sc.CodeInfo{
	{Code: "config-too-large", Severity: sc.Error, Summary: "the config is beyond what the publisher reads: 64 MiB, 12 million YAML values, or aliases expanding past that"},
	{Code: "yaml-syntax", Severity: sc.Error, Summary: "the file is not valid YAML or JSON"},
	{Code: "yaml-duplicate-key", Severity: sc.Error, Summary: "a mapping has the same key twice"},
	{Code: "yaml-value", Severity: sc.Error, Summary: "a YAML value has no exact JSON equivalent (octal or hex numbers, .inf, binary, too deep or too large)"},
	{Code: "unknown-key", Severity: sc.Error, Summary: "a key the publisher config does not define (often a typo)"},
	{Code: "field-type", Severity: sc.Error, Summary: "a field has the wrong type (a list where a mapping belongs, …)"},
	{Code: "missing-field", Severity: sc.Error, Summary: "a required field is missing"},
	{Code: "zone-duplicate", Severity: sc.Error, Summary: "two zones have the same origin"},
	{Code: "zone-nested", Severity: sc.Error, Summary: "a zone lies inside another zone"},
	{Code: "name-syntax", Severity: sc.Error, Summary: "a domain name is malformed or too long"},
	{Code: "name-outside-zone", Severity: sc.Error, Summary: "a service name lies outside its zone"},
	{Code: "name-repeats-origin", Severity: sc.Warning, Summary: "a relative name ends with the origin (a missing final dot?)"},
	{Code: "name-reserved", Severity: sc.Error, Summary: "a service name starts with _grpc_config, which the publisher generates"},
	{Code: "service-duplicate", Severity: sc.Error, Summary: "two services have the same name"},
	{Code: "service-empty", Severity: sc.Warning, Summary: "a service has neither addresses nor a service config"},
	{Code: "grpc-go-channel-failure", Severity: sc.Error, Summary: "grpc-go clients would fail their channel on the record (allow with compat.allowGrpcGoFailure)"},
	{Code: "compat-conflict", Severity: sc.Error, Summary: "bareHostCompat and compat.bareHost disagree"},
	{Code: "choices-and-config", Severity: sc.Error, Summary: "a service sets both choices and serviceConfig"},
	{Code: "address-syntax", Severity: sc.Error, Summary: "an address is not an IPv4 or IPv6 address"},
	{Code: "address-duplicate", Severity: sc.Error, Summary: "an address is listed twice for one name"},
	{Code: "duration-syntax", Severity: sc.Error, Summary: "a TTL or timer is not whole seconds or a duration like 5m"},
	{Code: "ttl-range", Severity: sc.Error, Summary: "a TTL or timer is out of range"},
	{Code: "ttl-large", Severity: sc.Warning, Summary: "a TTL above one day: resolvers cap it, and config changes take that long to reach clients"},
	{Code: "answer-too-large", Severity: sc.Error, Summary: "an answer cannot fit in a 65535-byte DNS message"},
	{Code: "ns-missing", Severity: sc.Error, Summary: "a zone has no nameservers"},
	{Code: "ns-no-address", Severity: sc.Error, Summary: "a nameserver inside a transferred zone has no address (secondaries like BIND refuse the zone)"},
	{Code: "ns-no-address-standalone", Severity: sc.Warning, Summary: "a nameserver inside a zone that is not transferred has no address (the zone works from this server alone)"},
	{Code: "ns-glue-outside-zone", Severity: sc.Error, Summary: "addresses are given for a nameserver outside the zone, which the zone cannot serve"},
	{Code: "ns-address-conflict", Severity: sc.Error, Summary: "a nameserver and a service both give addresses for the same name"},
	{Code: "soa-timers", Severity: sc.Warning, Summary: "SOA timers that make secondaries expire the zone between refreshes"},
	{Code: "tsig-key", Severity: sc.Error, Summary: "a TSIG key is malformed (name, algorithm, base64 secret) or defined twice"},
	{Code: "tsig-key-short", Severity: sc.Warning, Summary: "a TSIG secret shorter than its hash output (RFC 8945 §6)"},
	{Code: "tsig-key-unknown", Severity: sc.Error, Summary: "a transfer names a TSIG key that is not defined"},
	{Code: "transfer-acl", Severity: sc.Error, Summary: "a transfer allow entry is not an IP address or prefix"},
	{Code: "transfer-open", Severity: sc.Warning, Summary: "zone transfers are allowed to every address without a TSIG key"},
	{Code: "notify-not-allowed", Severity: sc.Warning, Summary: "a notified secondary is not allowed to transfer the zone"},
	{Code: "notify-target", Severity: sc.Error, Summary: "a notify target is not IP[:PORT]"},
	{Code: "udp-size", Severity: sc.Error, Summary: "maxUDPSize is outside 512..65535"},
	{Code: "udp-size-fragmentation", Severity: sc.Warning, Summary: "maxUDPSize above 1232 risks IP fragmentation (DNS flag day 2020)"},
	{Code: "server-option", Severity: sc.Error, Summary: "a server option is out of range"},
	{Code: "srv-port", Severity: sc.Error, Summary: "a service port is not a whole number from 1 to 65535"},
	{Code: "srv-no-address", Severity: sc.Error, Summary: "a service names a port but has no addresses for its SRV record to point at"},
}

var codeIndex = func() map[string]sc.CodeInfo {
	m := make(map[string]sc.CodeInfo, len(codes))
	for _, c := range codes {
		if _, dup := m[c.Code]; dup {
			panic("config: duplicate diagnostic code " + c.Code)
		}
		m[c.Code] = c
	}
	return m
}()

// Codes returns every diagnostic code of publisher configs, in
// documentation order. Service configs inside a publisher config are
// reported with the codes of serviceconfig.Codes.
func Codes() []sc.CodeInfo { return slices.Clone(codes) }

func severityOf(code string) sc.Severity {
	if c, ok := codeIndex[code]; ok {
		return c.Severity
	}
	panic("config: unregistered diagnostic code " + code)
}
