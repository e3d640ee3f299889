package probe

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/oapi-codegen/oapi-codegen/v2/pkg/codegen"
	"github.com/oapi-codegen/oapi-codegen/v2/pkg/util"
	"gopkg.in/yaml.v3"

	"github.com/idemgen/idemgen/internal/generator"
	"github.com/idemgen/idemgen/internal/load"
	"github.com/idemgen/idemgen/internal/model"
)

// Values are the inputs of one operation's request, from an examples file
// (by operationId or Go name) or the spec's examples.
type Values struct {
	Path   map[string]any `json:"path" yaml:"path"`
	Query  map[string]any `json:"query" yaml:"query"`
	Header map[string]any `json:"header" yaml:"header"`
	Body   any            `json:"body" yaml:"body"`
}

// target is one marked operation with the request the probe sends for it;
// reason says why it is not probed ("" when it is).
type target struct {
	op     model.Operation
	name   string // operationId, or the Go name
	path   string // the path with its parameters filled in
	query  url.Values
	header map[string]string
	body   any // decoded JSON body; nil for none
	reason string
	// at is where the request goes, the query aside: the base URL joined
	// with path, or a webhook's or callback's receiver URL.
	at *url.URL
}

// loadSpec loads the marked operations of spec (the path operations, then
// the webhooks and callbacks) exactly as idemgen does
// (internal/load, with the oapi-codegen config cfgPath when given, else
// overlay) and the document their examples come from.
func loadSpec(spec, cfgPath, overlay string) ([]model.Operation, *openapi3.T, error) {
	cg := codegen.Configuration{PackageName: "probe", Generate: codegen.GenerateOptions{Models: true, ChiServer: true}}
	dir := ""
	if cfgPath != "" {
		data, err := os.ReadFile(cfgPath)
		if err != nil {
			return nil, nil, err
		}
		if cg, _, err = generator.ParseCodegenConfig(data); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", cfgPath, err)
		}
		dir = filepath.Dir(cfgPath)
	}
	if overlay != "" { // given on the command line: relative to the working directory
		cg.OutputOptions.Overlay.Path, dir = overlay, ""
	}
	// The config's overlay is relative to the config, as go generate runs it.
	c := generator.Config{Spec: spec, SpecName: spec, Codegen: cg, Dir: dir}
	m, err := load.Load(load.Input{Spec: spec, Source: spec, SpecName: spec, Codegen: cg, Overlay: c.Overlay()})
	if err != nil {
		return nil, nil, err
	}
	ops := m.Operations
	for _, g := range m.EventGroups() { // webhooks, then callbacks
		ops = append(ops, g.Operations...)
	}
	// A fresh copy, as the overlay generator takes: Load's went through
	// codegen.Generate, which prunes what it does not use.
	doc, err := util.LoadSwaggerWithOverlay(spec, c.Overlay())
	if err != nil {
		return nil, nil, &load.Error{File: spec, Err: err}
	}
	return ops, doc, nil
}

// readValues reads an examples file: a JSON or YAML object of Values by
// operation name.
func readValues(path string) (map[string]Values, error) {
	if path == "" {
		return nil, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out map[string]Values
	if err := yaml.Unmarshal(data, &out); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return out, nil
}

// newTarget builds the request of op from the user's values (given) over
// the spec's examples.
func newTarget(op model.Operation, doc *openapi3.T, given map[string]Values) target {
	t := target{op: op, name: op.Name(), path: op.Path, query: url.Values{}, header: map[string]string{}}
	v, ok := given[op.SpecID]
	if !ok {
		v, ok = given[op.GoName]
	}
	item := pathItem(op, doc)
	var oper *openapi3.Operation
	if item != nil {
		oper = item.GetOperation(op.Method)
	}
	if oper == nil {
		t.reason = "not in the document"
		return t
	}
	var missing []string
	for _, pr := range slices.Concat(item.Parameters, oper.Parameters) {
		p := pr.Value
		if p == nil || p.In == "cookie" || p.In == "header" && op.KeyHeader != "" && strings.EqualFold(p.Name, op.KeyHeader) {
			continue
		}
		val, found := paramValue(p, v)
		if !found {
			if p.Required {
				missing = append(missing, fmt.Sprintf("%s parameter %s", p.In, p.Name))
			}
			continue
		}
		switch p.In {
		case "path":
			t.path = strings.ReplaceAll(t.path, "{"+p.Name+"}", url.PathEscape(val))
		case "query":
			t.query.Set(p.Name, val)
		case "header":
			t.header[p.Name] = val
		}
	}
	for name, val := range v.Header { // headers the spec does not declare
		if _, ok := t.header[name]; !ok {
			t.header[name] = text(val)
		}
	}
	if rb := oper.RequestBody; rb != nil && rb.Value != nil {
		body, found, why := bodyValue(rb.Value, v, ok)
		switch {
		case why != "":
			missing = append(missing, why)
		case found:
			t.body = body
		case rb.Value.Required:
			missing = append(missing, "the request body")
		}
	}
	if ptr := keyPointer(op); ptr != "" {
		if _, isObj := t.body.(map[string]any); t.body != nil && !isObj {
			missing = append(missing, "a JSON object body to carry the key at "+ptr)
		}
	}
	if len(missing) > 0 {
		t.reason = "no example for " + strings.Join(missing, ", ") + " (add one to the spec, or give it in -examples)"
	}
	return t
}

// pathItem is the path item that declares op: its path's, or for a
// webhook the entry under webhooks:, for a callback the URL expression's
// under its path operation's callbacks:. nil when there is none.
func pathItem(op model.Operation, doc *openapi3.T) *openapi3.PathItem {
	switch {
	case op.Event == nil:
		return doc.Paths.Value(op.Path)
	case op.Event.Kind == model.Webhook:
		return doc.Webhooks[op.Event.Name]
	}
	parent := doc.Paths.Value(op.Event.ParentPath)
	if parent == nil {
		return nil
	}
	po := parent.GetOperation(op.Event.ParentMethod)
	if po == nil || po.Callbacks[op.Event.Name] == nil || po.Callbacks[op.Event.Name].Value == nil {
		return nil
	}
	return po.Callbacks[op.Event.Name].Value.Value(op.Event.Expression)
}

// keyPointer is the body member where the probe puts its key: the body
// key's pointer, or a composite key's first (the other parts keep their
// example's values); "" for a header key.
func keyPointer(op model.Operation) string {
	if op.KeyPointer != "" || len(op.KeyPointers) == 0 {
		return op.KeyPointer
	}
	return op.KeyPointers[0]
}

// paramValue is p's value: the user's, else the spec's example.
func paramValue(p *openapi3.Parameter, v Values) (string, bool) {
	var given map[string]any
	switch p.In {
	case "path":
		given = v.Path
	case "query":
		given = v.Query
	case "header":
		given = v.Header
	}
	for name, val := range given {
		if name == p.Name || p.In == "header" && strings.EqualFold(name, p.Name) {
			return text(val), true
		}
	}
	if p.Example != nil {
		return text(p.Example), true
	}
	for _, name := range slices.Sorted(maps.Keys(p.Examples)) {
		if e := p.Examples[name]; e != nil && e.Value != nil && e.Value.Value != nil {
			return text(e.Value.Value), true
		}
	}
	if p.Schema != nil && p.Schema.Value != nil && p.Schema.Value.Example != nil {
		return text(p.Schema.Value.Example), true
	}
	return "", false
}

// bodyValue is the JSON body: the user's (given says there is an entry),
// else the spec's example. why says what is missing when the body is not
// JSON.
func bodyValue(rb *openapi3.RequestBody, v Values, given bool) (any, bool, string) {
	if given && v.Body != nil {
		return jsonValue(v.Body), true, ""
	}
	mt := rb.Content.Get("application/json")
	if mt == nil {
		if rb.Required {
			return nil, false, "a JSON request body (the probe sends JSON only)"
		}
		return nil, false, ""
	}
	if mt.Example != nil {
		return mt.Example, true, ""
	}
	for _, name := range slices.Sorted(maps.Keys(mt.Examples)) {
		if e := mt.Examples[name]; e != nil && e.Value != nil && e.Value.Value != nil {
			return e.Value.Value, true, ""
		}
	}
	if mt.Schema != nil && mt.Schema.Value != nil && mt.Schema.Value.Example != nil {
		return mt.Schema.Value.Example, true, ""
	}
	return nil, false, ""
}

// jsonValue turns a YAML-decoded value into what encoding/json decodes.
func jsonValue(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		return v
	}
	var out any
	if json.Unmarshal(b, &out) != nil {
		return v
	}
	return out
}

// text renders a parameter value.
func text(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	default:
		return fmt.Sprint(v)
	}
}
