package api

import (
	"testing"
)

// TestParseLabelSelector: the grammar of k8s.io/apimachinery's label
// selectors, with cases from its own tests (labels/selector_test.go).
func TestParseLabelSelector(t *testing.T) {
	labels := map[string]string{"x": "a", "y": "b", "w": "", "example.com/team": "grpc"}
	get := func(k string) (string, bool) { v, ok := labels[k]; return v, ok }
	for _, tc := range []struct {
		sel   string
		match bool
	}{
		{"", true},
		{"x=a", true},
		{"x==a", true},
		{"x=a,y=b", true},
		{"x=a,y=c", false},
		{"x!=a", false},
		{"x!=b", true},
		{"z!=a", true}, // a missing key is not a
		{"x in (a,b)", true},
		{"x in (b, c)", false},
		{"x notin (b,c)", true},
		{"z notin (a)", true},
		{"z in (a)", false},
		{"x", true},
		{"z", false},
		{"!z", true},
		{"!x", false},
		{"w=", true},
		{"w", true},
		{"example.com/team=grpc", true},
		{" x = a , y = b ", true},
		{"x in (a),!z,y", true},
	} {
		s, err := parseLabelSelector(tc.sel)
		if err != nil {
			t.Errorf("%q: %v", tc.sel, err)
			continue
		}
		if got := s.matches(get); got != tc.match {
			t.Errorf("%q matches %v, want %v", tc.sel, got, tc.match)
		}
	}
	for _, bad := range []string{
		"x=a||y=b", "x in (a", "x in ()", "x=(a)", "=a", "x in a", "x >< y",
		"x=a,", ",x=a", "x y", "-x=a", "x=" + string(make([]byte, 64)), "Example.com/x=a", "x=a b",
	} {
		if _, err := parseLabelSelector(bad); err == nil {
			t.Errorf("%q: accepted", bad)
		}
	}
}

func TestParseFieldSelector(t *testing.T) {
	fields := map[string]string{"metadata.name": "a,b", "metadata.zone": "example.test"}
	get := func(k string) (string, bool) { v, ok := fields[k]; return v, ok }
	for _, tc := range []struct {
		sel   string
		match bool
	}{
		{"metadata.name=a\\,b", true},
		{"metadata.name==a\\,b", true},
		{"metadata.name!=a", true},
		{"metadata.zone=example.test,metadata.name=x", false},
		{"metadata.zone!=example.test", false},
	} {
		s, err := parseFieldSelector(tc.sel)
		if err != nil {
			t.Errorf("%q: %v", tc.sel, err)
			continue
		}
		if got := s.matches(get); got != tc.match {
			t.Errorf("%q matches %v, want %v", tc.sel, got, tc.match)
		}
	}
	for _, bad := range []string{"spec.x=a", "metadata.name", "metadata.name in (a)"} {
		if _, err := parseFieldSelector(bad); err == nil {
			t.Errorf("%q: accepted", bad)
		}
	}
}

func FuzzParseLabelSelector(f *testing.F) {
	for _, s := range []string{"x=a,y!=b", "x in (a,b),!z", "example.com/team notin (a)", "x", "x==", "x in ()"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sel, err := parseLabelSelector(s)
		if err != nil {
			return
		}
		sel.matches(func(string) (string, bool) { return "a", true })
	})
}
