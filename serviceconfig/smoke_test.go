package serviceconfig

import "testing"

func TestSmoke(t *testing.T) {
	for _, in := range []string{
		`grpc_config=[{"serviceConfig":{"loadBalancingPolicy":"round_robin","methodConfig":[{"name":[{"service":"MyService","method":"Foo"}],"waitForReady":true}]}}]`,
		`"grpc_config=[{\"serviceConfig\":{\"loadBalancingPolicy\":\"round_robin\",\"methodConfig\":[{\"name\":[{\"service\":\"MyService\",\"method\":\"Foo\"}],\"waitForReady\":true}]}}]"`,
		`[{"clientHostName":["a"],"percentage":50.5,"serviceConfig":{"waitForReadyy":true,"methodConfig":[{"name":[{}],"retryPolicy":{"max_attempts":3}}]}}]`,
		"{\n  \"loadBalancingConfig\": [{\"foo\":{}}],\n  \"methodConfig\": [{\"name\":[{\"method\":\"x\"}], \"timeout\": \"1m\"}]\n}",
	} {
		k, ds := Lint([]byte(in), LintOptions{})
		t.Logf("%v:", k)
		for _, d := range ds {
			t.Logf("  %s %s", d.Path, d)
		}
	}
}
