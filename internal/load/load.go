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
	text, err := os.ReadFile(in.Spec)
	if err != nil && !strings.Contains(in.Spec, "://") {
		return model.File{}, &Error{File: in.SpecName, Err: err}
	}
	lines := indexLines(text)
	cg, err := describe(in.Spec, in.Overlay, in.Codegen)
	if err != nil {
		return model.File{}, &Error{File: in.SpecName, Err: err}
	}
	spec := cg.doc
	var errs Errors
	// report adds the problems err holds, each located at its field of the
	// x-idempotent of the operation at path and method (op names it).
	report := func(path, method, op string, err error) {
		for _, e := range leaves(err) {
			field := ""
			if ext, ok := e.(*extension.Error); ok {
				field = ext.Field
			}
			errs = append(errs, &Error{File: in.SpecName, Line: lines.line(path, method, field), Operation: op, Err: e})
		}
	}

	var doc extension.Spec
	if v, ok := spec.Extensions[extension.Name]; ok {
		if doc, err = extension.ParseDocument(v); err != nil {
			report("", "", "", err)
		}
	}
	for _, path := range slices.Sorted(maps.Keys(spec.Paths.Map())) {
		if _, ok := spec.Paths.Value(path).Extensions[extension.Name]; ok {
			err := &extension.Error{Msg: "not allowed on a path item; put it on the operations of " + path}
			errs = append(errs, &Error{File: in.SpecName, Line: lines.line(path, extension.Name, ""), Err: err})
		}
	}
	// misspelt reports the keys of exts that misspell x-idempotent: an
	// operation carrying one would otherwise run unprotected, silently.
	misspelt := func(exts map[string]any, path, method, op, where string) {
		for _, key := range slices.Sorted(maps.Keys(exts)) {
			if extension.Misspelt(key) {
				errs = append(errs, &Error{File: in.SpecName, Line: lines.misspeltLine(path, method, key), Operation: op, Err: extension.MisspeltError(key, where)})
			}
		}
	}
	misspelt(spec.Extensions, "", "", "", "document")
	for _, path := range slices.Sorted(maps.Keys(spec.Paths.Map())) {
		misspelt(spec.Paths.Value(path).Extensions, path, "", "", "path item")
	}

	api := extension.APIFromTitle(titleOf(spec))
	if doc.API != nil {
		api = *doc.API
	}

	g := in.Codegen.Generate
	fw, server := model.FrameworkFor(generateFlags(g))
	f := model.File{
		Package:         in.Codegen.PackageName,
		Source:          in.Source,
		API:             api,
		Server:          server,
		Strict:          server && fw == model.NetHTTP && g.Strict,
		FrameworkStrict: server && fw != model.NetHTTP && g.Strict,
		Framework:       fw,
		Client:          g.Client,
		TypeImports:     map[string]string{},
	}
	for _, d := range cg.ops {
		name := d.specID
		if name == "" {
			name = d.method + " " + d.path
		}
		misspelt(d.op.Extensions, d.path, d.method, name, "operation")
		v, ok := d.op.Extensions[extension.Name]
		if !ok {
			continue
		}
		enabled, s, err := extension.ParseOperation(v)
		if err != nil {
			report(d.path, d.method, name, err)
			continue
		}
		if !enabled {
			continue
		}
		op, err := build(f, d, doc, s, security(spec, d.op))
		if err != nil {
			report(d.path, d.method, name, err)
			continue
		}
		for _, p := range op.PathParams {
			if err := typeImports(f.TypeImports, cg.imports, p.Type); err != nil {
				report(d.path, d.method, name, err)
			}
		}
		f.Operations = append(f.Operations, op)
	}
	slices.SortFunc(f.Operations, func(a, b model.Operation) int { return cmp.Compare(a.GoName, b.GoName) })
	for _, c := range f.AllocateNames(cg.declared) {
		err := fmt.Errorf("idemgen declares %s, a name users call, and oapi-codegen's output declares it too: rename the schema or operation it comes from (x-go-name)", c.Name)
		if c.Operation < 0 {
			errs = append(errs, &Error{File: in.SpecName, Err: err})
			continue
		}
		op := f.Operations[c.Operation]
		errs = append(errs, &Error{File: in.SpecName, Line: lines.line(op.Path, op.Method, ""), Operation: op.Name(), Err: err})
	}
	if len(errs) > 0 {
		errs.sort()
		return model.File{}, errs
	}
	if len(f.Operations) == 0 {
		f = f.Bare(cg.marked)
	}
	return f, nil
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
