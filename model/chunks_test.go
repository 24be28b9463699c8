package model

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
)

func fleetText(n, changed int, extraLines string) string {
	var b strings.Builder
	b.WriteString("zones:\n  - origin: fleet.test.\n    nameservers: [ns1.example.net.]\n" + extraLines + "    services:\n")
	for i := range n {
		timeout := "1s"
		if i == changed {
			timeout = "2s"
		}
		fmt.Fprintf(&b, "      - name: svc%d\n        addresses: [10.0.%d.%d]\n        serviceConfig: {methodConfig: [{name: [{service: s%d}], timeout: %s}]}\n", i, i/256, i%256, i, timeout)
		if i%7 == 3 {
			// A warning inside an item, so cached diagnostics must move.
			b.WriteString("        ttl: 2d\n")
		}
	}
	return b.String()
}

// TestParserReusesUnchangedServices: a Parser that read one version reads
// the next exactly as Parse does (config and every diagnostic, placed
// where it now is), and returns the very same *Service for every service
// whose text and zone did not change.
func TestParserReusesUnchangedServices(t *testing.T) {
	var p Parser
	v1 := fleetText(50, -1, "")
	c1, ds1 := p.Parse([]byte(v1))
	if c1 == nil {
		t.Fatal(ds1)
	}
	// Lines inserted above the services, one changed, one removed.
	v2 := strings.Replace(fleetText(50, 7, "    # a comment\n    # and another\n"), "      - name: svc20\n        addresses: [10.0.0.20]\n", "", 1)
	v2 = strings.Replace(v2, "        serviceConfig: {methodConfig: [{name: [{service: s20}], timeout: 1s}]}\n", "", 1)
	c2, ds2 := p.Parse([]byte(v2))
	w2, wds2 := Parse([]byte(v2))
	if !sameConfig(c2, w2) || !reflect.DeepEqual(ds2, wds2) {
		t.Fatalf("the Parser's reading differs from Parse's:\n%v\n%v", ds2, wds2)
	}
	if len(ds2) == 0 || ds2[0].Code != "ttl-large" {
		t.Fatalf("diagnostics %v", ds2)
	}
	old := map[string]*Service{}
	for _, s := range c1.Zones[0].Services {
		old[s.Name] = s
	}
	shared := 0
	for _, s := range c2.Zones[0].Services {
		switch {
		case s.Name == "svc7.fleet.test.":
			if old[s.Name] == s {
				t.Error("the changed service was not read again")
			}
		case old[s.Name] == s:
			shared++
		}
	}
	if want := 48; shared != want {
		t.Errorf("%d services shared, want %d", shared, want)
	}
	// The same text again: everything shared.
	c3, _ := p.Parse([]byte(v2))
	for i, s := range c3.Zones[0].Services {
		if c2.Zones[0].Services[i] != s {
			t.Fatalf("service %s read again", s.Name)
		}
	}
}

// TestZoneSettingsInvalidateItems: a service read under other zone
// settings (a default ttl here) is read again.
func TestZoneSettingsInvalidateItems(t *testing.T) {
	var p Parser
	c1, _ := p.Parse([]byte(fleetText(3, -1, "")))
	c2, _ := p.Parse([]byte(fleetText(3, -1, "    ttl: 600\n")))
	for i, s := range c2.Zones[0].Services {
		if s == c1.Zones[0].Services[i] || s.TTL != 600 {
			t.Errorf("%s: ttl %d, shared %v", s.Name, s.TTL, s == c1.Zones[0].Services[i])
		}
	}
}

// BenchmarkScanText is what a parse does to the whole text before
// anything runs in parallel: cut the services lists into items, and find
// the lines and runes that place diagnostics.
func BenchmarkScanText(b *testing.B) {
	text := services(20_000, false)
	b.Run("split", func(b *testing.B) {
		b.SetBytes(int64(len(text)))
		for b.Loop() {
			if _, _, ok := splitServices(text); !ok {
				b.Fatal("not cut")
			}
		}
	})
	b.Run("newDoc", func(b *testing.B) {
		b.SetBytes(int64(len(text)))
		for b.Loop() {
			newDoc(text)
		}
	})
}
