package model

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	sc "github.com/grpc-config-dns/grpc-config-dns/serviceconfig"
)

// BenchmarkValidateService: a store spec of the fleet's shape validated
// alone, and one after the other by a ServiceValidator (a store's start
// validates 100 000 so).
func BenchmarkValidateService(b *testing.B) {
	cfg, ds := Parse([]byte("zones:\n  - origin: fleet.test.\n    nameservers: [ns1.example.net.]\n    services: [{name: a, addresses: [10.0.0.1]}]\n"))
	if cfg == nil {
		b.Fatal(ds)
	}
	z := cfg.Zones[0]
	spec := []byte(`{"addresses":["10.0.0.1"],"serviceConfig":{"methodConfig":[{"name":[{"service":"fleet.v1.Service1"}],"timeout":"1s","retryPolicy":{"maxAttempts":3,"initialBackoff":"0.1s","maxBackoff":"1s","backoffMultiplier":2,"retryableStatusCodes":["UNAVAILABLE"]}}]}}`)
	b.Run("alone", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if s, ds := ValidateService(z, "svc1", nil, spec, nil); s == nil {
				b.Fatal(ds)
			}
		}
	})
	b.Run("validator", func(b *testing.B) {
		b.ReportAllocs()
		var v ServiceValidator
		for b.Loop() {
			if s, ds := v.Validate(z, "svc1", nil, spec, nil); s == nil {
				b.Fatal(ds)
			}
		}
	})
}

// TestServiceValidatorReuse: a validator that validated other specs,
// valid and not, validates the next as ValidateService does.
func TestServiceValidatorReuse(t *testing.T) {
	cfg, ds := Parse([]byte("zones:\n  - origin: fleet.test.\n    nameservers: [ns1.example.net.]\n    services: [{name: a, addresses: [10.0.0.1]}]\n"))
	if cfg == nil {
		t.Fatal(ds)
	}
	z := cfg.Zones[0]
	specs := []string{
		`{"addresses":["10.0.0.1"],"serviceConfig":{"methodConfig":[{"name":[{"service":"a.B"}],"timeout":"1s"}]}}`,
		`{"addresses":["10.0.0.2"],"serviceConfig":{"methodConfig":[{"name":[{}],"timeout":"soon"}]}}`,
		`{"addresses":"10.0.0.3","choices":[{"percentage":50,"serviceConfig":{"loadBalancingConfig":[{"round_robin":{}}]}},{"serviceConfig":{}}]}`,
		"addresses: [10.0.0.4]\nserviceConfig: {methodConfig: [{name: [{}], waitForReady: true}]}\n",
		`{"port":"x"}`,
		`{"addresses":["10.0.0.5"],"serviceConfig":{"loadBalancingConfig":[{"round_robin":{}}],"methodConfig":[{"name":[{"service":"x.Y","method":"Z"}],"retryPolicy":{"maxAttempts":2,"initialBackoff":"1s","maxBackoff":"2s","backoffMultiplier":1.5,"retryableStatusCodes":["UNAVAILABLE"]}}]}}`,
	}
	// Compact keeps what a service keeps in the validator's allocations:
	// the same service, and the ones before it untouched.
	for _, v := range []*ServiceValidator{{}, {Compact: true}} {
		var kept, wanted []*Service
		var keptDs, wantedDs []sc.Diagnostics
		for round := range 3 {
			for i, spec := range specs {
				name := "s" + string(rune('a'+i))
				got, gds := v.Validate(z, name, map[string]string{"team": "x"}, []byte(spec), nil)
				want, wds := ValidateService(z, name, map[string]string{"team": "x"}, []byte(spec), nil)
				if (got == nil) != (want == nil) || got != nil && !reflect.DeepEqual(got, want) || len(gds) != len(wds) {
					t.Fatalf("compact %v, round %d, spec %d: the validator gives %+v %v, ValidateService %+v %v", v.Compact, round, i, got, gds, want, wds)
				}
				if got != nil {
					kept, wanted = append(kept, got), append(wanted, want)
				}
				keptDs, wantedDs = append(keptDs, gds), append(wantedDs, slices.Clone(wds))
				for k := range gds {
					if gds[k] != wds[k] {
						t.Fatalf("round %d, spec %d: diagnostic %v, want %v", round, i, gds[k], wds[k])
					}
				}
			}
		}
		for i := range kept {
			if !reflect.DeepEqual(kept[i], wanted[i]) {
				t.Fatalf("compact %v: service %d changed after the next validations: %+v, want %+v", v.Compact, i, kept[i], wanted[i])
			}
		}
		// Nor the diagnostics it returned.
		for i := range keptDs {
			if !reflect.DeepEqual(keptDs[i], wantedDs[i]) {
				t.Fatalf("compact %v: the diagnostics of validation %d changed after the next ones: %v, want %v", v.Compact, i, keptDs[i], wantedDs[i])
			}
		}
	}
}

// TestServiceSpecsOf: the spec read for one service is the one SplitSpecs
// makes of it, for every service of every valid config in testdata (lists
// cut into items and read whole, YAML and JSON), and a service that is not
// the config's (another object of the same name) reads nothing.
func TestServiceSpecsOf(t *testing.T) {
	files, _ := filepath.Glob("../testdata/publisher/*")
	texts := map[string][]byte{"300 services": services(300, false)}
	for _, f := range files {
		text, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		texts[f] = text
	}
	// A list in flow style, read whole, with a policy.
	var flow strings.Builder
	flow.WriteString("zones:\n  - origin: flow.test.\n    nameservers: [ns1.example.net.]\n    policies: [{name: p, targetRef: {kind: Zone}, default: {waitForReady: true}}]\n    services: [\n")
	for i := range 300 {
		fmt.Fprintf(&flow, "      {name: svc%d, addresses: [10.0.%d.%d], serviceConfig: {methodConfig: [{name: [{service: s%d}], timeout: %ds}]}},\n", i, i/256, i%256, i, i%7+1)
	}
	flow.WriteString("    ]\n")
	texts["300 services, flow"] = []byte(flow.String())
	checked := 0
	for f, text := range texts {
		cfg, _ := Parse(text)
		specs, _ := SplitSpecs(text)
		if cfg == nil || specs == nil {
			continue
		}
		for i, z := range cfg.Zones {
			for k, s := range z.Services {
				got := ServiceSpecsOf(text, cfg, z.Origin, []*Service{s, {Name: s.Name}})
				want := specs.Zones[i].Services[k]
				if len(got) != 1 || string(got[s.Name]) != string(want.Spec) {
					t.Errorf("%s: service %s reads %q, want %s", f, s.Name, got, want.Spec)
				}
				checked++
			}
		}
	}
	if checked < 600 {
		t.Fatalf("only %d services checked", checked)
	}
}
