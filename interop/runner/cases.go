package main

import (
	"encoding/json"
	"os"
	"strings"
)

// The clients of the suite, in table order.
const (
	grpcGo    = "grpc-go"
	ours      = "dnsconfig"
	grpcJS    = "grpc-js"
	grpcPy    = "grpcio"
	grpcJava  = "grpc-java"
	zoneName  = "interop.test."
	changeTTL = 5 // seconds; the TTL of the record the change case publishes
)

var clients = []string{grpcGo, ours, grpcJS, grpcPy, grpcJava}

// Outcomes: what a client's channel did with a record, as classify reads
// them off the probes.
const (
	applied  = "applied"   // timeout fired, retry succeeded, round_robin spread
	noConfig = "no config" // none of that: the channel's default config
	fails    = "fails"     // calls fail at once with the client's failCode: the channel rejected the record
	timesOut = "times out" // every call fails DEADLINE_EXCEEDED at once

	// Effects of the config, named in the outcome "applied without E" of
	// a channel that showed the others but not E (see without).
	effTimeout = "timeout"     // the slow call ended at the methodConfig timeout
	effRetry   = "retry"       // the flaky call succeeded on a retry
	effRR      = "round_robin" // calls spread over both backends

	// jsRace is grpc-js on a record it rejects: it fails the channel when
	// the TXT answer is handled before the addresses, and keeps its default
	// config when it comes after (resolver-dns.js); which comes first is a
	// race the suite cannot fix without slowing one answer down.
	jsRace = fails + "|" + noConfig

	// jsDraw is grpc-js on a choice with a percentage under 1: it matches
	// when the number it drew for the channel, in [0, 100)
	// (resolver-dns.js: Math.random() * 100), is below the percentage,
	// about once in 110 channels for 0.9.
	jsDraw = noConfig + "|" + applied
)

// without is the outcome of a channel that applied the config but for the
// effects missing, which are named in the order timeout, retry,
// round_robin.
func without(missing ...string) string {
	return applied + " without " + strings.Join(missing, " and ")
}

// failCode is the status code with which a client fails calls when its
// channel rejected the record, where it is not UNAVAILABLE: grpc-java's
// DNS resolver reports a record it cannot parse or choose from, and its
// channel a chosen config it cannot parse, as UNKNOWN
// (DnsNameResolver.parseServiceConfig, ServiceConfigUtil), and the
// channel fails calls with that status.
var failCode = map[string]string{grpcJava: "UNKNOWN"}

func failCodeOf(client string) string {
	if c, ok := failCode[client]; ok {
		return c
	}
	return "UNAVAILABLE"
}

// fullConfig is the service config every case is about: for every method
// of the test service, a timeout (Slow sleeps 5 s, past it), a retry
// policy (Flaky fails twice, then succeeds) and round_robin. Durations are
// written as people write them; the publisher pads them to nine digits
// unless told not to. It is kept small enough for every record to fit a
// 512-byte UDP answer: grpc-js's outcome on a record it rejects depends on
// whether the TXT answer comes before the addresses, and a TCP retry
// delays it.
func fullConfig(timeout string) string {
	return `{"loadBalancingConfig":[{"round_robin":{}}],"methodConfig":[{"name":[{"service":"grpcconfigdns.test.v1.Echo"}],"timeout":"` + timeout + `",` +
		`"retryPolicy":{"maxAttempts":3,"initialBackoff":"0.01s","maxBackoff":"0.1s","backoffMultiplier":2,"retryableStatusCodes":["UNAVAILABLE"]}}]}`
}

// full has a timeout of 4 s: C-core (Python grpcio) ends calls about 1.8 s
// before a service config timeout (grpc/grpc#34547, measured by the
// timeout-1s case), so shorter timeouts would test that bug everywhere.
var full = fullConfig("4s")

// nine pads a config's durations as the publisher does.
var nine = strings.NewReplacer(`"0.01s"`, `"0.010000000s"`, `"0.1s"`, `"0.100000000s"`).Replace

// testCase is one published record and what each client does with it.
type testCase struct {
	// Host is the service's first label: Host.interop.test.
	Host string
	// Title describes the record in the compatibility table.
	Title string
	// Choices is the grpc_config value (a JSON choice list); empty for a
	// name without a record.
	Choices string
	// Compat is the publisher's compat: mapping for the service, in YAML
	// flow style, or "".
	Compat string
	// Foreign records are served by a stand-in DNS server instead of our
	// publisher, which refuses to publish them: the TXT records at
	// _grpc_config.<host> (and at the bare host, for grpc-js), each cut
	// into strings of 255 bytes.
	Foreign []string
	// Lint is the set of warning and error codes lint reports on the
	// record as served; empty for a clean record.
	Lint []string
	// Intent is the outcome gRFC A2 and A21 prescribe for a client here
	// (none of them sets a default service config), and IntentFor the
	// exceptions for clients of one language. Our resolver implements
	// them; a table cell that differs is a client's quirk.
	Intent    string
	IntentFor map[string]string
	// Want is, per client, the outcome the suite asserts where it differs
	// from the intent: the quirks, as measured. Outcomes joined by "|"
	// are alternatives that depend on timing.
	Want map[string]string
	// Fix names the case that applies lint's advice to this one.
	Fix string
}

func (c *testCase) intent(client string) string {
	if w, ok := c.IntentFor[client]; ok {
		return w
	}
	return c.Intent
}

func (c *testCase) want(client string) []string {
	if w, ok := c.Want[client]; ok {
		return strings.Split(w, "|")
	}
	return []string{c.intent(client)}
}

// goClients are the clients whose language is Go.
var goClients = map[string]string{grpcGo: applied, ours: applied}

func choices(cs ...string) string { return "[" + strings.Join(cs, ",") + "]" }

func choice(criteria, config string) string {
	if criteria != "" {
		criteria += ","
	}
	return "{" + criteria + `"serviceConfig":` + config + "}"
}

// hostname is this machine's host name, which every client of the suite
// reads alike (os.Hostname, Node's os.hostname(), C-core's gethostname(2),
// grpc-java's InetAddress.getLocalHost().getHostName(), answered from the
// runner's hosts file); each client reports the name it read, and the
// runner checks it is this one. The hostname cases publish it exactly and
// upper-cased.
var hostname, hostnameErr = os.Hostname()

// hostnameChoice is a choice of full for the clients whose host name is h,
// then a catch-all.
func hostnameChoice(h string) string {
	q, _ := json.Marshal([]string{h})
	return choices(choice(`"clientHostname":`+string(q), full), choice("", "{}"))
}

// Variants of full in the shapes A2 and proto3 JSON read one way and some
// client another: a field name in the wrong case, a policy name in upper
// case, an empty loadBalancingConfig list.
var (
	timeoutCase = strings.Replace(full, `"timeout":`, `"Timeout":`, 1)
	policyUpper = strings.Replace(full, `"loadBalancingConfig":[{"round_robin":{}}]`, `"loadBalancingPolicy":"ROUND_ROBIN"`, 1)
	lbEmpty     = strings.Replace(full, `"loadBalancingConfig":[{"round_robin":{}}]`, `"loadBalancingConfig":[]`, 1)
)

// statusLower is full with a lower-case status code.
var statusLower = strings.Replace(full, `["UNAVAILABLE"]`, `["unavailable"]`, 1)

// Variants of full that proto3 JSON and the gRFCs allow and some clients
// refuse: OK among the retryable codes, maxAttempts as a string, and a
// method name of null (absent).
var (
	statusOK     = strings.Replace(full, `["UNAVAILABLE"]`, `["UNAVAILABLE","OK"]`, 1)
	numberString = strings.Replace(full, `"maxAttempts":3`, `"maxAttempts":"3"`, 1)
	nullMethod   = strings.Replace(full, `{"service":"grpcconfigdns.test.v1.Echo"}`, `{"service":"grpcconfigdns.test.v1.Echo","method":null}`, 1)
)

// cases are the records the suite publishes. The first two are the
// baseline; then each quirk of another client comes with the record that
// follows lint's advice.
var cases = []*testCase{
	{Host: "full", Title: "the config, in one choice for every client", Choices: choices(choice("", full)), Intent: applied},
	{Host: "none", Title: "no record", Intent: noConfig},

	{Host: "no-bare", Title: "the config, published only at `_grpc_config.<host>`", Choices: choices(choice("", full)), Compat: "{bareHost: false}",
		Intent: applied, Want: map[string]string{grpcJS: noConfig}, Fix: "bare-host"},
	{Host: "bare-host", Title: "the config, also at the bare host name (`compat: {bareHost: true}`)", Choices: choices(choice("", full)), Intent: applied},

	{Host: "lang-lower", Title: "`clientLanguage: [\"go\"]`, then a catch-all", Choices: choices(choice(`"clientLanguage":["go"]`, full), choice("", "{}")),
		Lint: []string{"choice-language-case"}, Intent: noConfig, IntentFor: goClients, Want: map[string]string{grpcGo: noConfig}, Fix: "lang-upper"},
	{Host: "lang-upper", Title: "`clientLanguage: [\"GO\"]`, then a catch-all", Choices: choices(choice(`"clientLanguage":["GO"]`, full), choice("", "{}")),
		Intent: noConfig, IntentFor: goClients},

	{Host: "lang-java", Title: "`clientLanguage: [\"JAVA\"]`, then a catch-all", Choices: choices(choice(`"clientLanguage":["JAVA"]`, full), choice("", "{}")),
		Intent: noConfig, IntentFor: map[string]string{grpcJava: applied}},

	// gRFC A2 compares clientLanguage case-insensitively, and so does
	// grpc-java (DnsNameResolver.maybeChooseServiceConfig: equalsIgnoreCase);
	// grpc-go compares exactly with "GO", grpc-js with "node"
	// (service-config.js), and C-core with "c++" (never "python"). An empty
	// list matches every client in grpc-java (as in A2), none in grpc-go,
	// grpc-js and C-core 1.51 (its ChooseServiceConfig looks for "c++" in
	// the list).
	{Host: "lang-java-mixed", Title: "`clientLanguage: [\"Java\"]`, then a catch-all", Choices: choices(choice(`"clientLanguage":["Java"]`, full), choice("", "{}")),
		Intent: noConfig, IntentFor: map[string]string{grpcJava: applied}},
	{Host: "lang-mixed", Title: "`clientLanguage: [\"Go\", \"Node\", \"Python\"]`, then a catch-all", Choices: choices(choice(`"clientLanguage":["Go","Node","Python"]`, full), choice("", "{}")),
		Lint: []string{"choice-language-case"}, Intent: applied, IntentFor: map[string]string{grpcJava: noConfig}, Want: map[string]string{grpcGo: noConfig, grpcJS: noConfig, grpcPy: noConfig}},
	{Host: "lang-empty", Title: "`clientLanguage: []`, then a catch-all", Choices: choices(choice(`"clientLanguage":[]`, full), choice("", "{}")),
		Lint: []string{"choice-empty-list", "choice-unreachable"}, Intent: applied, Want: map[string]string{grpcGo: noConfig, grpcJS: noConfig, grpcPy: noConfig}},

	// No client of the suite is written in Swift.
	{Host: "no-catch-all", Title: "no choice for these clients", Choices: choices(choice(`"clientLanguage":["swift"]`, full)), Compat: "{allowGrpcGoFailure: true}",
		Lint: []string{"choices-no-catch-all"}, Intent: noConfig, Want: map[string]string{grpcGo: fails, grpcJS: jsRace}, Fix: "catch-all"},
	{Host: "catch-all", Title: "the same, then a catch-all `{\"serviceConfig\":{}}`", Choices: choices(choice(`"clientLanguage":["swift"]`, full), choice("", "{}")),
		Intent: noConfig},

	{Host: "empty-list", Title: "`clientHostname: []`", Choices: choices(choice(`"clientHostname":[]`, full)), Compat: "{allowGrpcGoFailure: true}",
		Lint: []string{"choice-empty-list"}, Intent: applied, Want: map[string]string{grpcGo: fails, grpcJS: jsRace, grpcPy: noConfig}, Fix: "no-list"},
	{Host: "no-list", Title: "no `clientHostname`", Choices: choices(choice("", full)), Intent: applied},
	// Every client compares clientHostname exactly with the name it reads
	// (grpc-java: String.equals with InetAddress.getLocalHost().getHostName()).
	{Host: "hostname-exact", Title: "`clientHostname: [this machine's host name]`, then a catch-all", Choices: hostnameChoice(hostname), Intent: applied},
	{Host: "hostname-upper", Title: "`clientHostname: [this machine's host name, upper-cased]`, then a catch-all", Choices: hostnameChoice(strings.ToUpper(hostname)), Intent: noConfig},

	{Host: "status-lower", Title: "lower-case status code `\"unavailable\"`", Choices: choices(choice("", statusLower)), Compat: "{allowGrpcGoFailure: true}",
		Lint: []string{"status-code-case"}, Intent: applied, Want: map[string]string{grpcGo: fails, grpcPy: fails, grpcJava: fails}, Fix: "status-upper"},
	{Host: "status-upper", Title: "`\"UNAVAILABLE\"`", Choices: choices(choice("", full)), Intent: applied},

	// grpc-java's ServiceConfigUtil: "retryableStatusCodes must not contain
	// OK"; grpc-java 1.41's JsonUtil reads no number written as a string
	// (1.43 and later do), nor a null where it expects a string.
	{Host: "status-ok", Title: "`\"OK\"` among the retryable status codes", Choices: choices(choice("", statusOK)),
		Lint: []string{"status-code-ok"}, Intent: applied, Want: map[string]string{grpcJava: fails}},
	{Host: "number-string", Title: "`\"maxAttempts\": \"3\"`, a number as a string", Choices: choices(choice("", numberString)), Compat: "{allowGrpcGoFailure: true}",
		Lint: []string{"number-string"}, Intent: applied, Want: map[string]string{grpcGo: fails, grpcJS: jsRace, grpcJava: fails}},
	{Host: "null-method", Title: "`\"method\": null` in a methodConfig name (`compat: {omitNulls: false}`)", Choices: choices(choice("", nullMethod)), Compat: "{omitNulls: false}",
		Lint: []string{"null-value"}, Intent: applied, Want: map[string]string{grpcJS: jsRace, grpcJava: fails}, Fix: "null-omitted"},
	{Host: "null-omitted", Title: "the same, published as by default (`omitNulls: true`): without the null member", Choices: choices(choice("", nullMethod)), Intent: applied},

	{Host: "short-durations", Title: "durations as written (`\"0.5s\"`)", Choices: choices(choice("", fullConfig("0.5s"))), Compat: "{nineDigitDurations: false}",
		Lint: []string{"duration-fraction"}, Intent: applied, Want: map[string]string{grpcJS: timesOut, grpcPy: timesOut}, Fix: "nine-digits"},
	{Host: "nine-digits", Title: "durations with nine digits (`\"0.500000000s\"`, the publisher's default)", Choices: choices(choice("", fullConfig("0.5s"))), Intent: applied, Want: map[string]string{grpcPy: timesOut}},

	{Host: "timeout-1s", Title: "a timeout of 1 s (C-core ends such calls about 1.8 s early: grpc/grpc#34547)", Choices: choices(choice("", fullConfig("1s"))), Intent: applied, Want: map[string]string{grpcPy: timesOut}},

	{Host: "duration-no-s", Title: "`\"timeout\": \"4\"`, a duration without `s`", Foreign: []string{"grpc_config=" + choices(choice("", nine(fullConfig("4"))))},
		Lint: []string{"duration"}, Intent: fails, Want: map[string]string{grpcJS: jsRace}},
	// grpc-go reads service config field names case-insensitively
	// (encoding/json); the others ignore a member they do not know.
	{Host: "field-case", Title: "`\"Timeout\"`, a field name in the wrong case", Choices: choices(choice("", timeoutCase)),
		Lint: []string{"field-case"}, Intent: without(effTimeout), Want: map[string]string{grpcGo: applied}},

	// loadBalancingPolicy: grpc-go looks the name up as written, grpc-js
	// ignores the field, C-core and grpc-java lower-case it. An empty
	// loadBalancingConfig: grpc-go and C-core find no policy in it and
	// reject the config; grpc-java and grpc-js take it as unset.
	{Host: "lb-policy-upper", Title: "`loadBalancingPolicy: \"ROUND_ROBIN\"`", Choices: choices(choice("", policyUpper)),
		Lint: []string{"lb-policy-compat"}, Intent: applied, Want: map[string]string{grpcGo: without(effRR), grpcJS: without(effRR)}},
	{Host: "lb-config-empty", Title: "`loadBalancingConfig: []`", Choices: choices(choice("", lbEmpty)), Compat: "{allowGrpcGoFailure: true}",
		Lint: []string{"lb-config-empty"}, Intent: without(effRR), Want: map[string]string{grpcGo: fails, grpcPy: fails}},

	{Host: "extension", Title: "`dynamicParameterConstraints` on a first choice for `env=canary`", Choices: choices(choice(`"dynamicParameterConstraints":{"constraint":{"key":"env","value":"canary"}}`, "{}"), choice("", full)),
		Lint: []string{"choice-extension-key"}, Intent: applied, Want: map[string]string{grpcGo: noConfig, grpcPy: noConfig, grpcJS: jsRace, grpcJava: fails}, Fix: "no-extension"},
	{Host: "no-extension", Title: "the record without the extension", Choices: choices(choice("", full)), Intent: applied},

	{Host: "other-txt", Title: "another TXT record at `_grpc_config.<host>`", Foreign: []string{"grpc_config=" + choices(choice("", nine(full))), "v=spf1 -all"},
		Lint: []string{"txt-other-records"}, Intent: applied, Want: map[string]string{grpcGo: fails}, Fix: "one-txt"},
	{Host: "one-txt", Title: "only the `grpc_config=` record", Foreign: []string{"grpc_config=" + choices(choice("", nine(full)))}, Intent: applied},

	{Host: "hostname-key", Title: "misspelt key `clientHostName: [\"elsewhere\"]`, then a catch-all", Foreign: []string{"grpc_config=" + choices(choice(`"clientHostName":["elsewhere"]`, nine(full)), choice("", "{}"))},
		Lint: []string{"choice-unknown-key"}, Intent: fails, Want: map[string]string{grpcGo: noConfig, grpcJS: jsRace, grpcPy: applied}, Fix: "hostname-ok"},
	{Host: "hostname-ok", Title: "`clientHostname: [\"elsewhere\"]`, then a catch-all", Foreign: []string{"grpc_config=" + choices(choice(`"clientHostname":["elsewhere"]`, nine(full)), choice("", "{}"))},
		Intent: noConfig},
	// grpc-java (DnsNameResolver.maybeChooseServiceConfig) and grpc-js
	// (validateAndSelectCanaryConfig) check each choice as they come to it
	// and stop at the first that matches; grpc-go and C-core ignore
	// unknown keys.
	{Host: "late-unknown-key", Title: "the config for every client, then a choice with the misspelt key `clientHostName`", Foreign: []string{"grpc_config=" + choices(choice("", nine(full)), choice(`"clientHostName":["elsewhere"]`, "{}"))},
		Lint: []string{"choice-unknown-key"}, Intent: fails, Want: map[string]string{grpcGo: applied, grpcJS: applied, grpcPy: applied, grpcJava: applied}},

	// grpc-java 1.41's JsonParser keeps the last of two members with one
	// name (1.68.1 and later reject them, as C-core does).
	{Host: "duplicate-key", Title: "`serviceConfig` twice in one choice", Foreign: []string{`grpc_config=[{"serviceConfig":{},"serviceConfig":` + nine(full) + `}]`},
		Lint: []string{"json-duplicate-key"}, Intent: fails, Want: map[string]string{grpcGo: applied, grpcJS: applied, grpcJava: applied}, Fix: "single-key"},
	{Host: "single-key", Title: "`serviceConfig` once", Foreign: []string{"grpc_config=" + choices(choice("", nine(full)))}, Intent: applied},

	// C-core and grpc-js read the first grpc_config= record, grpc-java joins
	// the choice lists of all of them (DnsNameResolver.parseTxtResults),
	// grpc-go joins every record into one text. grpc-java's JsonParser
	// reads one JSON value and ignores what follows.
	{Host: "two-configs", Title: "two `grpc_config=` records: first one choice for Swift, then the config", Foreign: []string{"grpc_config=" + choices(choice(`"clientLanguage":["swift"]`, "{}")), "grpc_config=" + choices(choice("", nine(full)))},
		Lint: []string{"choices-no-catch-all", "txt-multiple-config"}, Intent: fails, Want: map[string]string{grpcJS: jsRace, grpcPy: noConfig, grpcJava: applied}},
	{Host: "trailing-text", Title: "a `]` too many after the choice list", Foreign: []string{"grpc_config=" + choices(choice("", nine(full))) + "]"},
		Lint: []string{"json-syntax"}, Intent: fails, Want: map[string]string{grpcJS: jsRace, grpcJava: applied}},
	{Host: "percentage-string", Title: "`percentage: \"100\"`, a string", Foreign: []string{"grpc_config=" + choices(choice(`"percentage":"100"`, nine(full)))},
		Lint: []string{"choice-percentage"}, Intent: fails, Want: map[string]string{grpcJS: jsRace}},
	// A percentage out of range or with a fraction: grpc-go reads an
	// integer and does not check the range; C-core 1.51 reads the number
	// with sscanf("%d") (0.9 is 0, which matches no client) and does not
	// check the range either; grpc-java takes the integer part and rejects
	// one outside 0..100; grpc-js checks the range and compares the
	// fraction with a random number (jsDraw).
	{Host: "percentage-101", Title: "`percentage: 101`, then a catch-all", Foreign: []string{"grpc_config=" + choices(choice(`"percentage":101`, nine(full)), choice("", "{}"))},
		Lint: []string{"choice-percentage"}, Intent: fails, Want: map[string]string{grpcGo: applied, grpcJS: jsRace, grpcPy: applied}},
	{Host: "percentage-fraction", Title: "`percentage: 0.9`, then a catch-all", Foreign: []string{"grpc_config=" + choices(choice(`"percentage":0.9`, nine(full)), choice("", "{}"))},
		Lint: []string{"choice-percentage"}, Intent: fails, Want: map[string]string{grpcJS: jsDraw, grpcPy: noConfig, grpcJava: noConfig}},
}

// The change case: a name with no record whose config is published while
// the clients' channels run.
var change = &testCase{Host: "change", Title: "config published while the channel runs (TTL 5 s)", Choices: choices(choice("", full))}

// changeWant is, per client, whether the change reaches a running channel
// within the watch window; ours must within the record's TTL.
var changeWant = map[string]bool{grpcGo: false, ours: true, grpcJS: false, grpcPy: false, grpcJava: false}
