package main

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/grpc-config-dns/grpc-config-dns/model"
	"github.com/grpc-config-dns/grpc-config-dns/serviceconfig/schema"
)

// TestExplainOutputs: explain prints what the schemas say of a kind or a
// field, as kubectl explain does (issue 31).
func TestExplainOutputs(t *testing.T) {
	code, out, errs := runCLI(t, "explain", "zone.dnssec.keys")
	want := `KIND:     zone
FIELD:    dnssec.keys <string>

DESCRIPTION:
    csk (one combined signing key, the default) or ksk-zsk.

VALUES:
    csk, ksk-zsk
`
	if code != 0 || out != want {
		t.Errorf("explain zone.dnssec.keys: exit %d\n%s%s\nwant\n%s", code, out, errs, want)
	}
	for _, c := range []struct {
		arg  string
		want []string
		not  []string
	}{
		// A kind: its spec's fields, without the services and policies
		// that are objects of their own, and origin optional (the name
		// of the object says it).
		{"zone", []string{"KIND:     zone\n", "\nFIELDS:\n", "  nameservers  <[](string|object)> -required-\n", "  origin  <string>\n", "  dnssec  <object>\n      Sign the zone with DNSSEC (docs/dnssec.md).\n"},
			[]string{"FIELD:", "\n  services  <", "\n  policies  <", "origin  <string> -required-"}},
		// Into the gRPC service config schema, by $ref.
		{"service.serviceConfig", []string{"FIELD:    serviceConfig <object>\n", "  methodConfig  <[]object>\n", "  loadBalancingConfig  <[]any>\n      Load-balancing policies, most preferred first; each client uses the first\n      it supports.\n"}, nil},
		{"zone.dnssec.kskLifetime", []string{"FIELD:    dnssec.kskLifetime <string|integer>\n", "double-DS rollover"}, []string{"FIELDS:"}},
		// Through lists, to the fields of their items; spec. is allowed.
		{"service.spec.choices.serviceConfig.methodConfig.retryPolicy", []string{"FIELD:    choices.serviceConfig.methodConfig.retryPolicy <object>\n", "  maxAttempts  <integer|string> -required-\n", "  perAttemptRecvTimeout  <any>\n"}, nil},
		{"zone.nameservers.addresses", []string{"FIELD:    nameservers.addresses <[]string>\n", "glue"}, nil},
		{"Policies.targetRef.kind", []string{"KIND:     policy\n", "FIELD:    targetRef.kind <string> -required-\n", "VALUES:\n    Zone, Service\n"}, nil},
	} {
		code, out, errs := runCLI(t, "explain", c.arg)
		if code != 0 {
			t.Errorf("explain %s: exit %d\n%s", c.arg, code, errs)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(out, w) {
				t.Errorf("explain %s: no %q in\n%s", c.arg, w, out)
			}
		}
		for _, w := range c.not {
			if strings.Contains(out, w) {
				t.Errorf("explain %s: %q in\n%s", c.arg, w, out)
			}
		}
	}
	// --recursive: every field below, and a recursive schema once.
	code, out, _ = runCLI(t, "explain", "service.choices.dynamicParameterConstraints", "--recursive")
	if code != 0 || !strings.Contains(out, "  andConstraints  ") || !strings.Contains(out, "\n    constraints ") || !strings.Contains(out, "(the fields above, again)") || !strings.Contains(out, "\n    key ") {
		t.Errorf("explain --recursive: exit %d\n%s", code, out)
	}
}

// TestExplainRefuses: an unknown kind or field is a usage error that
// suggests the name probably meant and lists those there are.
func TestExplainRefuses(t *testing.T) {
	for _, c := range []struct {
		args []string
		want []string
	}{
		{nil, []string{"explain takes one KIND[.FIELD]...: the kinds are zone, service, policy"}},
		{[]string{"servce"}, []string{`no kind "servce" (did you mean "service"?); the kinds are zone, service, policy`}},
		{[]string{"zone.dnsec"}, []string{`zone has no field "dnsec" (did you mean "dnssec"?); its fields are compat, dnssec, nameservers, origin, soa, transfer, ttl`}},
		{[]string{"service.serviceConfig.methodConfig.retryPolcy"}, []string{`service.serviceConfig.methodConfig has no field "retryPolcy" (did you mean "retryPolicy"?); its fields are headerExtraction, hedgingPolicy,`}},
		{[]string{"service.zzz"}, []string{`service has no field "zzz"; its fields are addresses,`}},
		{[]string{"zone.ttl.seconds"}, []string{`zone.ttl is <integer|string>: it has no field "seconds"`}},
		{[]string{"zone.services"}, []string{"a zone object's spec has no services: they are objects of their own (explain service)"}},
	} {
		code, out, errs := runCLI(t, append([]string{"explain"}, c.args...)...)
		if code != exitUsage || out != "" {
			t.Errorf("explain %v: exit %d, stdout %q", c.args, code, out)
		}
		for _, w := range c.want {
			if !strings.Contains(errs, w) {
				t.Errorf("explain %v: no %q in\n%s", c.args, w, errs)
			}
		}
	}
}

// TestExplainReachesEveryField: every field the schemas describe for a
// zone, a service or a policy (every "properties" member but those of a
// publisher config's other parts, and but conditions: if, then, not,
// contains) is reached by explain from a kind, and explain describes it.
func TestExplainReachesEveryField(t *testing.T) {
	s, err := loadSchemas()
	if err != nil {
		t.Fatal(err)
	}
	// The fields there are, from the schemas' text.
	want := map[string]bool{}
	notFields := []string{"/if/", "/then/", "/not/", "/contains/"}
	outside := []string{
		model.PublisherSchemaID + "#/properties/",                    // server, tsigKeys, zones
		model.PublisherSchemaID + "#/$defs/zone/properties/services", // objects of their own:
		model.PublisherSchemaID + "#/$defs/zone/properties/policies", // their own kinds
	}
	for id, text := range map[string][]byte{model.PublisherSchemaID: model.PublisherSchema, schema.ServiceConfigID: schema.ServiceConfig} {
		var root any
		if err := json.Unmarshal(text, &root); err != nil {
			t.Fatal(err)
		}
		var walk func(v any, ptr string)
		walk = func(v any, ptr string) {
			switch v := v.(type) {
			case map[string]any:
				for k, sub := range v {
					p := ptr + "/" + escapePointer(k)
					if props, ok := sub.(map[string]any); ok && k == "properties" && !strings.HasSuffix(ptr, "/properties") {
						for name := range props {
							want[id+"#"+p+"/"+escapePointer(name)] = true
						}
					}
					walk(sub, p)
				}
			case []any:
				for i, sub := range v {
					walk(sub, ptr+"/"+strconv.Itoa(i))
				}
			}
		}
		walk(root, "")
	}
	for loc := range want {
		drop := false
		for _, n := range notFields {
			drop = drop || strings.Contains(loc, n)
		}
		for _, o := range outside {
			drop = drop || strings.HasPrefix(loc, o) && !strings.HasPrefix(loc, model.PublisherSchemaID+"#/$defs/zone/properties/policies/items/")
		}
		if drop {
			delete(want, loc)
		}
	}
	if len(want) < 80 {
		t.Fatalf("found only %d fields in the schemas", len(want))
	}

	// The fields explain reaches, from the kinds down, each schema once.
	reached := map[string]string{} // location → a path to it
	seen := map[string]bool{}
	var queue []string
	for _, k := range explainKinds {
		queue = append(queue, k.name)
	}
	for len(queue) > 0 {
		path := queue[0]
		queue = queue[1:]
		x, err := s.resolve(path)
		if err != nil {
			t.Fatalf("explain %s: %v", path, err)
		}
		for _, f := range s.fieldsOf(x) {
			loc := f.node.loc()
			if _, ok := reached[loc]; !ok {
				reached[loc] = path + "." + f.name
			}
			if target := s.target(f.node); !seen[target] {
				seen[target] = true
				queue = append(queue, path+"."+f.name)
			}
		}
	}
	for loc := range want {
		if _, ok := reached[loc]; !ok {
			t.Errorf("explain does not reach the field at %s", loc)
		}
	}
	// And the CLI describes each, by the path found.
	for loc, path := range reached {
		if !want[loc] {
			t.Errorf("explain %s reaches %s, which the schemas' text does not list", path, loc)
		}
		code, out, errs := runCLI(t, "explain", path)
		if code != 0 || !strings.Contains(out, "\nFIELD:    "+strings.SplitN(path, ".", 2)[1]+" <") {
			t.Errorf("explain %s: exit %d\n%s%s", path, code, out, errs)
		}
	}
	// Most fields are described (the others get their $ref's words).
	undescribed := 0
	for _, path := range reached {
		x, _ := s.resolve(path)
		if s.description(x.node) == "" {
			undescribed++
			t.Logf("no description: %s", path)
		}
	}
	if undescribed > len(reached)/10 {
		t.Errorf("%d of %d fields have no description", undescribed, len(reached))
	}
}

// TestExplainCompletes: the shell completes explain's paths from the
// schema, field by field.
func TestExplainCompletes(t *testing.T) {
	for _, c := range []struct {
		prefix    string
		want      []string
		directive string
	}{
		// NoFileComp|NoSpace (6): a path goes on after a field.
		{"", []string{"zone", "service", "policy"}, ":6"},
		{"se", []string{"service"}, ":6"},
		{"zone.dnssec.k", []string{"zone.dnssec.keys", "zone.dnssec.kskLifetime"}, ":6"},
		{"service.serviceConfig.methodConfig.retryPolicy.max", []string{"service.serviceConfig.methodConfig.retryPolicy.maxAttempts", "service.serviceConfig.methodConfig.retryPolicy.maxBackoff"}, ":6"},
		{"zone.nope.", nil, ":4"},
	} {
		got, directive := completeCLI(t, "explain", c.prefix)
		if !slices.Equal(got, c.want) || directive != c.directive {
			t.Errorf("complete explain %q: %q %s, want %q %s", c.prefix, got, directive, c.want, c.directive)
		}
	}
	if got, _ := completeCLI(t, "explain", "zone", ""); len(got) != 0 {
		t.Errorf("complete explain zone '': %q, want nothing (one argument)", got)
	}
}
