package model

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	sc "github.com/grpc-config-dns/grpc-config-dns/serviceconfig"
)

const policyConfig = `zones:
  - origin: example.test.
    nameservers: [ns1.example.net.]
    policies:
      - name: retries
        targetRef: {kind: Zone}
        default:
          methodConfig:
            - name: [{service: echo.Echo}]
              timeout: 1s
              retryPolicy: {maxAttempts: 3, initialBackoff: 0.1s, maxBackoff: 1s, backoffMultiplier: 2, retryableStatusCodes: [UNAVAILABLE]}
      - name: payments-lb
        targetRef: {kind: Service, labels: {team: payments}}
        default: {loadBalancingConfig: [{round_robin: {}}]}
      - name: aaa-echo
        targetRef: {kind: Service, name: echo}
        default:
          methodConfig: [{name: [{service: echo.Echo}], timeout: 5s}]
    services:
      - name: echo
        addresses: [192.0.2.1]
        labels: {team: payments}
        choices:
          - clientLanguage: [GO]
            percentage: 10
            serviceConfig: {methodConfig: [{name: [{service: echo.Echo}], waitForReady: true}]}
          - serviceConfig: {}
      - name: other
        serviceConfig: {}
      - name: host
        addresses: [192.0.2.2]
`

func findService(t *testing.T, cfg *Config, name string) *Service {
	t.Helper()
	for _, z := range cfg.Zones {
		for _, s := range z.Services {
			if s.Name == name {
				return s
			}
		}
	}
	t.Fatalf("no service %s", name)
	return nil
}

func TestPoliciesMergeIntoPublishedRecords(t *testing.T) {
	cfg, ds := Parse([]byte(policyConfig))
	if cfg == nil || len(ds) != 1 || ds[0].Code != "txt-size-udp" || ds[0].Path != "/zones/0/services/0/choices" {
		t.Fatalf("want one txt-size-udp warning on echo's choices, got\n%s", dump(ds))
	}
	retry := `"retryPolicy":{"maxAttempts":3,"initialBackoff":"0.100000000s","maxBackoff":"1s","backoffMultiplier":2,"retryableStatusCodes":["UNAVAILABLE"]}`
	for name, want := range map[string]string{
		// aaa-echo sorts before retries by name, but names one service:
		// its timeout wins. The service's own waitForReady joins the same
		// methodConfig entry, in its first choice only.
		"echo.example.test.": `[{"clientLanguage":["GO"],"percentage":10,"serviceConfig":{"methodConfig":[{"name":[{"service":"echo.Echo"}],"timeout":"5s",` + retry + `,"waitForReady":true}],"loadBalancingConfig":[{"round_robin":{}}]}},` +
			`{"serviceConfig":{"methodConfig":[{"name":[{"service":"echo.Echo"}],"timeout":"5s",` + retry + `}],"loadBalancingConfig":[{"round_robin":{}}]}}]`,
		"other.example.test.": `[{"serviceConfig":{"methodConfig":[{"name":[{"service":"echo.Echo"}],"timeout":"1s",` + retry + `}]}}]`,
	} {
		if got := string(findService(t, cfg, name).Value()); got != want {
			t.Errorf("%s publishes\n%s\nwant\n%s", name, got, want)
		}
	}
	if host := findService(t, cfg, "host.example.test."); host.TXT != nil {
		t.Errorf("a plain host got a config from the policies: %q", host.TXT)
	}
}

// A policy's default may hold a headerExtraction rule (our extension,
// docs/headers.md): it reaches the published record of every service the
// policy selects, merged into the service's own methodConfig entry for the
// same method, and a client reading the record finds the rule.
func TestPolicyHeaderExtractionIsPublished(t *testing.T) {
	cfg, ds := Parse([]byte(`zones:
  - origin: example.test.
    nameservers: [ns1.example.net.]
    policies:
      - name: affinity
        targetRef: {kind: Service, labels: {team: payments}}
        default:
          methodConfig:
            - name: [{service: echo.Echo, method: Get}]
              headerExtraction: [{payloadFieldName: resource.id, delimiterCharacter: /, numElementsToKeep: 2, headerName: resource_affinity_key}]
    services:
      - name: echo
        labels: {team: payments}
        serviceConfig:
          methodConfig: [{name: [{service: echo.Echo, method: Get}], timeout: 1s}]
      - name: other
        serviceConfig: {}
`))
	if cfg == nil || len(ds) != 0 {
		t.Fatalf("want the config accepted without diagnostics, got\n%s", dump(ds))
	}
	rule := `"headerExtraction":[{"payloadFieldName":"resource.id","delimiterCharacter":"/","numElementsToKeep":2,"headerName":"resource_affinity_key"}]`
	for name, want := range map[string]string{
		"echo.example.test.":  `[{"serviceConfig":{"methodConfig":[{"name":[{"service":"echo.Echo","method":"Get"}],` + rule + `,"timeout":"1s"}]}}]`,
		"other.example.test.": `[{"serviceConfig":{}}]`,
	} {
		if got := string(findService(t, cfg, name).Value()); got != want {
			t.Errorf("%s publishes\n%s\nwant\n%s", name, got, want)
		}
	}
	var choices []struct{ ServiceConfig json.RawMessage }
	if err := json.Unmarshal(findService(t, cfg, "echo.example.test.").Value(), &choices); err != nil || len(choices) != 1 {
		t.Fatalf("echo's record is not one choice: %v", err)
	}
	hr, err := sc.ParseHeaderRules(choices[0].ServiceConfig)
	if err != nil {
		t.Fatal(err)
	}
	if rules, _ := hr.Lookup("/echo.Echo/Get"); len(rules) != 1 || rules[0].HeaderName != "resource_affinity_key" {
		t.Errorf("the rules a client reads for /echo.Echo/Get are %+v, want the policy's resource_affinity_key", rules)
	}
}

// A policy that makes one service invalid: the error is placed at the
// policy's value, names the service and the field, and nothing is
// published (Parse returns no config).
func TestPolicyBreakingAServiceIsPlacedInThePolicy(t *testing.T) {
	text := strings.Replace(policyConfig, "default: {loadBalancingConfig: [{round_robin: {}}]}", "default: {loadBalancingConfig: [{round_robin: {}}], retryThrottling: {maxTokens: 0}}", 1)
	cfg, ds := Parse([]byte(text))
	if cfg != nil {
		t.Fatal("a config with an invalid merged service was accepted")
	}
	line := 1 + strings.Count(text[:strings.Index(text, "maxTokens: 0")], "\n")
	var found bool
	for _, d := range ds {
		if d.Severity == sc.Error && d.Line == line && strings.HasPrefix(d.Path, "/zones/0/policies/1/default/retryThrottling/maxTokens") &&
			strings.Contains(d.Message, "payments-lb") && strings.Contains(d.Message, "echo.example.test.") && strings.Contains(d.Message, "/retryThrottling/maxTokens") {
			found = true
		}
	}
	if !found {
		t.Errorf("want an error at line %d in payments-lb naming echo.example.test. and the field, got\n%s", line, dump(ds))
	}
}

func TestPolicyDiagnostics(t *testing.T) {
	for _, c := range []struct{ name, from, to, code, path string }{
		{"unknown kind", "targetRef: {kind: Zone}", "targetRef: {kind: Mesh}", "policy", "/zones/0/policies/0/targetRef/kind"},
		{"duplicate name", "name: aaa-echo", "name: retries", "policy-duplicate", "/zones/0/policies/2/name"},
		{"unused", "targetRef: {kind: Service, name: echo}", "targetRef: {kind: Service, name: ehco}", "policy-unused", "/zones/0/policies/2/targetRef"},
		{"choice key in default", "default: {loadBalancingConfig: [{round_robin: {}}]}", "default: {percentage: 5}", "policy", "/zones/0/policies/1/default/percentage"},
		{"bad label", "labels: {team: payments}\n        choices", "labels: {team: pay ments}\n        choices", "label-syntax", "/zones/0/services/0/labels/team"},
	} {
		t.Run(c.name, func(t *testing.T) {
			text := strings.Replace(policyConfig, c.from, c.to, 1)
			if text == policyConfig {
				t.Fatal("the test changes nothing")
			}
			_, ds := Parse([]byte(text))
			for _, d := range ds {
				if d.Code == c.code && d.Path == c.path && d.Line > 0 {
					return
				}
			}
			t.Errorf("want %s at %s, got\n%s", c.code, c.path, dump(ds))
		})
	}
}

// The item cache keys on what determines a service's result: changing a
// policy reads again the services it selects, and gives what a fresh
// Parse gives.
func TestParserReadsAgainWhatAPolicyChanges(t *testing.T) {
	var b strings.Builder
	b.WriteString("zones:\n  - origin: fleet.test.\n    nameservers: [ns1.example.net.]\n    policies:\n      - name: team-a\n        targetRef: {kind: Service, labels: {team: a}}\n        default: {methodConfig: [{name: [{service: x.X}], timeout: TIMEOUT}]}\n    services:\n")
	for i := range 200 {
		fmt.Fprintf(&b, "      - name: svc%d\n        labels: {team: %c}\n        serviceConfig: {methodConfig: [{name: [{service: s%d}], timeout: 1s}]}\n", i, 'a'+rune(i%2), i)
	}
	v1 := strings.Replace(b.String(), "TIMEOUT", "1s", 1)
	v2 := strings.Replace(b.String(), "TIMEOUT", "7s", 1)
	var p Parser
	c1, ds := p.Parse([]byte(v1))
	if c1 == nil {
		t.Fatal(dump(ds))
	}
	c2, ds := p.Parse([]byte(v2))
	if c2 == nil {
		t.Fatal(dump(ds))
	}
	fresh, _ := Parse([]byte(v2))
	for i, s := range c2.Zones[0].Services {
		if !reflect.DeepEqual(s.TXT, fresh.Zones[0].Services[i].TXT) {
			t.Fatalf("%s: the Parser kept %q, a fresh Parse says %q", s.Name, s.TXT, fresh.Zones[0].Services[i].TXT)
		}
		if same := s == c1.Zones[0].Services[i]; same != (i%2 == 1) {
			t.Errorf("%s: reused %v, want reused only for team b", s.Name, same)
		}
	}
}

// TestPoliciesDocExample: the config in docs/policies.md is valid.
func TestPoliciesDocExample(t *testing.T) {
	doc := string(mustRead(t, "../docs/policies.md"))
	start := strings.Index(doc, "```yaml\n")
	end := strings.Index(doc[start+8:], "```")
	if start < 0 || end < 0 {
		t.Fatal("no yaml block in docs/policies.md")
	}
	if cfg, ds := Parse([]byte(doc[start+8 : start+8+end])); cfg == nil || ds.HasErrors() {
		t.Errorf("the config in docs/policies.md:\n%s", dump(ds))
	}
}

// fleetWithPolicies is n services with a team label each, under one zone
// policy, 20 team policies and 20 exceptions by name.
func fleetWithPolicies(n int) []byte {
	var b strings.Builder
	b.WriteString("zones:\n  - origin: big.test.\n    nameservers: [ns1.example.net.]\n    policies:\n")
	b.WriteString("      - {name: retries, targetRef: {kind: Zone}, default: {methodConfig: [{name: [{service: echo.Echo}], timeout: 2s, retryPolicy: {maxAttempts: 3, initialBackoff: 0.1s, maxBackoff: 1s, backoffMultiplier: 2, retryableStatusCodes: [UNAVAILABLE]}}]}}\n")
	for t := range 20 {
		fmt.Fprintf(&b, "      - {name: team-%d, targetRef: {kind: Service, labels: {team: t%d}}, default: {loadBalancingConfig: [{round_robin: {}}]}}\n", t, t)
		fmt.Fprintf(&b, "      - {name: svc-%d-x, targetRef: {kind: Service, name: svc-%d}, default: {retryThrottling: {maxTokens: 10, tokenRatio: 0.1}}}\n", t, t*(n/20))
	}
	b.WriteString("    services:\n")
	for i := range n {
		fmt.Fprintf(&b, "      - name: svc-%d\n        labels: {team: t%d}\n        addresses: [10.%d.%d.%d]\n        serviceConfig: {methodConfig: [{name: [{service: s%d.S}], timeout: 1s}]}\n", i, i%25, i>>16, i>>8&255, i&255, i)
	}
	return []byte(b.String())
}

// BenchmarkParseServicesWithPolicies: reading a fleet under 41 policies.
// Compare with BenchmarkParseServices: the merged configs are about three
// times larger, and validating them is most of the difference.
func BenchmarkParseServicesWithPolicies(b *testing.B) {
	for _, n := range []int{2500, 20_000} {
		text := fleetWithPolicies(n)
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			for b.Loop() {
				if cfg, ds := Parse(text); cfg == nil {
					b.Fatal(dump(ds))
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/service")
		})
	}
}
