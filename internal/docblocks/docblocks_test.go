package docblocks

import (
	"bufio"
	"encoding/json"
	"fmt"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// testedElsewhere are the documents whose whole-file blocks a test of
// their own builds and runs (with the generated package they import).
var testedElsewhere = map[string]string{
	"docs/mysql.md": "runtime/mysqlstore's TestDocProgram",
}

// A block is a fenced Go code block of a document.
type block struct {
	doc     string // the document, relative to the checkout
	line    int    // the document's line of the block's first line of code
	code    string
	marker  string // what the line before the fence says: "fragment", "sketch", "setup" or ""
	context string // a fragment's context: testdata/<context>.go
}

var markerRE = regexp.MustCompile(`^<!--\s*(go:fragment|go:sketch|setup:|ogen:)\s*(\S*)`)

// blocks returns the ```go blocks of a document's text.
func blocks(doc, text string) ([]block, error) {
	var out []block
	lines := strings.Split(text, "\n")
	prev := "" // the last non-blank line before the current one
	for i := 0; i < len(lines); i++ {
		line := strings.TrimSpace(lines[i])
		if !strings.HasPrefix(line, "```") {
			if line != "" {
				prev = line
			}
			continue
		}
		info := strings.TrimSpace(strings.TrimPrefix(line, "```"))
		end := i + 1
		for end < len(lines) && strings.TrimSpace(lines[end]) != "```" {
			end++
		}
		if end == len(lines) {
			return nil, fmt.Errorf("%s:%d: a code block that does not end", doc, i+1)
		}
		if info == "go" {
			b := block{doc: doc, line: i + 2, code: strings.Join(lines[i+1:end], "\n")}
			b.context = strings.TrimSuffix(filepath.Base(doc), ".md")
			if m := markerRE.FindStringSubmatch(prev); m != nil {
				switch m[1] {
				case "go:fragment":
					b.marker = "fragment"
					if name := strings.TrimSuffix(m[2], "-->"); name != "" {
						b.context = name
					}
				case "go:sketch":
					b.marker = "sketch"
				default:
					b.marker = "setup"
				}
			}
			out = append(out, b)
		}
		prev = ""
		i = end
	}
	return out, nil
}

// wholeFile reports whether a block's code is a file: its first line that
// is not a comment is a package clause.
func wholeFile(code string) bool {
	for _, l := range strings.Split(code, "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "//") {
			continue
		}
		return strings.HasPrefix(l, "package ")
	}
	return false
}

// commentsOnly reports whether a block holds nothing to compile (the
// //go:generate lines of a generate.go, for instance).
func commentsOnly(code string) bool {
	for _, l := range strings.Split(code, "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "//") {
			return false
		}
	}
	return true
}

// ignored are the errors a fragment that shows alternatives one after
// another cannot avoid; any other error is the document's.
var ignored = []string{"and not used", "no new variables on left side of :="}

// compile builds the blocks in their contexts (testdata/<context>.go, in
// the module its first line names, under root) and returns what is wrong,
// each as "doc:line: error".
func compile(t *testing.T, root string, bs []block) []string {
	t.Helper()
	var problems []string
	byContext := map[string][]block{}
	var files []block
	for _, b := range bs {
		switch {
		case b.marker == "sketch" || b.marker == "setup" || commentsOnly(b.code):
		case wholeFile(b.code):
			if _, ok := testedElsewhere[b.doc]; !ok {
				files = append(files, b)
			}
		default:
			byContext[b.context] = append(byContext[b.context], b)
		}
	}
	dir := t.TempDir()
	// build compiles src as a package of its own inside module, so that
	// its imports resolve there (internal packages too): the go command
	// sees it through an overlay, and nothing is written into the checkout.
	build := func(name, module, src string) {
		path := filepath.Join(dir, name+".go")
		if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		pkg := "zz_docblocks_" + strings.ReplaceAll(name, "-", "_")
		virtual := filepath.Join(root, module, pkg, name+".go")
		overlay, err := json.Marshal(map[string]map[string]string{"Replace": {virtual: path}})
		if err != nil {
			t.Fatal(err)
		}
		overlayFile := filepath.Join(dir, name+".overlay.json")
		if err := os.WriteFile(overlayFile, overlay, 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command("go", "build", "-overlay", overlayFile, "-gcflags=-e", "-o", os.DevNull, "./"+pkg)
		cmd.Dir = filepath.Join(root, module)
		out, err := cmd.CombinedOutput()
		if err == nil {
			return
		}
		problems = append(problems, buildErrors(root, cmd.Dir, name, string(out))...)
	}
	contexts := make([]string, 0, len(byContext))
	for name := range byContext {
		contexts = append(contexts, name)
	}
	sort.Strings(contexts)
	for _, name := range contexts {
		frags := byContext[name]
		ctxFile := filepath.Join("testdata", name+".go")
		src, err := os.ReadFile(ctxFile)
		if err != nil {
			for _, b := range frags {
				problems = append(problems, fmt.Sprintf("%s:%d: a Go fragment with no context: write %s (see doc.go), or mark the block <!-- go:fragment NAME --> or <!-- go:sketch WHY -->", b.doc, b.line, filepath.Join("internal/docblocks", ctxFile)))
			}
			continue
		}
		module, err := moduleOf(string(src))
		if err != nil {
			t.Fatalf("%s: %v", ctxFile, err)
		}
		var sb strings.Builder
		sb.Write(src)
		for _, b := range frags {
			pos := fmt.Sprintf("//line %s:%d\n", filepath.Join(root, b.doc), b.line)
			if _, err := parser.ParseFile(token.NewFileSet(), "", "package p\n"+b.code, 0); err == nil {
				fmt.Fprintf(&sb, "\n%s%s\n", pos, b.code) // top-level declarations
			} else {
				fmt.Fprintf(&sb, "\nfunc _() error {\n%s%s\n\treturn nil\n}\n", pos, b.code)
			}
		}
		build(name, module, sb.String())
	}
	for i, b := range files {
		src, err := os.ReadFile(filepath.Join("testdata", b.context+".go"))
		module := "."
		if err == nil {
			if module, err = moduleOf(string(src)); err != nil {
				t.Fatal(err)
			}
		}
		build(fmt.Sprintf("file%d", i), module, fmt.Sprintf("//line %s:%d\n%s\n", filepath.Join(root, b.doc), b.line, b.code))
	}
	return problems
}

// moduleOf reads a context's "//docblocks:module DIR" line.
func moduleOf(src string) (string, error) {
	first, _, _ := strings.Cut(src, "\n")
	dir, ok := strings.CutPrefix(first, "//docblocks:module ")
	if !ok || strings.TrimSpace(dir) == "" {
		return "", fmt.Errorf(`the first line is not "//docblocks:module DIR"`)
	}
	return strings.TrimSpace(dir), nil
}

var errorLine = regexp.MustCompile(`^(.+?):(\d+)(?::\d+)?: (.+)$`)

// buildErrors returns the errors of go build's output, run in dir, that
// are not ignored, with the documents' paths relative to root.
func buildErrors(root, dir, name, out string) []string {
	var errs []string
	other := false
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		line := sc.Text()
		m := errorLine.FindStringSubmatch(line)
		if m == nil {
			other = other || !strings.HasPrefix(line, "#")
			continue
		}
		skip := false
		for _, s := range ignored {
			skip = skip || strings.Contains(m[3], s)
		}
		if skip {
			continue
		}
		file := m[1]
		if !filepath.IsAbs(file) {
			file = filepath.Join(dir, file)
		}
		if rel, err := filepath.Rel(root, file); err == nil {
			file = rel
		}
		n, _ := strconv.Atoi(m[2])
		errs = append(errs, fmt.Sprintf("%s:%d: %s (context %s)", file, n, m[3], name))
	}
	if len(errs) == 0 && other {
		errs = append(errs, fmt.Sprintf("context %s: go build failed:\n%s", name, out))
	}
	return errs
}

// TestDocBlocks compiles every Go block of README.md and docs/*.md that
// is not a sketch: a document whose code no longer compiles against the
// repository's packages fails here, at the document's line.
func TestDocBlocks(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the documents' code in the checkout's modules")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	docs = append([]string{filepath.Join(root, "README.md")}, docs...)
	var all []block
	for _, path := range docs {
		text, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, path)
		bs, err := blocks(rel, string(text))
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, bs...)
	}
	compiled := 0
	for _, b := range all {
		if b.marker != "sketch" && b.marker != "setup" && !commentsOnly(b.code) {
			compiled++
		}
	}
	if compiled == 0 {
		t.Fatal("no Go block found to compile")
	}
	for _, p := range compile(t, root, all) {
		t.Error(p)
	}
	t.Logf("%d Go blocks, %d compiled", len(all), compiled)
}

// TestDocBlocksCatchDrift: a fragment that no longer matches the API (a
// two-valued call used as one value) fails at its document's line, and
// the same fragment written right passes.
func TestDocBlocksCatchDrift(t *testing.T) {
	if testing.Short() {
		t.Skip("builds code in the checkout's modules")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	doc := "# A doc\n\n<!-- go:fragment beyond-one-hop -->\n```go\nkey, err := idem.DerivedKey(ctx, \"a\")\nfence := idem.FromContext(ctx).Fence\n```\n\n" +
		"<!-- go:fragment beyond-one-hop -->\n```go\ninfo, _ := idem.FromContext(ctx)\nfence := info.Fence\n```\n\n" +
		"<!-- go:sketch your own names -->\n```go\nnothing(here).compiles\n```\n"
	bs, err := blocks("docs/drift.md", doc)
	if err != nil {
		t.Fatal(err)
	}
	if len(bs) != 3 {
		t.Fatalf("found %d blocks, want 3", len(bs))
	}
	problems := compile(t, root, bs)
	if len(problems) != 1 || !strings.HasPrefix(problems[0], "docs/drift.md:6: ") || !strings.Contains(problems[0], "FromContext") {
		t.Fatalf("problems %q, want one at docs/drift.md:6 naming FromContext", problems)
	}
}
