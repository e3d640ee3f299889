// Package load is idemgen's first stage: it loads an OpenAPI document the way
// oapi-codegen does, parses and validates x-idempotent, and returns the plain
// model of the idempotent operations that the templates render.
package load

import (
	"cmp"
	"fmt"
	"maps"
	"os"
	"reflect"
	"slices"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/oapi-codegen/oapi-codegen/v2/pkg/codegen"
	"github.com/oapi-codegen/oapi-codegen/v2/pkg/util"

	"github.com/idemgen/idemgen/internal/extension"
	"github.com/idemgen/idemgen/internal/model"
)

// Input is what Load reads.
type Input struct {
	Spec   string // path (or URL) of the OpenAPI document
	Source string // how the generated file's header names the spec
	// SpecName is how errors name the spec.
	SpecName string
	Codegen  codegen.Configuration           // the user's oapi-codegen configuration
	Overlay  util.LoadSwaggerWithOverlayOpts // as oapi-codegen builds it from Codegen, paths resolved
}

// Load loads the spec and returns the model of its idempotent operations.
// Problems in the spec are reported all at once, as Errors.
func Load(in Input) (model.File, error) {
	l, err := open(in)
	if err != nil {
		return model.File{}, err
	}
	doc := l.document()
	f := l.file(doc)
	l.operations(&f, doc)
	l.events(&f, doc)
	l.allocateNames(&f)
	if len(l.errs) > 0 {
		l.errs.sort()
		return model.File{}, l.errs
	}
	switch {
	case len(f.Operations) == 0 && f.HasEvents():
		f = f.WithoutPaths()
	case len(f.Operations) == 0:
		f = f.Bare(l.cg.marked)
	}
	return f, nil
}

// loader is one run of Load: the spec as read and as oapi-codegen
// describes it, and the problems found so far, every one of them reported
// at the end.
type loader struct {
	in    Input
	lines lineIndex
	cg    *codegenSpec
	errs  Errors
}

// open reads the spec's text, for the line numbers of errors, and has
// oapi-codegen describe the spec. A spec named by a URL has no text to
// read: its errors carry no line.
func open(in Input) (*loader, error) {
	text, err := os.ReadFile(in.Spec)
	if err != nil && !strings.Contains(in.Spec, "://") {
		return nil, &Error{File: in.SpecName, Err: err}
	}
	cg, err := describe(in.Spec, in.Overlay, in.Codegen)
	if err != nil {
		return nil, &Error{File: in.SpecName, Err: err}
	}
	return &loader{in: in, lines: indexLines(text), cg: cg}, nil
}

// fail records a problem at line (0 when unknown) of the operation op (""
// for the document).
func (l *loader) fail(line int, op string, err error) {
	l.errs = append(l.errs, &Error{File: l.in.SpecName, Line: line, Operation: op, Err: err})
}

// report records the problems err holds, each located at its field of the
// x-idempotent of the operation at path and method (op names it).
func (l *loader) report(path, method, op string, err error) {
	for _, e := range leaves(err) {
		field := ""
		if ext, ok := e.(*extension.Error); ok {
			field = ext.Field
		}
		l.fail(l.lines.line(path, method, field), op, e)
	}
}

// misspelt records the keys of exts that misspell x-idempotent: an
// operation carrying one would otherwise run unprotected, silently. where
// says what carries exts (document, path item, operation).
func (l *loader) misspelt(exts map[string]any, path, method, op, where string) {
	_, beside := exts[extension.Name]
	for _, key := range slices.Sorted(maps.Keys(exts)) {
		if extension.Misspelt(key) {
			l.fail(l.lines.misspeltLine(path, method, key), op, extension.MisspeltError(key, where, beside))
		}
	}
}

// document checks the extensions of the document and its path items, and
// returns the document-level x-idempotent settings that operations inherit.
func (l *loader) document() extension.Spec {
	spec := l.cg.doc
	var doc extension.Spec
	if v, ok := spec.Extensions[extension.Name]; ok {
		var err error
		if doc, err = extension.ParseDocument(v); err != nil {
			l.report("", "", "", err)
		}
	}
	l.misspelt(spec.Extensions, "", "", "", "document")
	for _, path := range slices.Sorted(maps.Keys(spec.Paths.Map())) {
		exts := spec.Paths.Value(path).Extensions
		if _, ok := exts[extension.Name]; ok {
			err := &extension.Error{Msg: "not allowed on a path item; put it on the operations of " + path}
			l.fail(l.lines.line(path, extension.Name, ""), "", err)
		}
		l.misspelt(exts, path, "", "", "path item")
	}
	return doc
}

// file returns the model of the generated file before its operations:
// which wrappers the user's oapi-codegen configuration asks for, for which
// framework, and the API's name in storage keys.
func (l *loader) file(doc extension.Spec) model.File {
	api := extension.APIFromTitle(titleOf(l.cg.doc))
	if doc.API != nil {
		api = *doc.API
	}
	g := l.in.Codegen.Generate
	fw, server := model.FrameworkFor(generateFlags(g))
	return model.File{
		Package:         l.in.Codegen.PackageName,
		Source:          l.in.Source,
		API:             api,
		Server:          server,
		Strict:          server && fw == model.NetHTTP && g.Strict,
		FrameworkStrict: server && fw != model.NetHTTP && g.Strict,
		Framework:       fw,
		Client:          g.Client,
		TypeImports:     map[string]string{},
	}
}

// operations adds to f the model of each operation the spec marks
// x-idempotent, sorted by Go name; doc holds the document-level settings.
func (l *loader) operations(f *model.File, doc extension.Spec) {
	for _, d := range l.cg.ops {
		if op, ok := l.operation(*f, d, doc); ok {
			f.Operations = append(f.Operations, op)
		}
	}
	slices.SortFunc(f.Operations, func(a, b model.Operation) int { return cmp.Compare(a.GoName, b.GoName) })
}

// operation returns the model of the operation d, and false when d is not
// x-idempotent or its x-idempotent has problems (recorded). The imports
// its path parameters' types need are added to f.TypeImports.
func (l *loader) operation(f model.File, d codegenOp, doc extension.Spec) (model.Operation, bool) {
	name := d.name()
	l.misspelt(d.op.Extensions, d.path, d.method, name, "operation")
	v, ok := d.op.Extensions[extension.Name]
	if !ok {
		return model.Operation{}, false
	}
	enabled, s, err := extension.ParseOperation(v)
	if err != nil {
		l.report(d.path, d.method, name, err)
		return model.Operation{}, false
	}
	if !enabled {
		return model.Operation{}, false
	}
	if err := providerOnPath(s); err != nil {
		l.report(d.path, d.method, name, err)
		return model.Operation{}, false
	}
	op, err := build(f, d, doc, s, security(l.cg.doc, d.op))
	if err != nil {
		l.report(d.path, d.method, name, err)
		return model.Operation{}, false
	}
	for _, p := range op.PathParams {
		if err := typeImports(f.TypeImports, l.cg.imports, p.Type); err != nil {
			l.report(d.path, d.method, name, err)
		}
	}
	return op, true
}

// allocateNames chooses the names f's generated code declares itself, and
// records each exported one that oapi-codegen's output declares already.
func (l *loader) allocateNames(f *model.File) {
	for _, c := range f.AllocateNames(l.cg.declared) {
		err := fmt.Errorf("idemgen declares %s, a name users call, and oapi-codegen's output declares it too: rename the schema or operation it comes from (x-go-name)", c.Name)
		if c.Operation < 0 {
			l.fail(0, "", err)
			continue
		}
		op := f.Operations[c.Operation]
		l.fail(l.lines.line(op.Path, op.Method, ""), op.Name(), err)
	}
}

// titleOf is the spec's info.title, "" when it has no info.
func titleOf(spec *openapi3.T) string {
	if spec.Info == nil {
		return ""
	}
	return spec.Info.Title
}

// generateFlags returns a function reporting whether g sets a generate:
// flag, named as a configuration file spells it (oapi-codegen's own YAML
// tags), for the framework table of the model to choose by.
func generateFlags(g codegen.GenerateOptions) func(flag string) bool {
	v := reflect.ValueOf(g)
	set := map[string]bool{}
	for i := range v.NumField() {
		name, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("yaml"), ",")
		set[name] = v.Field(i).Kind() == reflect.Bool && v.Field(i).Bool()
	}
	return func(flag string) bool { return set[flag] }
}
