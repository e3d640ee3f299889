package overlay

import (
	"bytes"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/oapi-codegen/oapi-codegen/v2/pkg/codegen"
)

// checkClient generates oapi-codegen's client for the overlaid spec and
// checks that it is gofmt-formatted Go and that where the overlay added 409
// and 422, the operation's response type has them typed with the problem
// schema (ApplicationproblemJSON409 *IdempotencyProblem). codegen.Generate keeps global state: callers must not run in
// parallel.
func checkClient(t *testing.T, orig, overlaid *openapi3.T, ops []Operation, schema string) {
	t.Helper()
	code, err := codegen.Generate(overlaid, codegen.Configuration{
		PackageName: "client",
		Generate:    codegen.GenerateOptions{Client: true, Models: true},
	})
	if err != nil {
		t.Fatalf("codegen.Generate: %v", err)
	}
	formatted, err := format.Source([]byte(code))
	if err != nil {
		t.Fatalf("the generated client is not Go: %v", err)
	}
	if !bytes.Equal(formatted, []byte(code)) {
		t.Error("the generated client is not gofmt-formatted")
	}
	if c := schema + "CodeFingerprintMismatch"; !strings.Contains(code, c+" ") {
		t.Errorf("the client has no constant %s", c)
	}
	fields := responseFields(t, code)
	defs, err := codegen.OperationDefinitions(overlaid) // after Generate, which sets the name normalizer
	if err != nil {
		t.Fatal(err)
	}
	goNames := map[string]string{}
	for _, d := range defs {
		goNames[d.Method+" "+d.Path] = d.OperationId
	}

	for _, op := range ops {
		method := strings.ToUpper(op.Method)
		origOper := orig.Paths.Value(op.Path).GetOperation(method)
		typeName := goNames[method+" "+op.Path] + "Response"
		got, ok := fields[typeName]
		if !ok {
			t.Errorf("%s %s: no type %s in the client", method, op.Path, typeName)
			continue
		}
		for _, status := range []string{"409", "422"} {
			if origOper.Responses != nil && origOper.Responses.Value(status) != nil {
				continue // the operation's own
			}
			field := "ApplicationproblemJSON" + status
			if got[field] != "*"+schema {
				t.Errorf("%s.%s is %q, want *%s", typeName, field, got[field], schema)
			}
		}
	}
}

// responseFields maps each struct type of code whose name ends in Response
// to its field names and their types.
func responseFields(t *testing.T, code string) map[string]map[string]string {
	t.Helper()
	fset := token.NewFileSet()
	file, err := parser.ParseFile(fset, "client.gen.go", code, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]string{}
	ast.Inspect(file, func(n ast.Node) bool {
		ts, ok := n.(*ast.TypeSpec)
		if !ok || !strings.HasSuffix(ts.Name.Name, "Response") {
			return true
		}
		st, ok := ts.Type.(*ast.StructType)
		if !ok {
			return true
		}
		fields := map[string]string{}
		for _, f := range st.Fields.List {
			var b bytes.Buffer
			if err := format.Node(&b, fset, f.Type); err != nil {
				t.Fatal(err)
			}
			for _, name := range f.Names {
				fields[name.Name] = b.String()
			}
		}
		out[ts.Name.Name] = fields
		return false
	})
	return out
}
