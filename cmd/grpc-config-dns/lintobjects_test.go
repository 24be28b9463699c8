package main

import (
	"strings"
	"testing"
)

// lint of a file of store objects checks them as the store would, in
// the store's order (zones, their policies, their services), and places
// each problem at its object's line and column.
func TestLintStoreObjects(t *testing.T) {
	p := writeFile(t, "objects.yaml", `metadata: {zone: example.test, name: echo}
spec:
  addresses: [192.0.2.1]
  serviceConfig: {methodConfig: [{name: [{}], retryPolicy: {maxAttempts: 2, initialBackoff: 1s, maxBackoff: 1s, backoffMultiplier: 2, retryableStatusCodes: [unavailable]}}]}
---
metadata: {name: example.test}
spec:
  nameservers: [{name: ns1, addresses: [192.0.2.53]}]
  compat: {clients: [node]}
---
kind: Policy
metadata: {zone: example.test, name: slow}
spec:
  targetRef: {kind: Zone}
  default: {methodConfig: [{name: [{}], timout: 5s}]}
---
kind: Gadget
metadata: {name: x}
spec: {}
`)
	code, out, errs := runCLI(t, "lint", p)
	if code != exitInvalid {
		t.Fatalf("exit %d, want 1:\n%s%s", code, out, errs)
	}
	for _, want := range []string{
		// The zone declares grpc-js alone, which reads lower-case codes:
		// a warning, not an error.
		p + `:4:158: warning: service echo of zone example.test: status code "unavailable"`,
		// The policy's misspelled field, placed in the policy.
		p + `:15:49: error: service echo of zone example.test: policy slow, applied to service echo.example.test., sets /methodConfig/0/timout`,
		p + `:17:1: error: kind "Gadget"`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// Without the zone in the file, the service is checked under a zone
	// with the default settings: every client, so the code is an error.
	q := writeFile(t, "service.yaml", `metadata: {zone: example.test, name: echo}
spec:
  addresses: [192.0.2.1]
  serviceConfig: {methodConfig: [{name: [{}], retryPolicy: {maxAttempts: 2, initialBackoff: 1s, maxBackoff: 1s, backoffMultiplier: 2, retryableStatusCodes: [unavailable]}}]}
`)
	code, out, _ = runCLI(t, "lint", q)
	if code != exitInvalid || !strings.Contains(out, q+":4:") || !strings.Contains(out, "error: service echo of zone example.test: status code \"unavailable\"") {
		t.Errorf("exit %d:\n%s", code, out)
	}
}
