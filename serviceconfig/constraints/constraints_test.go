package constraints

import (
	"reflect"
	"testing"
)

func v(k, val string) *Expr { return &Expr{Op: Value, Key: k, Value: val} }
func ex(k string) *Expr     { return &Expr{Op: Exists, Key: k} }
func not(e *Expr) *Expr     { return &Expr{Op: Not, Args: []*Expr{e}} }
func and(es ...*Expr) *Expr { return &Expr{Op: And, Args: es} }
func or(es ...*Expr) *Expr  { return &Expr{Op: Or, Args: es} }

func TestStringJSONKeys(t *testing.T) {
	e := and(v("env", "prod"), not(ex("version")), or(v("zone", "eu"), v("zone", "us")))
	if got, want := e.String(), "env=prod AND NOT version exists AND (zone=eu OR zone=us)"; got != want {
		t.Errorf("String = %q, want %q", got, want)
	}
	if got, want := string(e.AppendJSON(nil)), `{"andConstraints":{"constraints":[{"constraint":{"key":"env","value":"prod"}},{"notConstraints":{"constraint":{"key":"version","exists":{}}}},{"orConstraints":{"constraints":[{"constraint":{"key":"zone","value":"eu"}},{"constraint":{"key":"zone","value":"us"}}]}}]}}`; got != want {
		t.Errorf("AppendJSON = %s", got)
	}
	if got := e.Keys(); !reflect.DeepEqual(got, []string{"env", "version", "zone"}) {
		t.Errorf("Keys = %v", got)
	}
	if got := e.Values(); !reflect.DeepEqual(got, map[string][]string{"env": {"prod"}, "zone": {"eu", "us"}}) {
		t.Errorf("Values = %v", got)
	}
	if and().String() != "TRUE" || or().String() != "FALSE" {
		t.Error("empty AND/OR")
	}
}

func TestEmptyAndOr(t *testing.T) {
	if !and().Match(nil) {
		t.Error("empty AND must match")
	}
	if or().Match(map[string]string{"a": "b"}) {
		t.Error("empty OR must not match")
	}
}

// Keys an expression does not mention never prevent a match (TP2
// "Unconstrained Parameters").
func TestUnconstrainedKeys(t *testing.T) {
	e := and(v("env", "prod"), not(v("version", "v1")))
	for _, p := range []map[string]string{
		{"env": "prod"},
		{"env": "prod", "team": "x"},
		{"env": "prod", "version": "v2", "zone": "eu"},
	} {
		if !e.Match(p) {
			t.Errorf("%v should match %s", p, e)
		}
	}
}
