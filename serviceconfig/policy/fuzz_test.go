package policy

import (
	"strings"
	"testing"
)

// FuzzParse: no input makes Parse panic; what it accepts resolves and
// applies without error, and its problems are placed.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		`{"name":"retries","targetRef":{"kind":"Zone"},"default":{"methodConfig":[{"name":[{"service":"echo.Echo"}],"retryPolicy":{"maxAttempts":3}}]}}`,
		`{"name":"team","targetRef":{"kind":"Service","labels":{"team":"payments"}},"default":{"loadBalancingConfig":[{"round_robin":{}}]}}`,
		`{"name":"one","targetRef":{"kind":"Service","name":"echo"},"default":{"retryThrottling":{"maxTokens":10,"tokenRatio":0.1}}}`,
		`{"name":"x","targetRef":{"kind":"Zone","labels":{}},"default":[]}`,
		`{"name":"","targetRef":{"kind":"Service"},"default":{"percentage":1}}`,
		`[`, `{}`, `null`, `{"name":"a","name":"a"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		p, probs := Parse(src)
		if p == nil {
			if len(probs) == 0 {
				t.Fatal("refused without a problem")
			}
			for _, pr := range probs {
				if pr.Offset > len(src) || pr.Message == "" || pr.Code == "" || pr.Path != "" && !strings.HasPrefix(pr.Path, "/") {
					t.Fatalf("badly placed problem %+v", pr)
				}
			}
			return
		}
		s, err := NewSet([]*Policy{p})
		if err != nil {
			t.Fatal(err)
		}
		target := Target{Name: p.TargetRef.Name, Labels: p.TargetRef.Labels}
		for _, own := range []string{
			`[{"serviceConfig":{"methodConfig":[{"name":[{}]}]}},{"serviceConfig":{}}]`,
			// Two entries of one name: the second merges into the first.
			`[{"serviceConfig":{"methodConfig":[{"name":[{}],"timeout":"1s"},{"name":[{"service":""}],"waitForReady":true,"timeout":"2s"}],"retryThrottling":{"maxTokens":3}}}]`,
		} {
			r, err := s.StackFor(target).Apply([]byte(own), true)
			if err != nil || len(r.JSON) == 0 {
				t.Fatalf("Apply: %v", err)
			}
			sameTracked(t, r)
		}
	})
}
