package model

import (
	"strings"
	"testing"

	"github.com/grpc-config-dns/grpc-config-dns/serviceconfig/policy"
)

func storeZone(t testing.TB) *Zone {
	z, ds := ValidateZone("example.test.", []byte(`{"nameservers":[{"name":"ns1","addresses":["192.0.2.53"]}]}`), nil)
	if z == nil {
		t.Fatal(ds)
	}
	return z
}

// TestStorePolicies: a zone given its policies as objects validates its
// services as a whole config with the same policies does, and places a
// policy's problem in the policy, naming the service and the field.
func TestStorePolicies(t *testing.T) {
	z := storeZone(t)
	retries, ds := ValidatePolicy(z, "retries", []byte(`{"targetRef":{"kind":"Zone"},"default":{"methodConfig":[{"name":[{"service":"s"}],"timeout":"5m"}]}}`))
	if retries == nil {
		t.Fatal(ds)
	}
	lb, ds := ValidatePolicy(z, "lb", []byte(`targetRef: {kind: Service, labels: {team: a}}
default: {loadBalancingConfig: [{round_robin: {}}]}`))
	if lb == nil {
		t.Fatal(ds)
	}
	zp, err := z.WithPolicies(nil)
	if err != nil || zp.PolicySet != nil {
		t.Fatalf("no policies: %v %v", err, zp.PolicySet)
	}
	zp, err = z.WithPolicies([]*policy.Policy{retries, lb})
	if err != nil {
		t.Fatal(err)
	}
	// The zone policy's timeout is not a duration: every service is
	// invalid, the problem placed in the policy.
	_, ds = ValidateService(zp, "echo", map[string]string{"team": "a"}, []byte(`{"serviceConfig":{}}`), nil)
	if !ds.HasErrors() || len(ds) == 0 || ds[0].Path != "/default/methodConfig/0/timeout" || !strings.Contains(ds[0].Message, "policy retries, applied to service echo.example.test.") {
		t.Fatalf("diagnostics: %+v", ds)
	}
	fixed, _ := ValidatePolicy(z, "retries", []byte(`{"targetRef":{"kind":"Zone"},"default":{"methodConfig":[{"name":[{"service":"s"}],"timeout":"2s"}]}}`))
	zp, _ = z.WithPolicies([]*policy.Policy{lb, fixed})
	s, ds := ValidateService(zp, "echo", map[string]string{"team": "a"}, []byte(`{"serviceConfig":{}}`), nil)
	if s == nil {
		t.Fatal(ds)
	}
	if v := string(s.Value()); !strings.Contains(v, "round_robin") || !strings.Contains(v, `"timeout":"2s"`) {
		t.Fatalf("value: %s", v)
	}
	if got := zp.PolicyNames(s); strings.Join(got, ",") != "retries,lb" {
		t.Fatalf("merge order: %v", got)
	}
	// Unlabelled: the zone policy only.
	s, _ = ValidateService(zp, "other", nil, []byte(`{"serviceConfig":{}}`), nil)
	if strings.Contains(string(s.Value()), "round_robin") {
		t.Fatalf("an unlabelled service got the label policy: %s", s.Value())
	}
	// Labels in the spec and in metadata: refused.
	if _, ds := ValidateService(zp, "echo", map[string]string{"team": "a"}, []byte(`{"labels":{"team":"a"},"serviceConfig":{}}`), nil); !ds.HasErrors() {
		t.Fatal("labels twice accepted")
	}
	// Two policies of one name.
	if _, err := z.WithPolicies([]*policy.Policy{lb, lb}); err == nil {
		t.Fatal("two policies named lb accepted")
	}
	// A zone spec holds no policies.
	if z, ds := ValidateZone("example.test.", []byte(`{"nameservers":[{"name":"ns1","addresses":["192.0.2.53"]}],"policies":[]}`), nil); z != nil || !strings.Contains(ds[0].Message, "PUT /v1/zones/example.test/policies/NAME") {
		t.Fatalf("a zone spec with policies: %v", ds)
	}
}

// FuzzValidatePolicy: no spec makes ValidatePolicy panic; a policy it
// accepts has the name it was given and merges; every refusal says why.
func FuzzValidatePolicy(f *testing.F) {
	for _, s := range []string{
		`{"targetRef":{"kind":"Zone"},"default":{"methodConfig":[{"name":[{"service":"s"}],"timeout":"2s"}]}}`,
		`targetRef: {kind: Service, labels: {team: a}}` + "\ndefault: {loadBalancingConfig: [{round_robin: {}}]}",
		`{"name":"other","targetRef":{"kind":"Zone"},"default":{}}`,
		`{"targetRef":{"kind":"Service","name":"echo.example.test."},"default":{"retryThrottling":{"maxTokens":10,"tokenRatio":0.1}}}`,
		`{"targetRef":{"kind":"Service","name":"..bad"},"default":{}}`,
		`[`, `{}`, `null`, `&a [*a]`, "\xff",
	} {
		f.Add([]byte(s))
	}
	z := storeZone(f)
	f.Fuzz(func(t *testing.T, spec []byte) {
		p, ds := ValidatePolicy(z, "p", spec)
		if p == nil {
			if !ds.HasErrors() {
				t.Fatal("refused without an error")
			}
			return
		}
		if p.Name != "p" {
			t.Fatalf("name %q", p.Name)
		}
		zp, err := z.WithPolicies([]*policy.Policy{p})
		if err != nil {
			t.Fatal(err)
		}
		ValidateService(zp, "echo", map[string]string{"team": "a"}, []byte(`{"serviceConfig":{}}`), nil)
	})
}

// TestServiceLabelsAreValidations: the labels a policy selects a stored
// service by (ServiceLabels: the store's checks of policy writes, and
// the publisher's revalidation) are those its validation reads, for
// labels in metadata and in the spec, written in any JSON a spec may
// hold (found in review: {"rank":1} read as strings selected nothing,
// while validation applied the policies of rank=1).
func TestServiceLabelsAreValidations(t *testing.T) {
	z := storeZone(t)
	for _, tc := range []struct {
		name     string
		metadata map[string]string
		spec     string
	}{
		{"metadata", map[string]string{"team": "a"}, `{"addresses":["192.0.2.1"]}`},
		{"spec strings", nil, `{"labels":{"team":"a"},"addresses":["192.0.2.1"]}`},
		{"spec scalars", nil, `{"labels":{"team":"a","rank":1,"canary":true},"addresses":["192.0.2.1"]}`},
		{"escaped key", nil, `{"\u006cabels":{"team":"a"},"addresses":["192.0.2.1"]}`},
		{"escaped value", nil, `{"labels":{"team":"\u0061"},"addresses":["192.0.2.1"]}`},
		{"empty", nil, `{"labels":{},"addresses":["192.0.2.1"]}`},
		{"none", nil, `{"addresses":["192.0.2.1"]}`},
		{"a labels service config key", nil, `{"addresses":["192.0.2.1"],"serviceConfig":{"labels":1}}`},
	} {
		svc, ds := ValidateService(z, "s", tc.metadata, []byte(tc.spec), nil)
		if svc == nil {
			t.Fatalf("%s: %v", tc.name, ds)
		}
		got := ServiceLabels(tc.metadata, []byte(tc.spec))
		if len(got) != len(svc.Labels) {
			t.Errorf("%s: ServiceLabels %v, validation read %v", tc.name, got, svc.Labels)
			continue
		}
		for k, v := range svc.Labels {
			if w, ok := got[k]; !ok || w != v {
				t.Errorf("%s: ServiceLabels %v, validation read %v", tc.name, got, svc.Labels)
			}
		}
	}
}
