package model

import (
	"fmt"
	"strings"
	"testing"

	sc "github.com/grpc-config-dns/grpc-config-dns/serviceconfig"
)

func TestExample(t *testing.T) {
	cfg, ds := Parse(Example)
	if len(ds) > 0 {
		t.Fatalf("the built-in example has diagnostics:\n%s", dump(ds))
	}
	if len(cfg.Zones) != 1 || len(cfg.Zones[0].Services) != 3 {
		t.Fatalf("unexpected shape: %+v", cfg.Zones)
	}
	echo := cfg.Zones[0].Services[0]
	if echo.Name != "echo.example.test." || echo.TTL != 30 || len(echo.Addresses) != 2 {
		t.Errorf("echo = %+v", echo)
	}
	if !strings.HasPrefix(echo.TXT[0], `grpc_config=[{"clientLanguage":["GO"],"serviceConfig":{"loadBalancingConfig":[{"round_robin":{}}]`) {
		t.Errorf("echo TXT = %q", echo.TXT)
	}
	if got := string(cfg.Zones[0].Services[1].Value()); got != `[{"serviceConfig":{"methodConfig":[{"name":[{"service":"helloworld.Greeter"}],"timeout":"3s"}]}}]` {
		t.Errorf("greeter value = %s", got)
	}
	z := cfg.Zones[0]
	if z.SOA.MName != "ns1.example.test." || z.SOA.RName != "hostmaster.example.test." || z.SOA.Refresh != DefaultRefresh {
		t.Errorf("soa = %+v", z.SOA)
	}
}

func dump(ds sc.Diagnostics) string {
	var b strings.Builder
	for _, d := range ds {
		fmt.Fprintf(&b, "%d:%d: %s: %s [%s] (at %s)\n", d.Line, d.Column, d.Severity, d.Message, d.Code, d.Path)
	}
	return b.String()
}

// TestDiagnostics checks that each problem is reported with its code, at
// the right line and column, with the right JSON pointer.
func TestDiagnostics(t *testing.T) {
	type want struct {
		line, col  int
		code, path string
	}
	for _, tc := range []struct {
		name string
		text string
		want []want
	}{
		{"unknown key with suggestion", `
zones:
  - origin: example.test.
    nameservers: [{name: ns1, addresses: [192.0.2.1]}]
    services:
      - name: echo
        adresses: [192.0.2.2]
`, []want{{6, 15, "service-empty", "/zones/0/services/0/name"}, {7, 9, "unknown-key", "/zones/0/services/0/adresses"}}},
		{"bad service config mapped to YAML", `
zones:
  - origin: example.test.
    nameservers: [{name: ns1, addresses: [192.0.2.1]}]
    services:
      - name: echo
        choices:
          - percentage: 120
            serviceConfig:
              methodConfig:
                - name: [{service: a.B}]
                  timeout: 1m
`, []want{{8, 25, "choice-percentage", "/zones/0/services/0/choices/0/percentage"}, {12, 28, "duration", "/zones/0/services/0/choices/0/serviceConfig/methodConfig/0/timeout"}}},
		{"record grpc-go channels fail on", `
zones:
  - origin: example.test.
    nameservers: [{name: ns1, addresses: [192.0.2.1]}]
    services:
      - name: echo
        choices:
          - clientLanguage: [java]
            serviceConfig: {}
`, []want{{8, 13, "choices-no-catch-all", "/zones/0/services/0/choices/0"}}},
		{"grpc-go rejects the chosen config", `
zones:
  - origin: example.test.
    nameservers: [{name: ns1, addresses: [192.0.2.1]}]
    services:
      - name: echo
        choices:
          - clientLanguage: [java]
            serviceConfig: {}
          - serviceConfig:
              methodConfig:
                - name: [{}]
                  retryPolicy: {maxAttempts: 3, initialBackoff: 0.1s, maxBackoff: 1s, backoffMultiplier: 2, retryableStatusCodes: [unavailable]}
`, []want{{13, 132, "status-code-case", "/zones/0/services/0/choices/1/serviceConfig/methodConfig/0/retryPolicy/retryableStatusCodes/0"}}},
		{"compat options", `
zones:
  - origin: example.test.
    nameservers: [{name: ns1, addresses: [192.0.2.1]}]
    compat: {nineDigitDurations: false, allowGrpcGoFailure: yes}
    services:
      - name: echo
        bareHostCompat: true
        compat: {bareHost: false, colour: red}
        serviceConfig: {methodConfig: [{name: [{}], timeout: 0.5s}]}
`, []want{{5, 61, "field-type", "/zones/0/compat/allowGrpcGoFailure"}, {8, 25, "compat-conflict", "/zones/0/services/0/bareHostCompat"}, {9, 35, "unknown-key", "/zones/0/services/0/compat/colour"}, {10, 62, "duration-fraction", "/zones/0/services/0/serviceConfig/methodConfig/0/timeout"}}},
		{"names", `
zones:
  - origin: example.test
    nameservers: [ns1.example.net.]
    services:
      - {name: echo.example.test, addresses: [192.0.2.1]}
      - {name: other.example.org., addresses: [192.0.2.1]}
      - {name: -bad, addresses: [192.0.2.1]}
      - {name: _grpc_config.x, addresses: [192.0.2.1]}
      - {name: Echo.Example.Test., addresses: [192.0.2.3]}
      - {name: echo, addresses: [192.0.2.4]}
`, []want{
			{6, 16, "name-repeats-origin", "/zones/0/services/0/name"},
			{7, 16, "name-outside-zone", "/zones/0/services/1/name"},
			{8, 16, "name-syntax", "/zones/0/services/2/name"},
			{9, 16, "name-reserved", "/zones/0/services/3/name"},
			{11, 16, "service-duplicate", "/zones/0/services/5/name"},
		}},
		{"addresses and ttls", `
zones:
  - origin: example.test.
    ttl: 3000000000
    nameservers: [ns1]
    services:
      - name: echo
        ttl: 2d
        addresses: [192.0.2.1, 192.0.2.1, "10.0.0.1:80", www.example.net, "fe80::1%eth0"]
`, []want{
			{4, 10, "ttl-range", "/zones/0/ttl"},
			{5, 19, "ns-no-address-standalone", "/zones/0/nameservers/0"},
			{8, 14, "ttl-large", "/zones/0/services/0/ttl"},
			{9, 32, "address-duplicate", "/zones/0/services/0/addresses/1"},
			{9, 43, "address-syntax", "/zones/0/services/0/addresses/2"},
			{9, 58, "address-syntax", "/zones/0/services/0/addresses/3"},
			{9, 75, "address-syntax", "/zones/0/services/0/addresses/4"},
		}},
		{"a nameserver without address in a transferred zone", `
zones:
  - origin: example.test.
    nameservers: [ns1]
    transfer: {allow: [10.0.1.0/24], key: k}
    services:
      - {name: echo, addresses: [192.0.2.1]}
tsigKeys:
  - {name: k, algorithm: hmac-sha256, secret: c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0MTI=}
`, []want{
			{4, 19, "ns-no-address", "/zones/0/nameservers/0"},
		}},
		{"yaml values without JSON equivalent", `
zones:
  - origin: example.test.
    nameservers: [{name: ns1, addresses: [192.0.2.1]}]
    services:
      - name: echo
        choices:
          - percentage: 010
            serviceConfig: {}
`, []want{{8, 25, "yaml-value", "/zones/0/services/0/choices/0/percentage"}}},
		{"both choices and serviceConfig", `
zones:
  - origin: example.test.
    nameservers: [{name: ns1, addresses: [192.0.2.1]}]
    services:
      - name: echo
        choices: [{serviceConfig: {}}]
        serviceConfig: {}
`, []want{{8, 24, "choices-and-config", "/zones/0/services/0/serviceConfig"}}},
		{"service ports", `
zones:
  - origin: example.test.
    nameservers: [{name: ns1, addresses: [192.0.2.1]}]
    services:
      - {name: zero, addresses: [192.0.2.2], port: 0}
      - {name: big, addresses: [192.0.2.2], port: 65536}
      - {name: fine, addresses: [192.0.2.2], port: 65535}
      - {name: nowhere, port: 50051, serviceConfig: {}}
`, []want{
			{6, 52, "srv-port", "/zones/0/services/0/port"},
			{7, 51, "srv-port", "/zones/0/services/1/port"},
			{9, 31, "srv-no-address", "/zones/0/services/3/port"},
		}},
		// The file ends (line 3) where a value of the list is expected.
		{"syntax", "zones:\n  - origin: [\n", []want{{3, 1, "yaml-syntax", ""}}},
		// YAML's parser counts lines from 0: these were one line early
		// (issue 18). The list opened on line 6 is not closed.
		{"unclosed list", "zones:\n  - origin: example.test.\n    nameservers: [ns.example.net.]\n    services:\n      - name: echo\n        addresses: [127.0.0.1\n      - name: b\n", []want{{6, 1, "yaml-syntax", ""}}},
		{"block list", "zones:\n  - origin: example.test.\n  nameservers: []\n", []want{{2, 1, "yaml-syntax", ""}}},
		{"no zones", "server: {}\n", []want{{1, 1, "missing-field", ""}}},
		{"nested and duplicate zones", `
zones:
  - origin: example.test.
    nameservers: [ns.example.net.]
  - origin: sub.example.test.
    nameservers: [ns.example.net.]
  - origin: EXAMPLE.test
    nameservers: [ns.example.net.]
`, []want{{5, 13, "zone-nested", "/zones/1/origin"}, {7, 13, "zone-duplicate", "/zones/2/origin"}}},
		{"transfer and keys", `
tsigKeys:
  - name: xfr
    secret: "not base64!"
  - name: short
    secret: c2hvcnQ=
zones:
  - origin: example.test.
    nameservers: [ns.example.net.]
    transfer:
      allow: [0.0.0.0/0, 10.0.0.1/8, nonsense]
      key: missing
      notify: [192.0.2.9, "192.0.2.10:99999"]
`, []want{
			{4, 13, "tsig-key", "/tsigKeys/0/secret"},
			{6, 13, "tsig-key-short", "/tsigKeys/1/secret"},
			{11, 26, "transfer-acl", "/zones/0/transfer/allow/1"},
			{11, 38, "transfer-acl", "/zones/0/transfer/allow/2"},
			{12, 12, "tsig-key-unknown", "/zones/0/transfer/key"},
			{13, 27, "notify-target", "/zones/0/transfer/notify/1"},
		}},
		{"duplicate keys", `
zones:
  - origin: example.test.
    nameservers: [ns.example.net.]
    origin: example.org.
`, []want{{5, 5, "yaml-duplicate-key", "/zones/0/origin"}}},
		{"size", `
zones:
  - origin: example.test.
    nameservers: [{name: ns1, addresses: [192.0.2.1]}]
    services:
      - name: big
        serviceConfig:
          methodConfig:
            - name: [{service: ` + strings.Repeat("x", 70000) + `}]
`, []want{{8, 11, "txt-too-large", "/zones/0/services/0/serviceConfig"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, ds := Parse([]byte(tc.text))
			var got []want
			for _, d := range ds {
				got = append(got, want{d.Line, d.Column, d.Code, d.Path})
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("got:\n%s\nwant %v", dump(ds), tc.want)
			}
			if ds.HasErrors() != (cfg == nil) {
				t.Errorf("config %v returned with errors=%v", cfg != nil, ds.HasErrors())
			}
		})
	}
}

// TestCompat checks what each compat option changes in the published
// record, and that a service's compat: overrides its zone's field by field.
func TestCompat(t *testing.T) {
	cfg, ds := Parse([]byte(`
zones:
  - origin: example.test.
    nameservers: [{name: ns1, addresses: [192.0.2.1]}]
    compat: {nineDigitDurations: false, allowGrpcGoFailure: true, clients: [go, c-core]}
    services:
      - name: plain
        serviceConfig: {methodConfig: [{name: [{}], timeout: 0.5s}]}
      - name: padded
        compat: {nineDigitDurations: true, bareHost: true}
        serviceConfig: {methodConfig: [{name: [{}], timeout: 0.5s}]}
      - name: javaonly
        choices: [{clientLanguage: [java], serviceConfig: {}}]
      - name: strict
        compat: {allowGrpcGoFailure: false}
        serviceConfig: {}
      - name: legacy
        bareHostCompat: true
        serviceConfig: {}
      - name: empty-method
        serviceConfig: {methodConfig: [{name: [{service: s, method: }]}]}
      - name: null-kept
        compat: {omitNulls: false}
        serviceConfig: {methodConfig: [{name: [{service: s, method: }]}]}
`))
	if ds.HasErrors() {
		t.Fatalf("diagnostics:\n%s", dump(ds))
	}
	svcs := cfg.Zones[0].Services
	const cc = sc.ClientGo | sc.ClientCCore
	want := []struct {
		value string
		c     Compat
	}{
		{`[{"serviceConfig":{"methodConfig":[{"name":[{}],"timeout":"0.5s"}]}}]`, Compat{Clients: cc, OmitNulls: true, AllowGrpcGoFailure: true}},
		{`[{"serviceConfig":{"methodConfig":[{"name":[{}],"timeout":"0.500000000s"}]}}]`, Compat{Clients: cc, NineDigitDurations: true, OmitNulls: true, BareHost: true, AllowGrpcGoFailure: true}},
		{`[{"clientLanguage":["java"],"serviceConfig":{}}]`, Compat{Clients: cc, OmitNulls: true, AllowGrpcGoFailure: true}},
		{`[{"serviceConfig":{}}]`, Compat{Clients: cc, OmitNulls: true}},
		{`[{"serviceConfig":{}}]`, Compat{Clients: cc, OmitNulls: true, BareHost: true, AllowGrpcGoFailure: true}},
		// YAML's empty value is null: left out, since grpc-java and
		// grpc-js reject it (the interop suite's null-method case).
		{`[{"serviceConfig":{"methodConfig":[{"name":[{"service":"s"}]}]}}]`, Compat{Clients: cc, OmitNulls: true, AllowGrpcGoFailure: true}},
		{`[{"serviceConfig":{"methodConfig":[{"name":[{"service":"s","method":null}]}]}}]`, Compat{Clients: cc, AllowGrpcGoFailure: true}},
	}
	for i, w := range want {
		if got := string(svcs[i].Value()); got != w.value || svcs[i].Compat != w.c {
			t.Errorf("%s: value %s, compat %+v; want %s, %+v", svcs[i].Name, got, svcs[i].Compat, w.value, w.c)
		}
	}
	var nullWarnings []string
	for _, d := range ds {
		if d.Code == "null-value" {
			nullWarnings = append(nullWarnings, d.Path)
		}
	}
	if len(nullWarnings) != 1 || !strings.HasPrefix(nullWarnings[0], "/zones/0/services/6/") {
		t.Errorf("null-value warnings at %v, want one, for the service that keeps its null", nullWarnings)
	}
	if def, _ := Parse(Example); def.Zones[0].Compat != DefaultCompat || !DefaultCompat.NineDigitDurations || !DefaultCompat.OmitNulls || DefaultCompat.BareHost || DefaultCompat.AllowGrpcGoFailure {
		t.Errorf("defaults: zone %+v, DefaultCompat %+v", def.Zones[0].Compat, DefaultCompat)
	}
	// The publisher's default is encode's: one set of publish options.
	if o, want := DefaultCompat.publishOptions(""), sc.DefaultPublishOptions(); o != want {
		t.Errorf("DefaultCompat publishes with %+v, serviceconfig's default is %+v", o, want)
	}
}

// Strings of dynamic parameter constraints that are not printable ASCII
// are published as \u escapes: gRFC A2 records are ASCII, and a client
// rejects the whole record otherwise.
func TestConstraintsPublishedAsASCII(t *testing.T) {
	cfg, ds := Parse([]byte(`
zones:
  - origin: example.test.
    nameservers: [{name: ns1, addresses: [192.0.2.1]}]
    services:
      - name: cafe
        compat: {clients: [dnsconfig]}
        choices:
          - dynamicParameterConstraints: {constraint: {key: env, value: "café\a\x7f"}}
            serviceConfig: {}
          - serviceConfig: {}
`))
	if ds.HasErrors() {
		t.Fatalf("diagnostics:\n%s", dump(ds))
	}
	v := cfg.Zones[0].Services[0].Value()
	want := `[{"dynamicParameterConstraints":{"constraint":{"key":"env","value":"caf\u00e9\u0007\u007f"}},"serviceConfig":{}},{"serviceConfig":{}}]`
	if string(v) != want {
		t.Fatalf("published %s\nwant      %s", v, want)
	}
	ch, err := sc.ParseChoices(v)
	if err != nil {
		t.Fatal(err)
	}
	if got := ch.Select(sc.Client{Language: "go", Bucket: 1, Params: map[string]string{"env": "café\a\x7f"}}); got != 0 {
		t.Errorf("a client with env=café… selects %d, want 0", got)
	}
}

// The size warnings are about the record as served: nine-digit durations
// make it longer than the config as written.
func TestSizeOfThePublishedRecord(t *testing.T) {
	config := func(n int) (yamlText string, written []byte) {
		var mc []string
		for i := range n {
			mc = append(mc, fmt.Sprintf(`{"name":[{"service":"s%d"}],"timeout":"0.5s"}`, i))
		}
		js := `{"methodConfig":[` + strings.Join(mc, ",") + `]}`
		return "zones:\n  - origin: example.test.\n    nameservers: [{name: ns1, addresses: [192.0.2.1]}]\n    services:\n      - name: big\n        serviceConfig: " + js + "\n",
			[]byte(`[{"serviceConfig":` + js + `}]`)
	}
	owner := "_grpc_config.big.example.test."
	// sizes are the size diagnostics of the record that publishes value.
	sizes := func(value []byte) sc.Diagnostics {
		var out sc.Diagnostics
		for _, d := range sc.LintRecords([][]string{sc.EncodeTXT(value)}, sc.LintOptions{Owner: owner}) {
			if strings.HasPrefix(d.Code, "txt-size-") || d.Code == "txt-too-large" {
				out = append(out, d)
			}
		}
		return out
	}
	for n := 1; n < 200; n++ {
		text, written := config(n)
		if len(sizes(written)) > 0 {
			t.Fatalf("no config that fits as written but not as served")
		}
		cfg, ds := Parse([]byte(text))
		if cfg == nil {
			t.Fatalf("%d methods:\n%s", n, dump(ds))
		}
		served := cfg.Zones[0].Services[0].Value()
		want := sizes(served)
		if len(want) == 0 {
			continue
		}
		// Fits as written, not as served: the publisher must say so.
		for _, d := range ds {
			if d.Code == want[0].Code && d.Message == want[0].Message {
				return
			}
		}
		t.Fatalf("%d methods: the served record gets %s (%s), the publisher said:\n%s", n, want[0].Code, want[0].Message, dump(ds))
	}
	t.Fatal("never crossed a size limit")
}

// A misspelt field is valid in a record (clients ignore it) but drops the
// value its author meant: the publisher refuses it, where it was written,
// unless the service allows it; a field with no near match is published
// with a warning.
func TestMisspelledFieldIsNotPublished(t *testing.T) {
	text := `
zones:
  - origin: example.test.
    nameservers: [{name: ns1, addresses: [192.0.2.1]}]
    services:
      - name: typo
        serviceConfig: {methodConfig: [{name: [{}], timout: 1s}]}
`
	cfg, ds := Parse([]byte(text))
	if cfg != nil || len(ds) != 1 || ds[0].Code != "misspelled-field" || ds[0].Line != 7 || ds[0].Column != 53 ||
		!strings.Contains(ds[0].Message, `"timeout"`) || !strings.Contains(ds[0].Message, "allowMisspelledFields") {
		t.Fatalf("got %v %+v; want one misspelled-field error at 7:53 naming timeout and the compat flag", cfg != nil, ds)
	}
	allowed := strings.Replace(text, "- name: typo", "- name: typo\n        compat: {allowMisspelledFields: true}", 1)
	cfg, ds = Parse([]byte(allowed))
	if cfg == nil || len(ds) != 1 || ds[0].Code != "unknown-field" {
		t.Fatalf("allowed: got %v %+v; want it published with the unknown-field warning", cfg != nil, ds)
	}
	if v := string(cfg.Zones[0].Services[0].Value()); !strings.Contains(v, `"timout"`) {
		t.Errorf("allowed: published %s; want the field as written", v)
	}
	unrelated := strings.Replace(text, "timout", "xExtension", 1)
	if cfg, ds = Parse([]byte(unrelated)); cfg == nil || len(ds) != 1 || ds[0].Code != "unknown-field" {
		t.Errorf("a field with no near match: got %v %+v; want it published with a warning", cfg != nil, ds)
	}
}

// compat.clients takes a list or a comma-separated string; an unknown
// client is an error at its place, naming the known ones.
func TestCompatClients(t *testing.T) {
	cfg, ds := Parse([]byte(`
zones:
  - origin: example.test.
    nameservers: [{name: ns1, addresses: [192.0.2.1]}]
    compat: {clients: "go, java"}
    services:
      - name: a
        compat: {clients: [node]}
        serviceConfig: {}
      - name: b
        serviceConfig: {}
`))
	if ds.HasErrors() {
		t.Fatalf("diagnostics:\n%s", dump(ds))
	}
	if got := cfg.Zones[0].Services[0].Compat.Clients; got != sc.ClientNode {
		t.Errorf("service a declares %v, want grpc-js", got)
	}
	if got := cfg.Zones[0].Services[1].Compat.Clients; got != sc.ClientGo|sc.ClientJava {
		t.Errorf("service b declares %v, want the zone's grpc-go and grpc-java", got)
	}
	_, ds = Parse([]byte(`
zones:
  - origin: example.test.
    nameservers: [{name: ns1, addresses: [192.0.2.1]}]
    compat: {clients: [go, swift]}
    services: []
`))
	if len(ds) != 1 || ds[0].Line != 5 || ds[0].Column != 28 || !strings.Contains(ds[0].Message, `unknown client "swift": list clients from go, c-core, java, node, dnsconfig, or all`) {
		t.Errorf("diagnostics:\n%s", dump(ds))
	}
}
