package model

import (
	"bytes"
	"strings"
	"testing"
)

// TestDNSSECZONEMD reads zonemd: in a zone's dnssec: mapping: off by
// default, true or false, anything else an error at its path.
func TestDNSSECZONEMD(t *testing.T) {
	withDNSSEC := func(dnssec string) []byte {
		return bytes.Replace(Example, []byte("    ttl: 30s\n"), []byte("    ttl: 30s\n    dnssec: "+dnssec+"\n"), 1)
	}
	for dnssec, want := range map[string]bool{"{}": false, "{zonemd: true}": true, "{zonemd: false}": false} {
		cfg, ds := Parse(withDNSSEC(dnssec))
		if cfg == nil || cfg.Zones[0].DNSSEC == nil {
			t.Fatalf("dnssec: %s: %v", dnssec, ds)
		}
		if got := cfg.Zones[0].DNSSEC.ZONEMD; got != want {
			t.Errorf("dnssec: %s: ZONEMD %v, want %v", dnssec, got, want)
		}
	}
	cfg, ds := Parse(withDNSSEC("{zonemd: sha384}"))
	if cfg != nil || len(ds) == 0 || !strings.HasSuffix(ds[0].Path, "/dnssec/zonemd") || !strings.Contains(ds[0].Message, "zonemd must be true or false") {
		t.Errorf("zonemd: sha384: %v", ds)
	}
}
