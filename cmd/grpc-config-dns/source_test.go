package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/grpc-config-dns/grpc-config-dns/store"
)

// objYAML is a zone and a service with four problems, as issue 30 has
// them.
const objYAML = `metadata: {name: example.test}
spec:
  nameservers: [{name: ns1, addresses: [192.0.2.53]}]
---
metadata: {zone: example.test, name: echo}
spec:
  addresses: [192.0.2.1]
  serviceConfig:
    methodConfig:
      - name: [{}]
        timeout: 1sec
        timout: 1s
        retryPolicy: {maxAttempts: 0}
`

// objJSON is objYAML as a JSON list.
const objJSON = `[
  {"metadata": {"name": "example.test"},
   "spec": {"nameservers": [{"name": "ns1", "addresses": ["192.0.2.53"]}]}},
  {"metadata": {"zone": "example.test", "name": "echo"},
   "spec": {
     "addresses": ["192.0.2.1"],
     "serviceConfig": {"methodConfig": [{
       "name": [{}],
       "timeout": "1sec",
       "timout": "1s",
       "retryPolicy": {"maxAttempts": 0}}]}}}
]
`

// wantPlaced checks that errs reports each of the problems of objYAML's
// service (or objJSON's) where want places them in file, as lint prints
// them, and none at a position in the JSON the CLI sent.
func wantPlaced(t *testing.T, what, errs, file string, want [4]string) {
	t.Helper()
	for i, w := range []string{
		`error: timeout: "1sec" is not a duration`,
		`error: unknown field "timout" in a methodConfig entry`,
		`error: retryPolicy is missing initialBackoff`,
		`error: retryPolicy.maxAttempts must be greater than 1`,
	} {
		line := file + ":" + want[i] + ": " + w
		if !strings.Contains(errs, line) {
			t.Errorf("%s: no %q in\n%s", what, line, errs)
		}
	}
	for _, p := range []string{"/timeout) [duration]", "/timout) [misspelled-field]", "/retryPolicy) [retry-policy]", "/retryPolicy/maxAttempts) [retry-policy]"} {
		if !strings.Contains(errs, "(at /spec/serviceConfig/methodConfig/0"+p) {
			t.Errorf("%s: no pointer %q in\n%s", what, p, errs)
		}
	}
	if strings.Contains(errs, "service/example.test/echo:/spec") {
		t.Errorf("%s: a diagnostic placed in the JSON sent:\n%s", what, errs)
	}
}

// TestPublishPlacesServerDiagnostics (issue 30): the server's
// diagnostics about an object read from a file are printed at the line
// and column of the file where the value is written, as lint prints
// them, with the pointer; every object is sent and every problem of
// every object reported, exit 1.
func TestPublishPlacesServerDiagnostics(t *testing.T) {
	s := startStoreServe(t, t.TempDir())
	defer stopAll(t, s)
	yml := writeFile(t, "obj.yaml", objYAML)
	code, out, errs := s.cli("publish", yml)
	if code != exitInvalid || !strings.Contains(out, "zone/example.test created") {
		t.Errorf("publish: exit %d\n%s%s", code, out, errs)
	}
	wantPlaced(t, "publish YAML", errs, yml, [4]string{"11:18", "12:9", "13:22", "13:36"})

	js := writeFile(t, "obj.json", objJSON)
	code, out, errs = s.cli("publish", js)
	if code != exitInvalid || !strings.Contains(out, "zone/example.test unchanged") {
		t.Errorf("publish JSON: exit %d\n%s%s", code, out, errs)
	}
	wantPlaced(t, "publish JSON", errs, js, [4]string{"9:19", "10:8", "11:23", "11:39"})

	code, out, errs = s.cli("apply", "-f", yml)
	if code != exitInvalid || !strings.Contains(out, "zone/example.test unchanged") {
		t.Errorf("apply: exit %d\n%s%s", code, out, errs)
	}
	wantPlaced(t, "apply -f", errs, yml, [4]string{"11:18", "12:9", "13:22", "13:36"})

	// Two invalid objects and a valid one after them: all three are
	// sent, both refusals reported in full, the valid one created.
	two := writeFile(t, "two.yaml", `metadata: {zone: example.test, name: a}
spec:
  addresses: [192.0.2.1]
  ttl: 5 s
  port: x
---
kind: List
items:
  - metadata: {zone: example.test, name: b}
    spec:
      addresses: [192.0.2.2]
      serviceConfig: {methodConfig: [{name: [{}], timeout: 2sec}]}
  - metadata: {zone: example.test, name: c}
    spec: {addresses: [192.0.2.3]}
`)
	code, out, errs = s.cli("apply", "-f", two)
	for _, want := range []string{
		two + ":4:8: error: the service ttl: \"5 s\"",
		"(at /spec/ttl) [duration-syntax]",
		two + ":5:9: error: the service port must be a whole number",
		two + ":12:60: error: timeout: \"2sec\" is not a duration",
		"service/example.test/a: the spec of service a",
		"service/example.test/b: the spec of service b",
	} {
		if !strings.Contains(errs, want) {
			t.Errorf("two invalid objects: no %q in\n%s", want, errs)
		}
	}
	if code != exitInvalid || !strings.Contains(out, "service/example.test/c created") {
		t.Errorf("two invalid objects and a valid one: exit %d\n%s%s", code, out, errs)
	}

	// apply -f DIR: every file's objects, every file's problems.
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "1.yaml"), []byte(objYAML), 0o644)
	os.WriteFile(filepath.Join(dir, "2.json"), []byte(objJSON), 0o644)
	code, _, errs = s.cli("apply", "-f", dir)
	if code != exitInvalid {
		t.Errorf("apply -f DIR: exit %d\n%s", code, errs)
	}
	wantPlaced(t, "apply -f DIR, 1.yaml", errs, filepath.Join(dir, "1.yaml"), [4]string{"11:18", "12:9", "13:22", "13:36"})
	wantPlaced(t, "apply -f DIR, 2.json", errs, filepath.Join(dir, "2.json"), [4]string{"9:19", "10:8", "11:23", "11:39"})

	// diff -f reports the refusal there too (exit 2, as kubectl diff).
	if code, _, errs := s.cli("diff", "-f", yml); code != exitUsage {
		t.Errorf("diff: exit %d\n%s", code, errs)
	} else {
		wantPlaced(t, "diff -f", errs, yml, [4]string{"11:18", "12:9", "13:22", "13:36"})
	}

	// From stdin, placed in <stdin>, as lint names it.
	var o, e bytes.Buffer
	if code := run([]string{"publish", "-", "--server", s.url()}, strings.NewReader(objYAML), &o, &e); code != exitInvalid {
		t.Errorf("publish -: exit %d\n%s%s", code, o.String(), e.String())
	}
	wantPlaced(t, "publish -", e.String(), "<stdin>", [4]string{"11:18", "12:9", "13:22", "13:36"})

	// An object that cannot be placed (a service without its zone) is
	// reported at its line, and the others are still sent.
	nozone := writeFile(t, "nozone.yaml", "metadata: {name: example.test}\nspec: {nameservers: [{name: ns1, addresses: [192.0.2.53]}]}\n---\nkind: Service\nmetadata: {name: d}\nspec: {addresses: [192.0.2.4]}\n---\nmetadata: {zone: example.test, name: e}\nspec: {addresses: [192.0.2.5]}\n")
	code, out, errs = s.cli("publish", nozone)
	if code != exitInvalid || !strings.Contains(errs, nozone+":4: service d has no metadata.zone") || !strings.Contains(out, "service/example.test/e created") {
		t.Errorf("a service without its zone: exit %d\n%s%s", code, out, errs)
	}
}

// TestPublishConfigPlacesServerDiagnostics: a publisher config valid on
// its own, refused by the server because of what the store holds (a
// policy of the zone that clashes with a service), has the server's
// diagnostics about the services of a batch placed in the config.
func TestPublishConfigPlacesServerDiagnostics(t *testing.T) {
	s := startStoreServe(t, t.TempDir())
	defer stopAll(t, s)
	const cfgText = `zones:
  - origin: example.test.
    nameservers: [{name: ns1, addresses: [192.0.2.53]}]
    services:
      - name: a
        addresses: [192.0.2.1]
      - name: b
        addresses: [192.0.2.1]
        serviceConfig:
          methodConfig:
            - name: [{service: s.S}]
              timeout: 1s
`
	cfg := writeFile(t, "cfg.yaml", cfgText)
	if code, out, errs := s.cli("import", "--config", cfg); code != 0 {
		t.Fatalf("import: exit %d\n%s%s", code, out, errs)
	}
	pol := writeFile(t, "pol.yaml", `kind: Policy
metadata: {zone: example.test, name: retries}
spec:
  targetRef: {kind: Service, name: b}
  default:
    methodConfig: [{name: [{service: s.S}], retryPolicy: {maxAttempts: 2, initialBackoff: 1s, maxBackoff: 2s, backoffMultiplier: 2, retryableStatusCodes: [UNAVAILABLE]}}]
`)
	if code, out, errs := s.cli("apply", "-f", pol); code != 0 {
		t.Fatalf("apply the policy: exit %d\n%s%s", code, out, errs)
	}
	// b hedges now, which the policy's retries forbid.
	os.WriteFile(cfg, []byte(strings.Replace(cfgText, "timeout: 1s", "hedgingPolicy: {maxAttempts: 2}", 1)), 0o644)
	for _, cmd := range [][]string{{"import", "--config", cfg}, {"apply", "-f", cfg}, {"publish", cfg}} {
		code, _, errs := s.cli(cmd...)
		want := cfg + ":12:30: error: a methodConfig may set retryPolicy or hedgingPolicy, not both"
		if code != exitInvalid || !strings.Contains(errs, want) || !strings.Contains(errs, "(at /spec/serviceConfig/methodConfig/0/hedgingPolicy) [retry-and-hedging]") ||
			!strings.Contains(errs, "1 unchanged, 2 refused") {
			t.Errorf("%s: exit %d, want %q in\n%s", cmd[0], code, want, errs)
		}
	}
	// diff of the config: the same, for the service on its own.
	if code, _, errs := s.cli("diff", "-f", cfg); code != exitUsage || !strings.Contains(errs, cfg+":12:30: error: a methodConfig may set retryPolicy or hedgingPolicy") {
		t.Errorf("diff: exit %d\n%s", code, errs)
	}
}

// TestSourceAnnotation: an object written from a file says where it came
// from (grpc-config-dns/source: FILE:LINE, -:LINE from stdin), in GET and
// history; a second apply is unchanged, and so is one of the file with
// its lines moved: where an object was written from is not part of it
// (no new version, the annotation stored kept); a changed object gets
// the new place.
func TestSourceAnnotation(t *testing.T) {
	s := startStoreServe(t, t.TempDir())
	defer stopAll(t, s)
	objs := `metadata: {name: example.test}
spec: {nameservers: [{name: ns1, addresses: [192.0.2.53]}]}
---
# echo
metadata: {zone: example.test, name: echo}
spec: {addresses: [192.0.2.1]}
`
	f := writeFile(t, "objs.yaml", objs)
	if code, out, errs := s.cli("apply", "-f", f); code != 0 {
		t.Fatalf("apply: exit %d\n%s%s", code, out, errs)
	}
	source := func() (string, string) {
		t.Helper()
		_, out, errs := s.cli("get", "example.test", "echo", "-o", "jsonpath={.metadata.annotations.grpc-config-dns/source} {.metadata.resourceVersion}")
		src, rv, ok := strings.Cut(strings.TrimSpace(out), " ")
		if !ok {
			t.Fatalf("get: %q %s", out, errs)
		}
		return src, rv
	}
	src, rv := source()
	if src != f+":5" {
		t.Errorf("source %q, want %q", src, f+":5")
	}
	if _, out, _ := s.cli("get", "example.test", "-o", "yaml"); !strings.Contains(out, "grpc-config-dns/source: "+f+":1") {
		t.Errorf("the zone's source:\n%s", out)
	}
	if code, out, errs := s.cli("apply", "-f", f); code != 0 || strings.Count(out, " unchanged") != 2 {
		t.Errorf("apply again: exit %d\n%s%s", code, out, errs)
	}
	// Lines added above it: the same object, unchanged, where it was.
	os.WriteFile(f, []byte("# objects\n# of example.test\n"+objs), 0o644)
	for _, args := range [][]string{{"apply", "-f", f}, {"apply", "-f", f, "--dry-run=server"}, {"apply", "-f", f, "--dry-run=client"}, {"publish", f}} {
		if code, out, errs := s.cli(args...); code != 0 || strings.Count(out, " unchanged") != 2 {
			t.Errorf("%s of the moved file: exit %d\n%s%s", strings.Join(args, " "), code, out, errs)
		}
	}
	if code, out, errs := s.cli("diff", "-f", f); code != 0 || out != "" {
		t.Errorf("diff of the moved file: exit %d\n%s%s", code, out, errs)
	}
	if now, nowRV := source(); now != src || nowRV != rv {
		t.Errorf("after the moved file: %s at version %s, before %s at %s", now, nowRV, src, rv)
	}
	// Changed: the new place, from stdin.
	var out, errb bytes.Buffer
	changed := strings.Replace(objs, "192.0.2.1", "192.0.2.9", 1)
	if code := run([]string{"apply", "-f", "-", "--server", s.url()}, strings.NewReader(changed), &out, &errb); code != 0 || !strings.Contains(out.String(), "service/example.test/echo configured") {
		t.Fatalf("apply -f - of a change: exit %d\n%s%s", code, out.String(), errb.String())
	}
	if now, _ := source(); now != "-:5" {
		t.Errorf("source from stdin %q, want -:5", now)
	}
	if _, hist, _ := s.cli("history", "example.test", "echo"); !strings.Contains(hist, "metadata.annotations, spec.addresses") {
		t.Errorf("history does not say the annotation changed:\n%s", hist)
	}
	code, hist, errs := s.cli("history", "example.test", "echo", "-o", "yaml")
	if code != 0 || !strings.Contains(hist, "grpc-config-dns/source: -:5") || !strings.Contains(hist, "grpc-config-dns/source: "+f+":5") || !strings.Contains(hist, store.WrittenAt) {
		t.Errorf("history: exit %d\n%s%s", code, hist, errs)
	}
}

// TestPlaceDiagnostic: a server diagnostic's pointer, relative to its
// object, is found in the file as model.NodeJSON read it (aliases, merge
// keys, escapes), at its value, or at its key when the server points at
// the key; a pointer that goes on into a string (JSON in a string), or
// names a member that is absent, stops at the nearest value there is.
// Columns count bytes, as lint's.
func TestPlaceDiagnostic(t *testing.T) {
	text := `x-defaults: &d
  timeout: 1s
  retryPolicy: {maxAttempts: 2}
metadata: {zone: example.test, name: echo, labels: {app.io/name: é, b: ç}}
spec:
  note: "ééé"
  serviceConfig: '{"methodConfig": []}'
  methodConfig:
    - <<: *d
      name: [{service: s}]
    - *d
`
	objs, srcs, isConfig, err := readObjects("f.yaml", []byte(text))
	if err != nil || isConfig || len(objs) != 1 {
		t.Fatalf("readObjects: %v %v %d", err, isConfig, len(objs))
	}
	if got := objs[0].Metadata.Annotations[sourceAnnotation]; got != "f.yaml:1" {
		t.Errorf("source %q", got)
	}
	lines := strings.Split(text, "\n")
	at := func(line int, marker string) [2]int {
		i := strings.Index(lines[line-1], marker)
		if i < 0 {
			t.Fatalf("no %q on line %d", marker, line)
		}
		return [2]int{line, i + 1}
	}
	spec := string(objs[0].Spec)
	for _, c := range []struct {
		path   string
		column int // the server's, in the spec's text (0: none)
		want   [2]int
	}{
		{"", 0, [2]int{1, 1}},
		{"/spec/methodConfig/0/timeout", 0, at(2, "1s")},
		{"/spec/methodConfig/0/name/0/service", 0, at(10, "s}")},
		{"/spec/methodConfig/1/retryPolicy/maxAttempts", 0, at(3, "2}")},
		{"/spec/methodConfig/0/hedgingPolicy", 0, at(9, "<<")},
		{"/spec/methodConfig/7", 0, at(9, "- <<")},
		{"/spec/serviceConfig/methodConfig", 0, at(7, "'{")},
		{"/metadata/labels/app.io~1name", 0, at(4, "é,")},
		{"/metadata/labels/b", 0, at(4, "ç")},
		{"/spec/note", strings.Index(spec, `"note"`) + 1, at(6, "note")},
		{"/spec/note", strings.Index(spec, `"ééé"`) + 1, at(6, `"ééé"`)},
		{"/spec/note", 1, at(6, `"ééé"`)},
	} {
		d := store.Diagnostic{Path: c.path}
		if c.column > 0 {
			d.Line, d.Column = 1, c.column
		}
		line, col, ok := srcs[0].place(d)
		if !ok || [2]int{line, col} != c.want {
			t.Errorf("%s (server column %d): %d:%d %v, want %d:%d", c.path, c.column, line, col, ok, c.want[0], c.want[1])
		}
	}

	cfg := `zones:
  - origin: example.test.
    nameservers: [{name: ns1, addresses: [192.0.2.53]}]
    policies:
      - name: p
        targetRef: {kind: Zone}
    services:
      - name: a
      - name: echo
        labels: {team: a}
        port: 1
`
	lines = strings.Split(cfg, "\n")
	f := configSource("c.yaml", []byte(cfg))
	for _, c := range []struct {
		src  *objectSource
		path string
		want [2]int
	}{
		{f.zone(0, nil), "/metadata/name", at(2, "example.test.")},
		{f.zone(0, nil), "/spec/nameservers/0/addresses/0", at(3, "192.0.2.53")},
		{f.zone(0, nil), "/spec/soa", at(2, "origin")},
		{f.entry(0, "policies", 0, nil), "/spec/targetRef/kind", at(6, "Zone")},
		{f.entry(0, "services", 1, nil), "/metadata/name", at(9, "echo")},
		{f.entry(0, "services", 1, nil), "/metadata/labels/team", at(10, "a}")},
		{f.entry(0, "services", 1, nil), "/spec/port", at(11, "1")},
		{f.entry(0, "services", 1, nil), "/spec/ttl", at(9, "name")},
	} {
		line, col, ok := c.src.place(store.Diagnostic{Path: c.path})
		if !ok || [2]int{line, col} != c.want {
			t.Errorf("config %s: %d:%d %v, want %d:%d", c.path, line, col, ok, c.want[0], c.want[1])
		}
	}
	if _, _, ok := f.entry(0, "services", 5, nil).place(store.Diagnostic{Path: "/spec/port"}); ok {
		t.Error("a service the config does not have is placed")
	}
}
