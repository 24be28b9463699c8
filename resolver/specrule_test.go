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
		o := sc.Choose(sc.Answer{Records: [][]string{sc.EncodeTXT([]byte(`[{"serviceConfig":` + strings.TrimSpace(cfg) + `}]`))}}, fastClient())
		if o.Result != sc.Chosen {
			t.Errorf("%s: the resolver fails a config the spec accepts: %s", name, o.Reason)
			continue
		}
		js := string(o.GrpcGoConfig)
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

// TestProto3DefaultFormsPass holds the resolver's rule on the forms of a
// field that proto3 JSON reads as unset: its default value ("", 0, false,
// an empty list, an enum's zero value) and null. grpc-go accepts each of
// them; the spec does too, so the resolver must not fail the channel, and
// what it hands grpc-go must still parse.
func TestProto3DefaultFormsPass(t *testing.T) {
	parse := realParser(t).parse
	configs := []string{
		// service_config.proto: enum LoadBalancingPolicy {UNSPECIFIED = 0;
		// ROUND_ROBIN = 1}; "" and UNSPECIFIED are the field unset.
		`{"loadBalancingPolicy":""}`,
		`{"loadBalancingPolicy":"UNSPECIFIED"}`,
		`{"loadBalancingPolicy":"","loadBalancingConfig":[{"round_robin":{}}]}`,
		`{"loadBalancingPolicy":null}`,
		`{"loadBalancingConfig":null}`,
		`{"methodConfig":null}`,
		`{"methodConfig":[]}`,
		`{"methodConfig":[{"name":[{"service":"","method":""}],"waitForReady":false,"timeout":"0s","maxRequestMessageBytes":0,"maxResponseMessageBytes":0}]}`,
		`{"methodConfig":[{"name":[{"service":null,"method":null}],"waitForReady":null,"timeout":null,"maxRequestMessageBytes":null,"retryPolicy":null,"hedgingPolicy":null}]}`,
		`{"methodConfig":[{"name":[{"service":"s","method":null}]}]}`,
		`{"methodConfig":[{"name":[{}],"hedgingPolicy":{"maxAttempts":2,"hedgingDelay":"0s","nonFatalStatusCodes":[]}}]}`,
		`{"methodConfig":[{"name":[{}],"retryPolicy":{"maxAttempts":2,"initialBackoff":"1s","maxBackoff":"1s","backoffMultiplier":1,"retryableStatusCodes":["UNAVAILABLE"],"perAttemptRecvTimeout":null}}]}`,
		`{"retryThrottling":null}`,
		`{"healthCheckConfig":null}`,
		`{"healthCheckConfig":{}}`,
		`{"healthCheckConfig":{"serviceName":""}}`,
		`{"healthCheckConfig":{"serviceName":null}}`,
		`{"connectionScaling":{}}`,
		`{"connectionScaling":{"maxConnectionsPerSubchannel":0}}`,
		`{"connectionScaling":{"maxConnectionsPerSubchannel":null}}`,
		`{"loadBalancingConfig":[{"pick_first":{"shuffleAddressList":false}}]}`,
		`{"loadBalancingConfig":[{"pick_first":{"shuffleAddressList":null}}]}`,
		`{"loadBalancingConfig":[{"ring_hash_experimental":{"minRingSize":0,"maxRingSize":0,"requestHashHeader":""}}]}`,
		`{"loadBalancingConfig":[{"ring_hash_experimental":{"minRingSize":null,"requestHashHeader":null}}]}`,
		`{"loadBalancingConfig":[{"least_request_experimental":{}}]}`,
		`{"loadBalancingConfig":[{"least_request_experimental":{"choiceCount":null}}]}`,
		`{"loadBalancingConfig":[{"weighted_round_robin":{"enableOobLoadReport":false,"oobReportingPeriod":"0s","blackoutPeriod":"0s","weightExpirationPeriod":"0s","weightUpdatePeriod":"0s","errorUtilizationPenalty":0,"metricNamesForComputingUtilization":[]}}]}`,
		`{"loadBalancingConfig":[{"grpclb":{"childPolicy":[],"serviceName":"","initialFallbackTimeout":"0s"}}]}`,
		`{"loadBalancingConfig":[{"grpclb":{"childPolicy":null,"serviceName":null}}]}`,
		`{"loadBalancingConfig":[{"rls_experimental":{"routeLookupConfig":{"grpcKeybuilders":[{"names":[{"service":"s","method":""}],"headers":[],"constantKeys":{}}],"lookupService":"dns:///rls.example.com:443","lookupServiceTimeout":"0s","maxAge":"0s","staleAge":"0s","cacheSizeBytes":"1000","validTargets":[],"defaultTarget":null},"routeLookupChannelServiceConfig":null,"childPolicy":[{"grpclb":{}}],"childPolicyConfigTargetFieldName":"serviceName"}}]}`,
	}
	for _, cfg := range configs {
		if err := parse(cfg).Err; err != nil {
			t.Errorf("%s: grpc-go refuses it (%v): not a case of the rule", cfg, err)
			continue
		}
		if ds := sc.ValidateServiceConfig([]byte(cfg)); ds.HasErrors() {
			t.Errorf("%s: the spec reads it as unset fields, but lint refuses it: %v", cfg, ds)
			continue
		}
		o := sc.Choose(sc.Answer{Records: [][]string{sc.EncodeTXT([]byte(`[{"serviceConfig":` + cfg + `}]`))}}, fastClient())
		if o.Result != sc.Chosen {
			t.Errorf("%s: the resolver fails a config the spec and grpc-go accept: %s", cfg, o.Reason)
			continue
		}
		if err := parse(string(o.GrpcGoConfig)).Err; err != nil {
			t.Errorf("%s: grpc-go refuses the resolver's form %s: %v", cfg, o.GrpcGoConfig, err)
		}
	}
}

// TestNullCriteriaPass: a choice criterion that is null is absent (gRFC
// A2: "If a field is absent or empty, it matches all clients"), as grpc-go
// reads it (its rawChoice pointers stay nil), so the resolver uses the
// choice instead of failing the channel.
func TestNullCriteriaPass(t *testing.T) {
	for _, list := range []string{
		`[{"percentage":null,"serviceConfig":{"methodConfig":[{"name":[{}],"timeout":"1s"}]}}]`,
		`[{"clientLanguage":null,"serviceConfig":{"methodConfig":[{"name":[{}],"timeout":"1s"}]}}]`,
		`[{"clientHostname":null,"serviceConfig":{"methodConfig":[{"name":[{}],"timeout":"1s"}]}}]`,
		`[{"clientLanguage":null,"percentage":null,"clientHostname":null,"serviceConfig":{"methodConfig":[{"name":[{}],"timeout":"1s"}]}}]`,
	} {
		o := sc.Choose(sc.Answer{Records: [][]string{sc.EncodeTXT([]byte(list))}}, fastClient())
		if o.Result != sc.Chosen || !strings.Contains(string(o.GrpcGoConfig), `"timeout":"1s"`) {
			t.Errorf("%s: the resolver does not use the choice whose null criteria match every client: %v %s", list, o.Result, o.Reason)
		}
	}
}
