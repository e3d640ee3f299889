package load

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"strings"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/oapi-codegen/oapi-codegen/v2/pkg/codegen"
	"github.com/oapi-codegen/oapi-codegen/v2/pkg/util"

	"github.com/idemgen/idemgen/internal/extension"
	"github.com/idemgen/idemgen/internal/model"
)

// oapiState serialises describe. oapi-codegen's pkg/codegen keeps its
// configuration, spec, name normalizer, initialisms, response type suffix
// and template functions in package variables that only codegen.Generate
// sets, and OperationDefinitions reads them. This mutex guards that state of
// oapi-codegen's, not any of ours; describe is the only code in this program
// that touches it (tests run oapi-codegen's command in a process of its own).
var oapiState sync.Mutex

// codegenSpec is what oapi-codegen makes of the spec.
type codegenSpec struct {
	doc      *openapi3.T       // the loaded spec, overlay applied
	ops      []codegenOp       // its path operations
	imports  map[string]string // package names its Go types may use -> import paths
	declared map[string]bool   // the package-level identifiers its output declares
	// marked counts the operations of the whole spec that opt in to
	// x-idempotent, before the config's include/exclude filters.
	marked int
	// events are its webhook and callback operations.
	events []codegenOp
}

// codegenOp is what idemgen needs of one operation, as oapi-codegen
// describes it while its global state is set.
type codegenOp struct {
	op       *openapi3.Operation // the operation in the loaded spec, for x-idempotent
	goName   string
	specID   string
	method   string
	path     string
	summary  string
	pathArgs []model.Param
	// hasParams: oapi-codegen declares GoName+"Params".
	hasParams bool
	params    []param       // query, header and cookie parameters
	headers   []headerField // fields of GoName+"Params" for header parameters
	bodies    []model.Body
	response  string // client response type
	// event says where a webhook or callback operation is; nil for a path
	// operation.
	event *eventPlace
}

// name is the operation as the spec calls it, for errors: its operationId,
// or its route.
func (d codegenOp) name() string {
	if d.specID != "" {
		return d.specID
	}
	return d.method + " " + d.path
}

type param struct{ in, name string }

type headerField struct {
	name     string // as declared
	field    string // Go field name
	typ      string // Go type of the field
	required bool
	// stringy: the field's type (without its *) is a local name for a Go
	// string, so the key converts to it.
	stringy bool
}

// describe loads the spec with oapi-codegen's loader (overlay included) and
// describes its path operations with the names oapi-codegen gives them for
// cfg. This is the one function that drives oapi-codegen's global state: it
// runs codegen.Generate with the user's configuration (output discarded, not
// formatted) so that every global is exactly what oapi-codegen's own run
// sets, then asks codegen.OperationDefinitions again for the definitions.
func describe(specPath string, overlay util.LoadSwaggerWithOverlayOpts, cfg codegen.Configuration) (*codegenSpec, error) {
	spec, err := util.LoadSwaggerWithOverlay(specPath, overlay)
	if err != nil {
		return nil, err
	}

	oapiState.Lock()
	defer oapiState.Unlock()

	// Generate rewrites operationIds in place with their Go names; keep the
	// originals to restore them for the second OperationDefinitions pass.
	original := map[*openapi3.Operation]string{}
	marked := 0
	for _, item := range spec.Paths.Map() {
		for _, op := range item.Operations() {
			original[op] = op.OperationID
			if v, ok := op.Extensions[extension.Name]; ok {
				if enabled, _, err := extension.ParseOperation(v); err != nil || enabled {
					marked++
				}
			}
		}
	}
	cfg.OutputOptions.SkipFmt = true
	if cfg.OutputOptions.ResponseTypeSuffix == "" {
		// Generate only ever sets the suffix, so reset it from an earlier run.
		cfg.OutputOptions.ResponseTypeSuffix = "Response"
	}
	code, err := codegen.Generate(spec, cfg)
	if err != nil {
		return nil, fmt.Errorf("oapi-codegen: %w", err)
	}
	declared, err := declaredNames(code)
	if err != nil {
		return nil, fmt.Errorf("oapi-codegen: %w", err)
	}
	for op, id := range original {
		op.OperationID = id
	}
	defs, err := codegen.OperationDefinitions(spec)
	if err != nil {
		return nil, fmt.Errorf("oapi-codegen: %w", err)
	}
	known, err := knownImports(cfg, defs)
	if err != nil {
		return nil, fmt.Errorf("oapi-codegen: %w", err)
	}
	responseTypeName, _ := codegen.TemplateFunctions["genResponseTypeName"].(func(string) string)

	out := make([]codegenOp, 0, len(defs))
	for _, def := range defs {
		if def.IsAlias {
			continue // shares its *openapi3.Operation with the canonical path
		}
		out = append(out, fromDefinition(def, original[def.Spec], responseTypeName))
	}
	events, err := describeEvents(spec, responseTypeName)
	if err != nil {
		return nil, fmt.Errorf("oapi-codegen: %w", err)
	}
	marked += markedEvents(events)
	return &codegenSpec{doc: spec, ops: out, imports: known, declared: declared, marked: marked, events: events}, nil
}

// fromDefinition is what idemgen needs of oapi-codegen's definition def of
// an operation whose operationId in the spec is specID.
func fromDefinition(def codegen.OperationDefinition, specID string, responseTypeName func(string) string) codegenOp {
	d := codegenOp{
		op:        def.Spec,
		goName:    def.OperationId,
		specID:    specID,
		method:    strings.ToUpper(def.Method),
		path:      def.Path,
		summary:   def.Summary,
		hasParams: def.RequiresParamObject(),
	}
	if responseTypeName != nil {
		d.response = responseTypeName(def.OperationId)
	}
	for _, p := range def.PathParams {
		d.pathArgs = append(d.pathArgs, model.Param{Name: p.GoVariableName(), Type: p.TypeDef()})
	}
	for _, p := range def.Params() {
		d.params = append(d.params, param{in: p.In, name: p.ParamName})
	}
	d.headers = headerFields(def)
	d.bodies = bodies(def)
	return d
}

// declaredNames returns the package-level identifiers that oapi-codegen's
// output declares, which the generated file, in the same package, must not
// declare again.
func declaredNames(code string) (map[string]bool, error) {
	f, err := parser.ParseFile(token.NewFileSet(), "oapi-codegen.go", code, parser.SkipObjectResolution)
	if err != nil {
		return nil, fmt.Errorf("parse its output: %w", err)
	}
	names := map[string]bool{}
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Recv == nil {
				names[d.Name.Name] = true
			}
		case *ast.GenDecl:
			for _, s := range d.Specs {
				switch s := s.(type) {
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
	return names, nil
}

// headerFields finds the header parameters in the Params struct that
// oapi-codegen declares, with the field names and types it gives them.
func headerFields(def codegen.OperationDefinition) []headerField {
	var fields []headerField
	for _, td := range def.TypeDefinitions {
		if td.TypeName != def.OperationId+"Params" {
			continue
		}
		for _, prop := range td.Schema.Properties {
			for _, h := range def.HeaderParams {
				if h.ParamName == prop.JsonFieldName {
					typ := prop.GoTypeDef()
					fields = append(fields, headerField{
						name:     h.ParamName,
						field:    prop.GoFieldName(),
						typ:      typ,
						required: h.Required,
						stringy:  isStringParam(h) && token.IsIdentifier(strings.TrimPrefix(typ, "*")),
					})
				}
			}
		}
	}
	return fields
}

// isStringParam reports whether oapi-codegen represents the parameter's
// schema, with any $ref resolved, as a Go string (not a UUID, a date, an
// x-go-type or a type-mapping override).
func isStringParam(p codegen.ParameterDefinition) bool {
	if p.Spec == nil || p.Spec.Schema == nil || p.Spec.Schema.Value == nil {
		return false
	}
	return isStringSchema(p.Spec.Schema.Value)
}

// isStringSchema reports whether oapi-codegen represents schema, with any
// $ref resolved, as a Go string.
func isStringSchema(schema *openapi3.Schema) bool {
	if schema == nil {
		return false
	}
	s, err := codegen.GenerateGoSchema(&openapi3.SchemaRef{Value: schema}, nil)
	return err == nil && s.GoType == "string"
}

// bodies describes the request bodies as the strict server binds them.
func bodies(def codegen.OperationDefinition) []model.Body {
	out := make([]model.Body, 0, len(def.Bodies))
	for _, b := range def.Bodies {
		mb := model.Body{ContentType: b.ContentType, Field: "Body"}
		if len(def.Bodies) > 1 {
			mb.Field = b.NameTag + "Body"
		}
		switch {
		case b.NameTag == "Multipart":
			mb.Kind = model.BodyMultipart
		case b.NameTag == "":
			mb.Kind = model.BodyReader
		case b.IsJSON():
			mb.Kind = model.BodyJSON
		case b.NameTag == "Formdata":
			mb.Kind = model.BodyForm
		case b.NameTag == "Text":
			mb.Kind = model.BodyText
			mb.String = isStringSchema(b.Schema.OAPISchema)
		default:
			mb.Kind = model.BodyReader
		}
		if mb.Kind != model.BodyReader && mb.Kind != model.BodyMultipart {
			mb.Type = def.OperationId + b.NameTag + "RequestBody"
		}
		out = append(out, mb)
	}
	return out
}
