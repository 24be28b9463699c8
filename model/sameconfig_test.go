package model

import (
	"reflect"

	"github.com/grpc-config-dns/grpc-config-dns/serviceconfig/policy"
)

// anySet stands for every zone's policy.Set in sameConfig: a Set merges
// the policies that select a service when it is first asked to (and
// keeps the merge for the next service they select), so two readings of
// one config differ in what their Sets have merged so far. The policies
// themselves are compared in Zone.Policies.
var anySet = new(policy.Set)

// sameConfig reports whether two readings of a config are the same.
func sameConfig(a, b *Config) bool {
	return reflect.DeepEqual(forCompare(a), forCompare(b))
}

func forCompare(c *Config) *Config {
	if c == nil {
		return nil
	}
	out := *c
	out.Zones = make([]*Zone, len(c.Zones))
	for i, z := range c.Zones {
		zc := *z
		if zc.PolicySet != nil {
			zc.PolicySet = anySet
		}
		out.Zones[i] = &zc
	}
	return &out
}
