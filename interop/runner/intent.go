package main

import (
	"encoding/json"
	"strings"

	sc "github.com/grpc-config-dns/grpc-config-dns/serviceconfig"
)

// languages is the clientLanguage each client matches with (gRFC A2's
// examples name "go", "java", "python"; grpc-js compares with "node").
var languages = map[string]string{grpcGo: "go", ours: "go", grpcJS: "node", grpcPy: "python", grpcJava: "java"}

// specIntent is the outcome gRFC A2 and A21 prescribe for client on
// records, the TXT records of one case as served: what
// serviceconfig.Choose, which our resolver runs, decides for a client of
// that language, bucket and this machine's hostname without a default
// service config, and which of the config's effects a probe can see.
func specIntent(client, owner string, records [][]string) string {
	o := sc.Choose(sc.Answer{Owner: owner, Records: records}, sc.Client{Language: languages[client], Hostname: hostname, Bucket: 50})
	switch {
	case o.Result == sc.Invalid:
		return fails // the channel fails until the record is fixed
	case o.Result == sc.NoConfig:
		return noConfig
	}
	return effects(o.ServiceConfig)
}

// effects is the outcome a valid service config has on the probes, read
// as proto3 JSON reads it (field names exact, an empty list the same as
// none): the methodConfig timeout, the retry policy, and round_robin, from
// the first loadBalancingConfig entry or, without one,
// loadBalancingPolicy (an enum: "ROUND_ROBIN" is its proto3 JSON name,
// "round_robin" the name the service config doc uses).
func effects(config []byte) string {
	var c struct {
		LBConfig     []map[string]json.RawMessage `json:"loadBalancingConfig"`
		LBPolicy     string                       `json:"loadBalancingPolicy"`
		MethodConfig []map[string]json.RawMessage `json:"methodConfig"`
	}
	// encoding/json matches field names case-insensitively; the members
	// read here are checked again by their exact names below.
	var exact map[string]json.RawMessage
	if json.Unmarshal(config, &c) != nil || json.Unmarshal(config, &exact) != nil {
		return fails
	}
	_, hasLBConfig := exact["loadBalancingConfig"]
	_, hasLBPolicy := exact["loadBalancingPolicy"]
	_, hasMC := exact["methodConfig"]
	var timeout, retry bool
	for _, mc := range c.MethodConfig {
		_, t := mc["timeout"]
		_, r := mc["retryPolicy"]
		timeout, retry = timeout || t && hasMC, retry || r && hasMC
	}
	rr := hasLBPolicy && strings.EqualFold(c.LBPolicy, "round_robin")
	if hasLBConfig && len(c.LBConfig) > 0 {
		_, rr = c.LBConfig[0]["round_robin"]
	}
	var missing []string
	for _, e := range []struct {
		name string
		seen bool
	}{{effTimeout, timeout}, {effRetry, retry}, {effRR, rr}} {
		if !e.seen {
			missing = append(missing, e.name)
		}
	}
	switch len(missing) {
	case 0:
		return applied
	case 3:
		return noConfig
	}
	return without(missing...)
}
