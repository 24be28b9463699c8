package serviceconfig

import "testing"

func TestHeaderRuleApply(t *testing.T) {
	for _, tc := range []struct {
		field string
		delim byte
		keep  int
		want  string
		ok    bool
	}{
		// The seed's example.
		{"//foo/bar/baz", '/', 2, "foo/bar", true},
		{"roth@quux@mumble@frotz", '@', 3, "roth@quux@mumble", true},
		// Fewer elements than asked: keep them all.
		{"foo/bar", '/', 5, "foo/bar", true},
		{"/foo", '/', 2, "foo", true},
		// Only delimiters, or empty: no header.
		{"////", '/', 1, "", false},
		{"", '/', 1, "", false},
		{"a", '/', 1, "a", true},
		{"a/b/c", '/', 1, "a", true},
		{"a/b/", '/', 2, "a/b", true},
		{"a/b/", '/', 3, "a/b/", true},
		{"a//b", '/', 2, "a/", true},
	} {
		got, ok := HeaderRule{Delimiter: tc.delim, NumElementsToKeep: tc.keep}.Apply(tc.field)
		if got != tc.want || ok != tc.ok {
			t.Errorf("Apply(%q, %q, %d) = %q, %v; want %q, %v", tc.field, tc.delim, tc.keep, got, ok, tc.want, tc.ok)
		}
	}
}

func TestHeaderRulesLookup(t *testing.T) {
	cfg := `{"methodConfig":[
	  {"name":[{"service":"pkg.Echo","method":"Get"}],"headerExtraction":[{"payloadFieldName":"resource.id","delimiterCharacter":"/","numElementsToKeep":2,"headerName":"resource_affinity_key"}]},
	  {"name":[{"service":"pkg.Echo"}],"headerExtraction":[{"payloadFieldName":"user","delimiterCharacter":"@","numElementsToKeep":3,"headerName":"user_affinity_key"}]},
	  {"name":[{"service":"pkg.Echo","method":"Put"}],"timeout":"1s"},
	  {"name":[{}],"headerExtraction":[]}
	]}`
	hr, err := ParseHeaderRules([]byte(cfg))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		method string
		header string
		set    bool
	}{
		{"/pkg.Echo/Get", "resource_affinity_key", true},
		{"/pkg.Echo/List", "user_affinity_key", true}, // the service's default
		{"/pkg.Echo/Put", "", false},                  // its own entry has no rules
		{"/other.Svc/Do", "", true},                   // the global default: an empty list
	} {
		rules, set := hr.Lookup(tc.method)
		got := ""
		if len(rules) > 0 {
			got = rules[0].HeaderName
		}
		if got != tc.header || set != tc.set {
			t.Errorf("Lookup(%s) = %q, %v; want %q, %v", tc.method, got, set, tc.header, tc.set)
		}
	}
	var none *HeaderRules
	if r, set := none.Lookup("/a/b"); r != nil || set {
		t.Error("nil rules")
	}
}

func FuzzParseHeaderRules(f *testing.F) {
	f.Add([]byte(`{"methodConfig":[{"name":[{"service":"a.B","method":"C"}],"headerExtraction":[{"payloadFieldName":"x.y","delimiterCharacter":"/","numElementsToKeep":2,"headerName":"k"}]}]}`))
	f.Add([]byte(`{"methodConfig":[{"name":[{}],"headerExtraction":[]},{"name":"x"}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		hr, err := ParseHeaderRules(b)
		if err != nil {
			return
		}
		for _, m := range []string{"/a.B/C", "/a.B/D", "/x/y", ""} {
			rules, _ := hr.Lookup(m)
			for _, r := range rules {
				// Every rule that survives parsing is usable.
				if checkHeaderName(r.HeaderName) != nil || r.NumElementsToKeep < 1 {
					t.Fatalf("unusable rule %+v", r)
				}
				if v, ok := r.Apply("//a/b/c"); ok && v == "" {
					t.Fatal("empty header value")
				}
			}
		}
	})
}

// The delimiter can end up in a header value, where gRPC allows printable
// ASCII only: validation refuses anything else, and ParseHeaderRules skips
// such a rule as it skips every invalid one.
func TestDelimiterIsPrintableASCII(t *testing.T) {
	for _, delim := range []string{`"\u0000"`, `"\t"`, `"\u007f"`, `"é"`, `"//"`, `""`} {
		cfg := `{"methodConfig":[{"name":[{}],"headerExtraction":[{"payloadFieldName":"user","delimiterCharacter":` + delim + `,"numElementsToKeep":1,"headerName":"k"}]}]}`
		ds := ValidateServiceConfig([]byte(cfg))
		if !ds.HasErrors() || ds[0].Code != "header-extraction" {
			t.Errorf("delimiter %s: %v, want a header-extraction error", delim, ds)
		}
		if hr, err := ParseHeaderRules([]byte(cfg)); err != nil {
			t.Errorf("delimiter %s: %v", delim, err)
		} else if rules, _ := hr.Lookup("/a.B/C"); len(rules) != 0 {
			t.Errorf("delimiter %s: ParseHeaderRules keeps the rule %+v", delim, rules)
		}
	}
	ok := `{"methodConfig":[{"name":[{}],"headerExtraction":[{"payloadFieldName":"user","delimiterCharacter":" ","numElementsToKeep":1,"headerName":"k"}]}]}`
	if ds := ValidateServiceConfig([]byte(ok)); ds.HasErrors() {
		t.Errorf("a space delimiter: %v", ds)
	}
}
