package render

import (
	"flag"
	"go/ast"
	"go/constant"
	"go/parser"
	"go/token"
	"go/types"
	"strconv"
	"strings"
	"testing"

	"github.com/idemgen/idemgen/internal/model"
	"github.com/idemgen/idemgen/runtime/idemop"
)

// CI passes -update to every package under internal/ when it rewrites
// golden files; this package has none.
var _ = flag.Bool("update", false, "unused here")

func TestFormatErrorShowsLines(t *testing.T) {
	src := "package p\n\nfunc f() {\n\treturn 1 +\n}\n"
	_, err := formatSource([]byte(src))
	if err == nil {
		t.Fatal("no error for broken source")
	}
	for _, want := range []string{"format generated code:", ">    5 | }", "     4 | \treturn 1 +", "     3 | func f() {"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%s", want, err)
		}
	}
}

func TestComment(t *testing.T) {
	got := comment(strings.Repeat("word ", 30))
	for _, line := range strings.Split(got, "\n") {
		if !strings.HasPrefix(line, "// ") || len(line) > 76 {
			t.Errorf("bad comment line %q", line)
		}
	}
}

// TestVersionGuard: the constants that a generated file starts with compile
// against every runtime whose range [MinVersion, MaxVersion] holds the
// version it was generated for (File.RuntimeVersion), and against no other.
func TestVersionGuard(t *testing.T) {
	m := model.File{Package: "api", Source: "openapi.yaml", Client: true}
	src, err := File(m)
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "api.idem.gen.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	// Keep only the version guard: the constants that refer to idemop.EnforceVersion.
	var guard []ast.Decl
	for _, d := range f.Decls {
		if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.CONST && strings.Contains(string(src[fset.Position(g.Pos()).Offset:fset.Position(g.End()).Offset]), "idemop.EnforceVersion") {
			guard = append(guard, d)
		}
	}
	if len(guard) != 1 {
		t.Fatalf("%d const declarations refer to idemop.EnforceVersion, want 1:\n%s", len(guard), src)
	}
	f.Decls = append([]ast.Decl{&ast.GenDecl{Tok: token.IMPORT, Specs: []ast.Spec{&ast.ImportSpec{
		Path: &ast.BasicLit{Kind: token.STRING, Value: strconv.Quote(model.OpImport)}}}}}, guard...)
	gen := m.RuntimeVersion()
	for _, r := range []struct {
		min, max int
		ok       bool
	}{
		{min(gen, idemop.MinVersion), idemop.MaxVersion, true},
		{gen, gen, true},
		{gen - 1, gen + 3, true},  // a newer runtime that still supports it
		{gen - 2, gen - 1, false}, // an older runtime: upgrade it
		{gen + 1, gen + 2, false}, // a runtime that dropped it: regenerate
	} {
		fake := types.NewPackage(model.OpImport, "idemop")
		fake.Scope().Insert(types.NewConst(token.NoPos, fake, "MinVersion", types.Typ[types.UntypedInt], constant.MakeInt64(int64(r.min))))
		fake.Scope().Insert(types.NewConst(token.NoPos, fake, "MaxVersion", types.Typ[types.UntypedInt], constant.MakeInt64(int64(r.max))))
		fake.Scope().Insert(types.NewTypeName(token.NoPos, fake, "EnforceVersion", types.Typ[types.Uint]))
		fake.MarkComplete()
		conf := types.Config{Importer: importerFunc(func(string) (*types.Package, error) { return fake, nil })}
		_, err := conf.Check("api", fset, []*ast.File{f}, nil)
		if (err == nil) != r.ok {
			t.Errorf("generated for %d, against a runtime of [%d, %d]: type-check error %v, want ok=%v", gen, r.min, r.max, err, r.ok)
		}
	}
}

type importerFunc func(path string) (*types.Package, error)

func (f importerFunc) Import(path string) (*types.Package, error) { return f(path) }
