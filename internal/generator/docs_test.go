package generator_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestDocsNameGeneratedIdentifiers: every generated identifier that README.md
// and docs/*.md name in code exists in generated code. A name counts as
// generated when it is written api.Name (the docs' name for the user's
// generated package), or is an unqualified call (Name(...)) in a Go block or
// an inline code span of a name with "Idempot" in it, as every constructor
// idemgen generates has (a user's own functions in an example are not
// checked); it must be declared (a type, function, variable, constant or
// method) by a generated file of the petstore example, of a golden case,
// of the end-to-end webhook receivers or of the ogen end-to-end package.
// A guessed name such as NewIdempotentServer fails here.
func TestDocsNameGeneratedIdentifiers(t *testing.T) {
	declared := generatedNames(t)
	docs, _ := filepath.Glob("../../docs/*.md")
	docs = append([]string{"../../README.md"}, docs...)
	for _, doc := range docs {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		for _, ref := range generatedRefs(string(b)) {
			if !declared[ref.name] {
				t.Errorf("%s:%d: %s is named as generated code, but no generated file declares it",
					strings.TrimPrefix(doc, "../../"), ref.line, ref.name)
			}
		}
	}
}

type docRef struct {
	name string
	line int
}

var (
	// api.Name, anywhere in code.
	apiName = regexp.MustCompile(`\bapi\.([A-Z]\w*)`)
	// An unqualified call of an idemgen name: Name( not preceded by a dot
	// or a letter, Name with Idempot in it.
	bareCall = regexp.MustCompile(`(?:^|[^.\w])([A-Z]\w*Idempot\w*)\(`)
	// An inline code span that starts with such a call.
	spanCall   = regexp.MustCompile("`([A-Z]\\w*Idempot\\w*)\\(")
	inlineCode = regexp.MustCompile("`[^`]*`")
)

// generatedRefs lists the names a Markdown document presents as generated:
// api.X anywhere in code, unqualified calls of names with Idempot in them in
// ```go blocks, and inline code spans that start with one.
func generatedRefs(md string) []docRef {
	var refs []docRef
	inGo, inBlock := false, false
	for i, line := range strings.Split(md, "\n") {
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "```") {
			inBlock = !inBlock
			inGo = inBlock && strings.TrimPrefix(trimmed, "```") == "go"
			continue
		}
		add := func(re *regexp.Regexp, s string) {
			for _, m := range re.FindAllStringSubmatch(s, -1) {
				refs = append(refs, docRef{name: m[1], line: i + 1})
			}
		}
		switch {
		case inGo:
			add(apiName, line)
			add(bareCall, line)
		case !inBlock:
			for _, span := range inlineCode.FindAllString(line, -1) {
				add(apiName, span)
				add(spanCall, span)
			}
		}
	}
	return refs
}

// generatedNames is every identifier declared by the generated files
// (*.gen.go, ogen's *_gen.go among them) of the petstore example, the
// golden cases and the ogen end-to-end package: top-level names and
// methods.
func generatedNames(t *testing.T) map[string]bool {
	t.Helper()
	var files []string
	for _, root := range []string{"../../examples/petstore/api", goldenRoot, "../e2e/hooks", "../ogene2e/api"} {
		err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() && (strings.HasSuffix(path, ".gen.go") || strings.HasSuffix(path, "_gen.go")) {
				files = append(files, path)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	names := map[string]bool{}
	fset := token.NewFileSet()
	for _, f := range files {
		file, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range file.Decls {
			switch d := decl.(type) {
			case *ast.FuncDecl:
				names[d.Name.Name] = true
			case *ast.GenDecl:
				for _, spec := range d.Specs {
					switch s := spec.(type) {
					case *ast.TypeSpec:
						names[s.Name.Name] = true
					case *ast.ValueSpec:
						for _, n := range s.Names {
							names[n.Name] = true
						}
					}
				}
			}
		}
	}
	if !names["WithIdempotency"] || !names["NewIdempotentClient"] {
		t.Fatalf("read %d generated files, but WithIdempotency or NewIdempotentClient is not among their names", len(files))
	}
	return names
}

// TestReadmeCommandsAreCIs: the README's two commands on a fresh machine
// are the demo's and the test command, and .ci/run runs that test command
// as the README spells it.
func TestReadmeCommandsAreCIs(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, _ := strings.Cut(string(readme), "## Two commands on a fresh machine")
	_, block, _ := strings.Cut(section, "```sh\n")
	block, _, _ = strings.Cut(block, "```")
	var commands []string
	for _, line := range strings.Split(block, "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			commands = append(commands, line)
		}
	}
	want := []string{
		"go generate ./examples/petstore/... && go run ./examples/petstore/cmd/demo",
		"bash scripts/test.sh",
	}
	if !slices.Equal(commands, want) {
		t.Fatalf("README's two commands are %q, want %q", commands, want)
	}
	ci, err := os.ReadFile("../../.ci/run")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(strings.Split(string(ci), "\n"), want[1]) {
		t.Errorf(".ci/run has no line %q, the README's test command", want[1])
	}
}
