package overlay

import (
	"cmp"
	"encoding/json"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/idemgen/idemgen/runtime/idemop"
)

// Prefixes of the local references this package follows.
const (
	parameterRefPrefix = "#/components/parameters/"
	responseRefPrefix  = "#/components/responses/"
)

// declaresHeaderParameter reports whether a header parameter called name
// (case-insensitively, as HTTP header names are) is declared on f's
// operation or its path item, following $refs to components/parameters.
func declaresHeaderParameter(doc *openapi3.T, f locatedOp, name string) bool {
	for _, p := range slices.Concat(f.item.Parameters, f.oper.Parameters) {
		v := parameterValue(doc, p)
		if v != nil && v.In == openapi3.ParameterInHeader && strings.EqualFold(v.Name, name) {
			return true
		}
	}
	return false
}

// parameterValue is the parameter p declares or references, nil when it
// cannot be found.
func parameterValue(doc *openapi3.T, p *openapi3.ParameterRef) *openapi3.Parameter {
	for range 16 { // a bound against reference cycles
		switch {
		case p == nil:
			return nil
		case p.Value != nil:
			return p.Value
		}
		name, ok := strings.CutPrefix(p.Ref, parameterRefPrefix)
		if !ok || doc.Components == nil {
			return nil
		}
		p = doc.Components.Parameters[unescapePointer(name)]
	}
	return nil
}

// hasHeader reports whether headers declares name, case-insensitively.
func hasHeader(headers openapi3.Headers, name string) bool {
	for h := range headers {
		if strings.EqualFold(h, name) {
			return true
		}
	}
	return false
}

// replayable reports whether a response with status code can be a replay
// under op's storage policy (the runtime's rule, idemop.Operation.Stores): a
// code the policy stores, or a range 2XX to 5XX of which it stores some
// code. default does not qualify (it mostly stands for errors).
func (op Operation) replayable(code string) bool {
	policy := idemop.Operation{Final: op.Final, Transient: op.Transient}
	if len(code) == 3 && code[1:] == "XX" && code[0] >= '2' && code[0] <= '5' {
		lo := int(code[0]-'0') * 100
		for n := lo; n < lo+100; n++ {
			if policy.Stores(n) {
				return true
			}
		}
		return false
	}
	n, err := strconv.Atoi(code)
	return err == nil && len(code) == 3 && policy.Stores(n)
}

// responseUser is one use of a components/responses entry. Uses from
// anything but an operation under paths (callbacks, webhooks, other
// components) have an empty method.
type responseUser struct {
	method, path, status string
}

// componentResponseUsers maps each components/responses name to its uses,
// sorted.
func componentResponseUsers(doc *openapi3.T) map[string][]responseUser {
	w := &usageWalker{users: map[string][]responseUser{}, seen: map[*openapi3.Operation]bool{}}
	if doc.Paths != nil {
		for path, item := range doc.Paths.Map() {
			w.item(path, item)
		}
	}
	for _, item := range doc.Webhooks {
		w.item("", item)
	}
	if doc.Components != nil {
		for _, r := range doc.Components.Responses {
			if name, ok := componentResponseName(r); ok {
				w.users[name] = append(w.users[name], responseUser{})
			}
		}
		for _, cb := range doc.Components.Callbacks {
			w.callback(cb)
		}
	}
	for _, u := range w.users {
		slices.SortFunc(u, func(a, b responseUser) int {
			return cmp.Or(cmp.Compare(a.path, b.path), cmp.Compare(a.method, b.method), cmp.Compare(a.status, b.status))
		})
	}
	return w.users
}

// usageWalker collects the uses of components/responses entries.
type usageWalker struct {
	users map[string][]responseUser
	seen  map[*openapi3.Operation]bool // walked already: callbacks may be shared
}

// item walks the operations of a path item; path is empty for path items
// outside paths (callbacks, webhooks).
func (w *usageWalker) item(path string, item *openapi3.PathItem) {
	if item == nil {
		return
	}
	for method, op := range item.Operations() {
		if path == "" {
			method = ""
		}
		w.operation(method, path, op)
	}
}

func (w *usageWalker) operation(method, path string, op *openapi3.Operation) {
	if op == nil || w.seen[op] {
		return
	}
	w.seen[op] = true
	if op.Responses != nil {
		for status, r := range op.Responses.Map() {
			if name, ok := componentResponseName(r); ok {
				w.users[name] = append(w.users[name], responseUser{method: method, path: path, status: status})
			}
		}
	}
	for _, cb := range op.Callbacks {
		w.callback(cb)
	}
}

func (w *usageWalker) callback(cb *openapi3.CallbackRef) {
	if cb == nil || cb.Value == nil {
		return
	}
	for _, item := range cb.Value.Map() {
		w.item("", item)
	}
}

// componentResponseName is the components/responses name r references.
func componentResponseName(r *openapi3.ResponseRef) (string, bool) {
	if r == nil {
		return "", false
	}
	name, ok := strings.CutPrefix(r.Ref, responseRefPrefix)
	return unescapePointer(name), ok
}

// unescapePointer decodes one JSON Pointer reference token.
func unescapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~1", "/"), "~0", "~")
}

// problemSchemaName picks the components/schemas name of the problem schema:
// IdempotencyProblem, or IdempotencyProblem2 and so on when that name is
// taken by something else. A schema of that name equal to the one Build adds
// is reused; add reports whether the schema must be added.
//
// A name counts as taken in every components section, and compared without
// case or punctuation, as oapi-codegen's Go type names would collide.
func problemSchemaName(doc *openapi3.T) (name string, add bool) {
	taken := map[string]bool{}
	if c := doc.Components; c != nil {
		addNames(taken, c.Schemas)
		addNames(taken, c.Parameters)
		addNames(taken, c.Headers)
		addNames(taken, c.RequestBodies)
		addNames(taken, c.Responses)
		addNames(taken, c.SecuritySchemes)
		addNames(taken, c.Examples)
		addNames(taken, c.Links)
		addNames(taken, c.Callbacks)
	}
	for i := 1; ; i++ {
		name = problemSchemaBase
		if i > 1 {
			name += strconv.Itoa(i)
		}
		if doc.Components != nil && sameSchema(doc.Components.Schemas[name], problemSchema(name)) {
			return name, false
		}
		if !taken[typeKey(name)] {
			return name, true
		}
	}
}

// addNames adds the typeKey of every name in m to taken.
func addNames[V any](taken map[string]bool, m map[string]V) {
	for name := range m {
		taken[typeKey(name)] = true
	}
}

// typeKey is name without case or punctuation.
func typeKey(name string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			return r
		case r >= 'A' && r <= 'Z':
			return r + 'a' - 'A'
		}
		return -1
	}, name)
}

// sameSchema reports whether s declares exactly want.
func sameSchema(s *openapi3.SchemaRef, want object) bool {
	if s == nil || s.Ref != "" || s.Value == nil {
		return false
	}
	got, err := json.Marshal(s.Value)
	if err != nil {
		return false
	}
	var a, b any
	if json.Unmarshal(got, &a) != nil {
		return false
	}
	wantJSON, err := json.Marshal(plain(want))
	if err != nil || json.Unmarshal(wantJSON, &b) != nil {
		return false
	}
	return reflect.DeepEqual(a, b)
}

// plain converts an object to maps and slices for encoding/json.
func plain(v any) any {
	switch v := v.(type) {
	case object:
		m := make(map[string]any, len(v))
		for _, e := range v {
			m[e.key] = plain(e.value)
		}
		return m
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = plain(e)
		}
		return out
	default:
		return v
	}
}
