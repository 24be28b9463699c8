package model

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// yamlBreaks are the line breaks yaml.v3 reads besides LF: a config may
// hold any of them, and whatever reads it must break its lines there too.
var yamlBreaks = []string{"\r", "\r\n", "\u0085", "\u2028", "\u2029"}

// oddBytes are what the random texts below put in a config: every YAML
// line break, a byte order mark, a tab, and the characters that start an
// anchor or an alias.
var oddBytes = append(slices.Clone(yamlBreaks), "\ufeff", "\t", "&", "*", " ", "#")

// TestOddLineBreaksKeepKeys: a line break that is not a line feed, in a
// comment or at the end of a service's last line, ends that line for
// every reader as it does for yaml.v3, and the zone's keys after the
// services list are read (ttl: 7 was published as 300 when the services
// list was cut at line feeds alone).
func TestOddLineBreaksKeepKeys(t *testing.T) {
	for _, br := range yamlBreaks {
		for _, where := range []string{"comment", "item", "after"} {
			t.Run(fmt.Sprintf("%q/%s", br, where), func(t *testing.T) {
				svc := "      - name: a\n        addresses: [10.0.0.1]\n        serviceConfig: {methodConfig: [{name: [{}], timeout: 1.5s}]}"
				var tail string
				switch where {
				case "comment":
					tail = "\n      # note" + br + "    ttl: 7\n    compat: {nineDigitDurations: false, clients: go}\n"
				case "item":
					tail = br + "    ttl: 7\n    compat: {nineDigitDurations: false, clients: go}\n"
				case "after":
					tail = "\n    ttl: 7" + br + "    compat: {nineDigitDurations: false, clients: go}\n"
				}
				text := []byte("zones:\n  - origin: z.test.\n    nameservers: [{name: ns1, addresses: [127.0.0.1]}]\n    services:\n" + svc + tail)
				var ref yaml.Node
				if err := yaml.Unmarshal(text, &ref); err != nil {
					t.Fatalf("yaml.v3 refuses the text: %v", err)
				}
				cfg, ds := Parse(text)
				if cfg == nil {
					t.Fatalf("refused: %v", ds)
				}
				z := cfg.Zones[0]
				if z.TTL != 7 {
					t.Errorf("zone TTL %d, yaml.v3 reads ttl: 7", z.TTL)
				}
				if z.Compat.NineDigitDurations {
					t.Errorf("compat.nineDigitDurations: false after the list was lost")
				}
				if len(z.Services) != 1 || !strings.Contains(strings.Join(z.Services[0].TXT, ""), `"1.5s"`) {
					t.Errorf("service TXT %q, want the timeout written as 1.5s", z.Services[0].TXT)
				}
				var p Parser
				parseBoth(t, &p, text)
			})
		}
	}
}

// TestOddBreakOnServicesLine: a break on the services: line itself makes
// a text yaml.v3 refuses; so does the publisher.
func TestOddBreakOnServicesLine(t *testing.T) {
	for _, br := range []string{"\r", "\u0085", "\u2028", "\u2029"} {
		text := []byte("zones:\n  - origin: z.test.\n    nameservers: [{name: ns1, addresses: [127.0.0.1]}]\n    services:" + br + "      - name: a\n        addresses: [10.0.0.1]\n      - name: b\n        addresses: [10.0.0.2]\n")
		var ref yaml.Node
		yerr := yaml.Unmarshal(text, &ref)
		cfg, ds := Parse(text)
		if (yerr != nil) != (cfg == nil) {
			t.Errorf("%q: yaml.v3 says %v, Parse %v", br, yerr, ds)
		}
	}
}

// TestOddBreakPositions: a diagnostic after an odd line break points at
// the value it is about, with yaml.v3's line and a column in that line,
// and the Parser, reading a difference, places it as a whole read does.
func TestOddBreakPositions(t *testing.T) {
	for _, br := range append(slices.Clone(yamlBreaks), "\n") {
		head := "zones:\n  - origin: z.test.\n    # a comment" + br + "    nameservers: [ns1.example.net.]\n    services:\n"
		svc := func(i int, ttl string) string {
			return fmt.Sprintf("      - name: s%d\n        addresses: [10.0.0.%d]\n        ttl: %s\n", i, i, ttl)
		}
		v1 := head + svc(1, "30") + svc(2, "30") + svc(3, "30")
		v2 := head + svc(1, "30") + svc(2, "bogus") + svc(3, "30")
		var p Parser
		if cfg, ds := p.Parse([]byte(v1)); cfg == nil {
			t.Fatalf("%q: %v", br, ds)
		}
		cfg, ds := p.Parse([]byte(v2))
		if cfg != nil || len(ds) == 0 {
			t.Fatalf("%q: ttl: bogus was accepted", br)
		}
		wcfg, wds := Parse([]byte(v2))
		if !sameConfig(cfg, wcfg) || !reflect.DeepEqual(ds, wds) {
			t.Errorf("%q: the Parser places %v, a whole read %v", br, ds, wds)
		}
		d := ds[0]
		if !strings.HasPrefix(v2[d.Offset:], "bogus") {
			t.Errorf("%q: %v points at %q", br, d, v2[d.Offset:])
		}
		// The line is yaml.v3's: the odd break in the comment ends a line.
		if want := 11; d.Line != want || d.Column != 14 {
			t.Errorf("%q: %v at %d:%d, want %d:14", br, d, d.Line, d.Column, want)
		}
	}
}

// TestRandomOddTextsReadAsYAML: configs of a few services with odd bytes
// (every YAML line break, a BOM, tabs, anchors) put at random places, and
// converted whole to CR LF: reading the services lists item by item, and
// reading an edit from its difference, find exactly what a whole read
// finds.
func TestRandomOddTextsReadAsYAML(t *testing.T) {
	rng := rand.New(rand.NewPCG(27, 1))
	n := 3000
	if testing.Short() {
		n = 300
	}
	for range n {
		base := []byte(fleetText(1+rng.IntN(5), -1, "    # zone comment\n") + "    ttl: 7\n    compat: {nineDigitDurations: false, clients: go}\n")
		text := oddText(rng, base)
		checkOddText(t, text)
		var p Parser
		p.Parse(base)
		parseBoth(t, &p, text)
		parseBoth(t, &p, base)
	}
}

// oddText puts one to three odd bytes into text, each at the start or
// end of a random line, or in a comment; or converts it to CR LF.
func oddText(rng *rand.Rand, text []byte) []byte {
	if rng.IntN(8) == 0 {
		return bytes.ReplaceAll(text, []byte("\n"), []byte("\r\n"))
	}
	for range 1 + rng.IntN(3) {
		lines := bytes.SplitAfter(text, []byte("\n"))
		i := rng.IntN(len(lines))
		odd := []byte(oddBytes[rng.IntN(len(oddBytes))])
		l := lines[i]
		switch rng.IntN(4) {
		case 0: // before the line's break
			l = slices.Concat(bytes.TrimSuffix(l, []byte("\n")), odd, []byte("\n"))
		case 1: // instead of the line's break
			l = slices.Concat(bytes.TrimSuffix(l, []byte("\n")), odd)
		case 2: // at the start of the line
			l = slices.Concat(odd, l)
		case 3: // in a comment at the end of the line
			l = slices.Concat(bytes.TrimSuffix(l, []byte("\n")), []byte(" # c"), odd, []byte("x\n"))
		}
		lines[i] = l
		text = bytes.Join(lines, nil)
	}
	return text
}

// checkOddText checks that Parse reads text as a whole read does, and
// accepts it only when yaml.v3 does.
func checkOddText(t *testing.T, text []byte) {
	t.Helper()
	cfg, ds := Parse(text)
	wcfg, wds, _ := parseDoc(text, text, nil, nil, defaultLimits(), false)
	if !sameConfig(cfg, wcfg) || !reflect.DeepEqual(ds, wds) {
		t.Fatalf("read item by item, %q differs from read whole:\n%v\n%v", text, ds, wds)
	}
	var ref yaml.Node
	if err := yaml.Unmarshal(text, &ref); err != nil && cfg != nil {
		t.Fatalf("yaml.v3 refuses %q (%v), Parse accepts it", text, err)
	}
}
