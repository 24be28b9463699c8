package serviceconfig

import (
	"flag"
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

var updateAPI = flag.Bool("update-api", false, "rewrite testdata/api.txt with the package's exported names")

// TestExportedNames lists every exported name of the package (constants,
// variables, functions, types, and the methods and struct fields of
// exported types) against testdata/api.txt, so that an addition to the
// public API, which other modules may come to depend on, is a deliberate
// change to that file and shows in review. Issue 13 trimmed the surface
// to what other packages and users need.
func TestExportedNames(t *testing.T) {
	got := strings.Join(exportedNames(t, "."), "\n") + "\n"
	const golden = "testdata/api.txt"
	if *updateAPI {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	b, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	have := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
	for _, n := range have {
		if !slices.Contains(want, n) {
			t.Errorf("exported but not in %s: %s (export only what callers outside the package need; add it there if they do)", golden, n)
		}
	}
	for _, n := range want {
		if !slices.Contains(have, n) {
			t.Errorf("in %s but no longer exported: %s (a removal breaks callers: say so in CHANGELOG.md, then run go test -run TestExportedNames -update-api)", golden, n)
		}
	}
}

// exportedNames are the exported names of the package in dir, from its
// source without tests, sorted: Name for a package-level name, Type.Name
// for a method or a field of an exported type.
func exportedNames(t *testing.T, dir string) []string {
	t.Helper()
	fset := token.NewFileSet()
	paths, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	for _, p := range paths {
		if strings.HasSuffix(p, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, p, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	pkg, err := doc.NewFromFiles(fset, files, "github.com/grpc-config-dns/grpc-config-dns/serviceconfig")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	values := func(vs []*doc.Value) {
		for _, v := range vs {
			out = append(out, v.Names...)
		}
	}
	funcs := func(fs []*doc.Func) {
		for _, f := range fs {
			out = append(out, f.Name)
		}
	}
	values(pkg.Consts)
	values(pkg.Vars)
	funcs(pkg.Funcs)
	for _, typ := range pkg.Types {
		out = append(out, typ.Name)
		values(typ.Consts)
		values(typ.Vars)
		funcs(typ.Funcs)
		for _, m := range typ.Methods {
			out = append(out, typ.Name+"."+m.Name)
		}
		for _, spec := range typ.Decl.Specs {
			ts, ok := spec.(*ast.TypeSpec)
			if !ok || ts.Name.Name != typ.Name {
				continue
			}
			var fields *ast.FieldList
			switch x := ts.Type.(type) {
			case *ast.StructType:
				fields = x.Fields
			case *ast.InterfaceType:
				fields = x.Methods
			}
			if fields == nil {
				continue
			}
			for _, f := range fields.List {
				for _, n := range f.Names {
					if n.IsExported() {
						out = append(out, typ.Name+"."+n.Name)
					}
				}
				if len(f.Names) == 0 { // embedded
					if id := embeddedName(f.Type); id != "" && ast.IsExported(id) {
						out = append(out, typ.Name+"."+id)
					}
				}
			}
		}
	}
	slices.Sort(out)
	return out
}

func embeddedName(e ast.Expr) string {
	switch x := e.(type) {
	case *ast.Ident:
		return x.Name
	case *ast.StarExpr:
		return embeddedName(x.X)
	case *ast.SelectorExpr:
		return x.Sel.Name
	}
	return ""
}
