package model

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// jsonFleet is fleetText written as JSON: a zone of n services, one a
// line (or all on the zone's line with oneLine), service changed with a
// 2s timeout, and a TTL of two days (a warning) on every seventh.
func jsonFleet(n, changed int, oneLine bool) string {
	var b strings.Builder
	b.WriteString(`{"zones":[{"origin":"fleet.test.","nameservers":["ns1.example.net."],"services":[`)
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		if !oneLine {
			b.WriteString("\n  ")
		}
		timeout := "1s"
		if i == changed {
			timeout = "2s"
		}
		ttl := ""
		if i%7 == 3 {
			ttl = `"ttl":"2d",`
		}
		fmt.Fprintf(&b, `{"name":"svc%d",%s"addresses":["10.0.%d.%d"],"serviceConfig":{"methodConfig":[{"name":[{"service":"s%d"}],"timeout":"%s"}]}}`, i, ttl, i/256, i%256, i, timeout)
	}
	b.WriteString("]}]}\n")
	return b.String()
}

// TestJSONCut: a JSON config's services are cut into their objects and
// read alone, exactly as a whole read reads them (config and every
// diagnostic, placed where it is, on one line or one a line), and a
// Parser that read one version reads the next again only for the
// services whose text changed.
func TestJSONCut(t *testing.T) {
	for _, oneLine := range []bool{false, true} {
		v1 := []byte(jsonFleet(60, -1, oneLine))
		_, blocks, ok := cutServices(v1)
		if !ok || len(blocks) != 1 {
			t.Fatalf("oneLine %v: the fleet was not cut (%v, %d blocks)", oneLine, ok, len(blocks))
		}
		checkOddText(t, v1)
		var p Parser
		c1, ds1 := p.Parse(v1)
		if c1 == nil {
			t.Fatal(ds1)
		}
		if len(ds1) == 0 || ds1[0].Code != "large-ttl" && !strings.Contains(ds1[0].Message, "2d") {
			t.Logf("diagnostics: %v", ds1)
		}
		v2 := []byte(jsonFleet(60, 17, oneLine))
		c2, ds2 := p.Parse(v2)
		w2, wds2 := Parse(v2)
		if !sameConfig(c2, w2) || !reflect.DeepEqual(ds2, wds2) {
			t.Fatalf("oneLine %v: the Parser reads the edit differently from Parse:\n%v\n%v", oneLine, ds2, wds2)
		}
		same := 0
		for i, s := range c2.Zones[0].Services {
			if s == c1.Zones[0].Services[i] {
				same++
			}
		}
		if same != 59 {
			t.Errorf("oneLine %v: %d services kept of the 59 unchanged", oneLine, same)
		}
	}
}

// TestJSONCutPositions: an error in a service of a JSON config on one
// line is placed at its value, whether the services are cut or not.
func TestJSONCutPositions(t *testing.T) {
	text := jsonFleet(5, -1, true)
	text = strings.Replace(text, `"name":"svc3",`, `"name":"svc3","port":"x",`, 1)
	cfg, ds := Parse([]byte(text))
	if cfg != nil || len(ds) == 0 {
		t.Fatal("port: x was accepted")
	}
	var d = ds[0]
	for _, x := range ds {
		if x.Severity.String() == "error" {
			d = x
		}
	}
	if d.Line != 1 || !strings.HasPrefix(text[d.Offset:], `"x"`) || d.Column != d.Offset+1 {
		t.Errorf("%v at %d:%d offset %d, which is %.10q", d, d.Line, d.Column, d.Offset, text[d.Offset:])
	}
	checkOddText(t, []byte(text))
}

// TestRandomJSONEdits: random edits of JSON fleets (services changed,
// added, removed, odd bytes written anywhere) read by a Parser that read
// the version before, as Parse reads them.
func TestRandomJSONEdits(t *testing.T) {
	rng := rand.New(rand.NewPCG(28, 1))
	n := 400
	if testing.Short() {
		n = 60
	}
	for range n {
		oneLine := rng.IntN(2) == 0
		base := jsonFleet(1+rng.IntN(8), -1, oneLine)
		var p Parser
		p.Parse([]byte(base))
		next := base
		switch rng.IntN(4) {
		case 0:
			next = jsonFleet(1+rng.IntN(8), rng.IntN(8), oneLine)
		case 1:
			next = strings.Replace(base, `"timeout":"1s"`, `"timeout":"3s"`, 1)
		case 2:
			next = strings.Replace(base, `{"name":"svc0",`, `{"name":"svc0","labels":{"a":"b"},`, 1)
		case 3:
			next = string(oddText(rng, []byte(base)))
		}
		checkOddText(t, []byte(next))
		parseBoth(t, &p, []byte(next))
		parseBoth(t, &p, []byte(base))
	}
}

// TestSplitSpecsJSON: the store objects of a JSON config, converted from
// its cut items, are those of the same config read whole.
func TestSplitSpecsJSON(t *testing.T) {
	text := jsonFleet(40, 3, false)
	cut, ds := SplitSpecs([]byte(text))
	if cut == nil {
		t.Fatal(ds)
	}
	// A CR LF after the last brace: valid JSON and YAML, not cut.
	whole, ds := SplitSpecs([]byte(text + "\r\n"))
	if whole == nil {
		t.Fatal(ds)
	}
	if !reflect.DeepEqual(cut, whole) {
		t.Errorf("cut:\n%+v\nwhole:\n%+v", cut.Zones[0].Services[:2], whole.Zones[0].Services[:2])
	}
	if n := len(cut.Zones[0].Services); n != 40 || !strings.Contains(string(cut.Zones[0].Services[3].Spec), `"2s"`) {
		t.Errorf("%d services, the fourth %s", n, cut.Zones[0].Services[3].Spec)
	}
}
