package serviceconfig

import (
	"fmt"
	"strings"
	"testing"
)

func TestDeclaredGo(t *testing.T) {
	const full = `{"loadBalancingConfig":[{"round_robin":{}}]}`
	cases := []struct {
		name, value string
		choice      int    // -2: no failure
		reason      string // substring of the reason
	}{
		{"catch-all", `[{"serviceConfig":{}}]`, -2, ""},
		{"GO then catch-all", `[{"clientLanguage":["GO"],"percentage":20,"serviceConfig":` + full + `},{"serviceConfig":{}}]`, -2, ""},
		{"percentage 100 takes every draw", `[{"percentage":100,"serviceConfig":{}}]`, -2, ""},
		// grpc-go ignores the constraints: every grpc-go client takes a
		// choice meant for env=prod, a misreading.
		{"constraints are ignored by grpc-go", `[{"dynamicParameterConstraints":{"constraint":{"key":"env","value":"prod"}},"serviceConfig":{}}]`, 0, "[choice-extension-key]"},
		{"lower-case go only", `[{"clientLanguage":["go"],"serviceConfig":{}}]`, -1, "[choice-language-case]"},
		{"empty language list", `[{"clientLanguage":[],"serviceConfig":{}}]`, -1, "[choice-empty-list]"},
		{"empty hostname list", `[{"clientHostname":[],"serviceConfig":{}}]`, -1, "[choice-empty-list]"},
		{"percentage 0 only", `[{"percentage":0,"serviceConfig":{}}]`, -1, "[choices-no-catch-all]"},
		{"percentage only", `[{"percentage":20,"serviceConfig":{}}]`, -1, "[choices-no-catch-all]"},
		{"hostname only", `[{"clientHostname":["a","b"],"serviceConfig":{}}]`, -1, "[choices-no-catch-all]"},
		{"java only", `[{"clientLanguage":["java"],"serviceConfig":{}}]`, -1, "[choices-no-catch-all]"},
		{"lower-case status code in the chosen config",
			`[{"serviceConfig":{"methodConfig":[{"name":[{}],"retryPolicy":{"maxAttempts":3,"initialBackoff":"0.1s","maxBackoff":"1s","backoffMultiplier":2,"retryableStatusCodes":["unavailable"]}}]}}]`,
			0, "[status-code-case]"},
		{"field named in another case, with a value grpc-go rejects", `[{"serviceConfig":{"methodConfig":[{"name":[{}],"Timeout":"1"}]}}]`, 0, "[field-case]"},
		{"field named in another case, combining into an invalid name", `[{"serviceConfig":{"MethodConfig":[{"name":[{"method":"x"}]}]}}]`, 0, "[field-case]"},
		{"lower-case status code under a case-variant key", `[{"serviceConfig":{"methodConfig":[{"name":[{}],"retryPolicy":{"maxAttempts":3,"initialBackoff":"0.1s","maxBackoff":"1s","backoffMultiplier":2,"RetryableStatusCodes":["unavailable"]}}]}}]`, 0, "[field-case]"},
		// grpc-go reads the value, which the spec ignores: a misreading.
		{"field named in another case, with a good value", `[{"serviceConfig":{"methodConfig":[{"name":[{}],"WaitForReady":true}]}}]`, 0, "[field-case]"},
		{"lower-case status code under hedgingPolicy, which grpc-go ignores", `[{"serviceConfig":{"methodConfig":[{"name":[{}],"hedgingPolicy":{"maxAttempts":3,"nonFatalStatusCodes":["unavailable"]}}]}}]`, -2, ""},
		{"lower-case status code for java only", `[{"clientLanguage":["java"],"serviceConfig":{"methodConfig":[{"name":[{}],"retryPolicy":{"maxAttempts":3,"initialBackoff":"0.1s","maxBackoff":"1s","backoffMultiplier":2,"retryableStatusCodes":["unavailable"]}}]}},{"serviceConfig":{}}]`, -2, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec, ds := Publish(Source{JSON: []byte(tc.value), Kind: KindChoices}, PublishOptions{Clients: ClientGo})
			if tc.choice == -2 {
				if rec == nil {
					t.Fatalf("refused for grpc-go: %v", ds)
				}
				return
			}
			if rec != nil || !strings.Contains(fmt.Sprint(ds), tc.reason) {
				t.Fatalf("Publish for grpc-go = %v; want refused, saying %q", ds, tc.reason)
			}
		})
	}
}

func TestGrpcGoConfig(t *testing.T) {
	const in = `[{"serviceConfig":{"methodConfig":[{"name":[{}],"retryPolicy":{"maxAttempts":3,"initialBackoff":"0.1s","maxBackoff":"1s","backoffMultiplier":2,"retryableStatusCodes":["unavailable","Resource_Exhausted",14]}}]}}]`
	ch, err := ParseChoices([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	got := string(ch.GrpcGoConfig(0))
	want := `{"methodConfig":[{"name":[{}],"retryPolicy":{"maxAttempts":3,"initialBackoff":"0.1s","maxBackoff":"1s","backoffMultiplier":2,"retryableStatusCodes":["UNAVAILABLE","RESOURCE_EXHAUSTED",14]}}]}`
	if got != want {
		t.Errorf("GrpcGoConfig = %s\nwant          %s", got, want)
	}
	if err := grpcGoParse([]byte(got)); err != nil {
		t.Errorf("grpc-go rejects it: %v", err)
	}
	// The Kelvin sign folds to K, but does not upper-case to it: write the
	// canonical name. A member named in another case is left out, as the
	// spec ignores it and grpc-go would read it.
	ch, err = ParseChoices([]byte(`[{"serviceConfig":{"methodConfig":[{"name":[{}],"Timeout":"1","retryPolicy":{"maxAttempts":2,"initialBackoff":"1s","maxBackoff":"1s","backoffMultiplier":1,"retryableStatusCodes":["un\u212Anown"]}}]}}]`))
	if err != nil {
		t.Fatal(err)
	}
	got = string(ch.GrpcGoConfig(0))
	want = `{"methodConfig":[{"name":[{}],"retryPolicy":{"maxAttempts":2,"initialBackoff":"1s","maxBackoff":"1s","backoffMultiplier":1,"retryableStatusCodes":["UNKNOWN"]}}]}`
	if got != want {
		t.Errorf("GrpcGoConfig = %s\nwant          %s", got, want)
	}
	if err := grpcGoParse([]byte(got)); err != nil {
		t.Errorf("grpc-go rejects it: %v", err)
	}
	ch, _ = ParseChoices([]byte(`[{"serviceConfig":{"loadBalancingPolicy":"round_robin"}}]`))
	if got := string(ch.GrpcGoConfig(0)); got != `{"loadBalancingPolicy":"round_robin"}` {
		t.Errorf("a config without status codes changed: %s", got)
	}
}
