package resolver

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	_ "google.golang.org/grpc/balancer/grpclb" // the balancers a DNS client can import
	_ "google.golang.org/grpc/balancer/leastrequest"
	_ "google.golang.org/grpc/balancer/randomsubsetting"
	_ "google.golang.org/grpc/balancer/ringhash"
	_ "google.golang.org/grpc/balancer/rls"
	_ "google.golang.org/grpc/balancer/weightedroundrobin"

	sc "github.com/grpc-config-dns/grpc-config-dns/serviceconfig"
)

// specCorpus returns every service config of the peers' test suites
// (testdata/peers) and of the lint corpus that is a JSON object.
func specCorpus(t *testing.T) map[string]string {
	out := map[string]string{}
	paths, _ := filepath.Glob("../testdata/peers/*.json")
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var f struct {
			Vectors []struct{ ID, Kind, Policy, Input string }
		}
		if err := json.Unmarshal(b, &f); err != nil {
			t.Fatal(err)
		}
		for _, v := range f.Vectors {
			switch v.Kind {
			case "service-config":
				out[v.ID] = v.Input
			case "lb-config":
				out[v.ID] = `{"loadBalancingConfig":[{"` + v.Policy + `":` + v.Input + `}]}`
			}
		}
	}
	corpus, _ := filepath.Glob("../testdata/corpus/sc-*.json")
	for _, p := range corpus {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		out[filepath.Base(p)] = string(b)
	}
	if len(out) < 250 {
		t.Fatalf("only %d service configs", len(out))
	}
	return out
}

// TestSpecAndGrpcGoAcceptedConfigsPass checks the resolver's rule: a
// service config that the spec accepts (lint finds no error) and that
// grpc-go's own parser accepts as published is never failed by the
// resolver; and a config that the spec accepts but grpc-go refuses as
// published (a number in quotes, a lower-case status code, an empty
// loadBalancingConfig) reaches grpc-go in a form it takes, when the
// program has the policies it names.
func TestSpecAndGrpcGoAcceptedConfigsPass(t *testing.T) {
	parse := realParser(t).parse
	rescued := 0
	for name, cfg := range specCorpus(t) {
		if sc.ValidateServiceConfig([]byte(cfg)).HasErrors() {
			continue // invalid by the spec
		}
		ch, err := sc.ParseChoices([]byte(`[{"serviceConfig":` + strings.TrimSpace(cfg) + `}]`))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		js, err := chosenConfig(ch, 0)
		if err != nil {
			t.Errorf("%s: the resolver fails a config the spec accepts: %v", name, err)
			continue
		}
		rawOK := parse(cfg).Err == nil
		pr := parse(js)
		switch {
		case rawOK && pr.Err != nil:
			t.Errorf("%s: grpc-go accepts the config as published, but not the resolver's form %s: %v", name, js, pr.Err)
		case !rawOK && pr.Err == nil:
			rescued++
		case !rawOK && !needsUnregistered(cfg):
			t.Errorf("%s: spec-valid, grpc-go refuses it and the resolver's form %s too: %v", name, js, pr.Err)
		}
	}
	if rescued < 10 {
		t.Errorf("only %d spec-valid configs that grpc-go refuses as published reach it in a form it takes", rescued)
	}
}

// needsUnregistered reports whether a config depends on a policy grpc-go
// has only with its xds package (lint names grpc-go among the clients that
// refuse it), which no rewriting can supply.
func needsUnregistered(cfg string) bool {
	for _, d := range sc.ValidateServiceConfig([]byte(cfg)) {
		switch d.Code {
		case "lb-policy-unsupported", "lb-fallback-config", "rls-lookup-scheme", "lb-policy-xds":
			return true
		}
	}
	return false
}
