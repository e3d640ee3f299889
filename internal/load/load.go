// Package load is idemgen's first stage: it loads an OpenAPI document the way
// oapi-codegen does, parses and validates x-idempotent, and returns the plain
// model of the idempotent operations that the templates render.
package load

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/oapi-codegen/oapi-codegen/v2/pkg/codegen"
	"github.com/oapi-codegen/oapi-codegen/v2/pkg/util"

	"github.com/idemgen/idemgen/internal/extension"
	"github.com/idemgen/idemgen/internal/model"
)

// Input is what Load reads.
type Input struct {
	Spec    string                          // path (or URL) of the OpenAPI document
	Source  string                          // how errors and the header name the spec
	Codegen codegen.Configuration           // the user's oapi-codegen configuration
	Overlay util.LoadSwaggerWithOverlayOpts // as oapi-codegen builds it from Codegen, paths resolved
}

// Error is a problem in the spec, located as precisely as the loader can.
type Error struct {
	File      string // the spec, as named on the command line
	Line      int    // 0 when unknown
	Operation string // operationId (or "METHOD /path"); "" for the document
	Err       error
}

// Error returns "file:line: operation op: message".
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	b.WriteString(": ")
	if e.Operation != "" {
		b.WriteString("operation " + e.Operation + ": ")
	}
	b.WriteString(e.Err.Error())
	return b.String()
}

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

// Load loads the spec and returns the model of its idempotent operations.
func Load(in Input) (model.File, error) {
	text, err := os.ReadFile(in.Spec)
	if err != nil && !strings.Contains(in.Spec, "://") {
		return model.File{}, &Error{File: in.Source, Err: err}
	}
	lines := indexLines(text)
	spec, ops, known, err := describe(in.Spec, in.Overlay, in.Codegen)
	if err != nil {
		return model.File{}, &Error{File: in.Source, Err: err}
	}
	at := func(path, method, op string, err error) error {
		var ext *extension.Error
		field := ""
		if errors.As(err, &ext) {
			field = ext.Field
		}
		return &Error{File: in.Source, Line: lines.line(path, method, field), Operation: op, Err: err}
	}

	var doc extension.Spec
	if v, ok := spec.Extensions[extension.Name]; ok {
		if doc, err = extension.ParseDocument(v); err != nil {
			return model.File{}, at("", "", "", err)
		}
	}
	for _, path := range slices.Sorted(maps.Keys(spec.Paths.Map())) {
		if _, ok := spec.Paths.Value(path).Extensions[extension.Name]; ok {
			err := &extension.Error{Msg: "not allowed on a path item; put it on the operations of " + path}
			return model.File{}, &Error{File: in.Source, Line: lines.line(path, extension.Name, ""), Err: err}
		}
	}

	g := in.Codegen.Generate
	router := g.ChiServer || g.StdHTTPServer || g.GorillaServer
	f := model.File{
		Package:     in.Codegen.PackageName,
		Source:      in.Source,
		Server:      router,
		Strict:      router && g.Strict,
		Client:      g.Client,
		TypeImports: map[string]string{},
	}
	for _, d := range ops {
		v, ok := d.op.Extensions[extension.Name]
		if !ok {
			continue
		}
		enabled, s, err := extension.ParseOperation(v)
		if err == nil && enabled {
			var op model.Operation
			op, err = build(f, d, doc, s)
			for _, p := range op.PathParams {
				if err == nil {
					err = typeImports(f.TypeImports, known, p.Type)
				}
			}
			if err == nil {
				f.Operations = append(f.Operations, op)
			}
		}
		if err != nil {
			name := d.specID
			if name == "" {
				name = d.method + " " + d.path
			}
			return model.File{}, at(d.path, d.method, name, err)
		}
	}
	slices.SortFunc(f.Operations, func(a, b model.Operation) int { return cmp.Compare(a.GoName, b.GoName) })
	return f, nil
}
