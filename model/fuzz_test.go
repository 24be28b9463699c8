package model

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// FuzzParse: no input makes Parse panic or hang (YAML aliases and merge
// keys can refer to themselves), and every result is either a config or
// an error diagnostic.
func FuzzParse(f *testing.F) {
	f.Add(Example)
	for _, name := range []string{"example.json", "production.yaml", "invalid.yaml", "policies.yaml"} {
		if b, err := os.ReadFile(filepath.Join("..", "testdata", "publisher", name)); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte("a: &x\n  <<: *x\nzones: [*x]\n"))
	f.Add([]byte("zones:\n - &z {origin: a., nameservers: [ns.b.], services: [{name: s, serviceConfig: &c {x: *c}}]}\n"))
	f.Add([]byte("zones: [{origin: a., nameservers: [ns.b.], services: [{name: s, choices: [{percentage: 0x10, serviceConfig: {}}]}]}]\n"))
	// Hostile shapes: every element an error, merge keys copying a mapping
	// many times, an alias converted for every service, nested zones, one
	// long line with multi-byte characters.
	f.Add([]byte("zones: [a, b, c, d, e, f, g, h, i, j, k, l, m, n, o, p, q, r, s, t, u, v, w, x, y, z]\n"))
	f.Add([]byte("k: &k {a: 1, b: 2, c: 3}\nzones:\n - {<<: [*k, *k], origin: a.}\n - {<<: *k, origin: b.a.}\n - {<<: *k, origin: .}\n"))
	f.Add([]byte("c: &c {methodConfig: [{name: [{}], timeout: 1s}]}\nzones: [{origin: a., nameservers: [ns.b.], services: [{name: s1, serviceConfig: *c}, {name: s2, serviceConfig: *c}, {name: s3, serviceConfig: *c}]}]\n"))
	f.Add([]byte("zones:\n  - origin: a.\n    nameservers: [ns.b.]\n    services:\n      # a comment\n      - name: s\n        addresses: [10.0.0.1]\n\n      - name: t\n        serviceConfig:\n          methodConfig: [{name: [{}], timeout: 1m}]\n      -   name: u\n    transfer: {allow: [10.0.0.0/8]}\n"))
	f.Add([]byte("zones:\n- origin: a.\n  nameservers: [ns.b.]\n  services:\n  - name: s\n    serviceConfig: \"x\n  - y\"\n  - name: t\n"))
	f.Add([]byte(`{"zones":[{"origin":"é.test.","nameservers":["ns.b."],"services":[{"name":"s","choices":[{"serviceConfig":{"x€":1,"methodConfig":[{"name":[{}],"timeout":"1m"}]}}]}]}]}`))
	// Policies: a label policy, one that breaks a service, one unused.
	f.Add([]byte("zones:\n  - origin: a.\n    nameservers: [ns.b.]\n    policies:\n      - {name: p, targetRef: {kind: Service, labels: {t: x}}, default: {methodConfig: [{name: [{}], timeout: 1m}]}}\n      - {name: q, targetRef: {kind: Service, name: zz}, default: {}}\n    services:\n      - name: s\n        labels: {t: x}\n        serviceConfig: {}\n      - name: u\n        choices: [{serviceConfig: {}}]\n"))
	// Every YAML line break, a BOM and a tab where a services list is cut,
	// and the whole text in CR LF.
	odd := fleetText(3, -1, "    # c\n") + "    ttl: 7\n"
	for _, o := range oddBytes {
		f.Add([]byte(strings.Replace(odd, "\n    ttl", o+"    ttl", 1)))
		f.Add([]byte(strings.Replace(odd, "# c\n", "# c"+o, 1)))
	}
	f.Add([]byte(strings.ReplaceAll(odd, "\n", "\r\n")))
	// JSON, cut into its services objects: one a line, and all on one.
	f.Add([]byte(jsonFleet(4, 1, false)))
	f.Add([]byte(jsonFleet(3, -1, true)))
	f.Add([]byte(`{"zones":[{"origin":"a.","nameservers":["ns.b."],"services":[{"name":"s"}]},{"origin":"b.","nameservers":["ns.b."],"services":[{"name":"t","port":1}]}]}`))
	f.Fuzz(func(t *testing.T, text []byte) {
		// A watchdog: an input that makes Parse loop crashes the worker,
		// and the fuzzer keeps the input.
		watchdog := time.AfterFunc(5*time.Second, func() { panic("Parse is still running after 5s") })
		cfg, ds := Parse(text)
		watchdog.Stop()
		if cfg == nil && !ds.HasErrors() {
			t.Fatalf("no config and no error")
		}
		if cfg != nil && ds.HasErrors() {
			t.Fatalf("a config with errors")
		}
		for _, d := range ds {
			if d.Code == "" || d.Message == "" {
				t.Fatalf("empty diagnostic %+v", d)
			}
		}
		// Reading the services lists item by item changes nothing.
		if len(text) < 1<<20 {
			wcfg, wds, _ := parseDoc(text, text, nil, nil, defaultLimits(), false)
			if !sameConfig(cfg, wcfg) || !reflect.DeepEqual(ds, wds) {
				t.Fatalf("read item by item, the config differs from read whole:\n%v\n%v", ds, wds)
			}
		}
	})
}

// FuzzParserDifference: a Parser that read one text reads an edit of it
// (ins written over del bytes at off) exactly as Parse reads the edit,
// with the readings it kept of the first.
func FuzzParserDifference(f *testing.F) {
	fleet := []byte(fleetText(12, -1, ""))
	item := "      - name: svc5\n        addresses: [10.0.0.5]\n        serviceConfig: {methodConfig: [{name: [{service: s5}], timeout: 1s}]}\n"
	at := bytes.Index(fleet, []byte(item))
	f.Add(fleet, uint(at), uint(len(item)), []byte(strings.Replace(item, "1s", "2s", 1)))
	f.Add(fleet, uint(at), uint(0), []byte("      - name: extra\n        addresses: [10.9.9.9]\n"))
	f.Add(fleet, uint(at), uint(len(item)), []byte(""))
	f.Add(fleet, uint(at+8), uint(4), []byte("svc6"))
	f.Add(fleet, uint(len(fleet)), uint(0), []byte("      - name: x\n        ttl: 2d\n        addresses: [10.9.9.9]\n"))
	f.Add(fleet, uint(at), uint(0), []byte("    - name: shallow\n"))
	f.Add(Example, uint(len(Example)/2), uint(10), []byte("\n"))
	// Every YAML line break, a BOM and a tab, written into an item and
	// after the list.
	for _, o := range oddBytes {
		f.Add(fleet, uint(at+len(item)-1), uint(1), []byte(o))
		f.Add(fleet, uint(len(fleet)), uint(0), []byte("      # c"+o+"    ttl: 7\n"))
	}
	f.Add(fleet, uint(0), uint(len(fleet)), bytes.ReplaceAll(fleet, []byte("\n"), []byte("\r\n")))
	// A JSON fleet, a service changed, one added.
	js := []byte(jsonFleet(6, -1, false))
	at = bytes.Index(js, []byte(`{"name":"svc2"`))
	f.Add(js, uint(at), uint(len(`{"name":"svc2"`)), []byte(`{"name":"svc9"`))
	f.Add(js, uint(at), uint(0), []byte(`{"name":"new","addresses":["10.1.1.1"]},`))
	f.Fuzz(func(t *testing.T, text []byte, off, del uint, ins []byte) {
		if len(text) > 1<<16 || len(ins) > 1<<12 {
			return
		}
		off = min(off, uint(len(text)))
		del = min(del, uint(len(text))-off)
		edited := slices.Concat(text[:off], ins, text[off+del:])
		watchdog := time.AfterFunc(10*time.Second, func() { panic("still parsing after 10s") })
		defer watchdog.Stop()
		var p Parser
		p.Parse(text)
		parseBoth(t, &p, edited)
		// And back.
		parseBoth(t, &p, text)
	})
}
