package model

import (
	"bytes"
	"strings"
	"testing"
)

// TestDNSSECRolloverFields reads kskLifetime and parentalAgents, and
// refuses what cannot work, at the field's path.
func TestDNSSECRolloverFields(t *testing.T) {
	withDNSSEC := func(dnssec string) []byte {
		return bytes.Replace(Example, []byte("    ttl: 30s\n"), []byte("    ttl: 30s\n    dnssec: "+dnssec+"\n"), 1)
	}
	cfg, ds := Parse(withDNSSEC(`{kskLifetime: 365d, parentalAgents: ["192.0.2.53:53", "[2001:db8::53]:5353"]}`))
	if cfg == nil {
		t.Fatal(ds)
	}
	d := cfg.Zones[0].DNSSEC
	if d.KSKLifetime != 365*86400 || len(d.Agents()) != 2 || d.Agents()[1].String() != "[2001:db8::53]:5353" {
		t.Errorf("read %+v, agents %v", d, d.Agents())
	}
	for _, tc := range []struct{ dnssec, path, msg string }{
		{`{parentalAgents: ["192.0.2.53:53"]}`, "/dnssec/parentalAgents", "only with kskLifetime"},
		{`{kskLifetime: 365d, parentalAgents: ["parent.example:53"]}`, "/dnssec/parentalAgents/0", "parental agent"},
		{`{kskLifetime: forever}`, "/dnssec/kskLifetime", "lifetime"},
		{`{zskLifetime: 30d}`, "/dnssec/zskLifetime", "keys: ksk-zsk"},
	} {
		cfg, ds := Parse(withDNSSEC(tc.dnssec))
		if cfg != nil || len(ds) == 0 || !strings.HasSuffix(ds[0].Path, tc.path) || !strings.Contains(ds[0].Message, tc.msg) {
			t.Errorf("dnssec: %s: %v", tc.dnssec, ds)
		}
	}
}
