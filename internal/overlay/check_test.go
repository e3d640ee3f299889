package overlay

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
)

// checkPreserved checks that everything orig declares is in got, unchanged:
// got may only add members to objects, append to arrays and extend
// descriptions at their end.
func checkPreserved(t *testing.T, orig, got *openapi3.T) {
	t.Helper()
	var a, b any
	if err := json.Unmarshal(marshal(t, orig), &a); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(marshal(t, got), &b); err != nil {
		t.Fatal(err)
	}
	for _, problem := range contains("", a, b) {
		t.Errorf("overwritten: %s", problem)
	}
}

// contains lists where got does not contain orig.
func contains(at string, orig, got any) []string {
	switch o := orig.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return []string{at + ": no longer an object"}
		}
		var out []string
		for k, v := range o {
			out = append(out, contains(at+"/"+k, v, g[k])...)
		}
		return out
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) < len(o) {
			return []string{at + ": array lost items"}
		}
		var out []string
		for i, v := range o {
			out = append(out, contains(fmt.Sprintf("%s/%d", at, i), v, g[i])...)
		}
		return out
	case string:
		g, _ := got.(string)
		if g == o || strings.HasSuffix(at, "/description") && strings.HasPrefix(g, o) {
			return nil
		}
		return []string{fmt.Sprintf("%s: %q became %q", at, o, g)}
	default:
		if !reflect.DeepEqual(orig, got) {
			return []string{fmt.Sprintf("%s: %v became %v", at, orig, got)}
		}
		return nil
	}
}

// checkAdded checks that each operation of ops in got declares its key
// header, the idempotency responses and Idempotent-Replayed exactly once.
func checkAdded(t *testing.T, orig, got *openapi3.T, ops []Operation, gc goldenCase) {
	t.Helper()
	for _, op := range ops {
		method := strings.ToUpper(op.Method)
		name := method + " " + op.Path
		item := got.Paths.Value(op.Path)
		oper := item.GetOperation(method)
		origOper := orig.Paths.Value(op.Path).GetOperation(method)

		if op.KeyPointer == "" {
			header := op.KeyHeader
			if header == "" {
				header = defaultKeyHeader
			}
			var n int
			for _, p := range slices.Concat(item.Parameters, oper.Parameters) {
				if v := parameterValue(got, p); v != nil && v.In == "header" && strings.EqualFold(v.Name, header) {
					n++
				}
			}
			if n != 1 {
				t.Errorf("%s: %d %s header parameters, want 1", name, n, header)
			}
		}

		for _, r := range errorResponses(op) {
			resp := oper.Responses.Value(r.status)
			if resp == nil || resp.Value == nil {
				t.Errorf("%s: no response %s", name, r.status)
				continue
			}
			if origOper.Responses != nil && origOper.Responses.Value(r.status) != nil {
				continue // the operation's own, checked by checkPreserved
			}
			mt := resp.Value.Content.Get(problemMediaType)
			if mt == nil || mt.Schema == nil || mt.Schema.Ref != "#/components/schemas/"+gc.schema {
				t.Errorf("%s: response %s has no %s body of %s", name, r.status, problemMediaType, gc.schema)
			}
			want := 0
			if r.retryAfter {
				want = 1
			}
			if n := countHeaders(resp.Value.Headers, retryAfterHeader); n != want {
				t.Errorf("%s: response %s declares %s %d times, want %d", name, r.status, retryAfterHeader, n, want)
			}
		}

		for status, resp := range oper.Responses.Map() {
			if !op.replayable(status) || origOper.Responses == nil || origOper.Responses.Value(status) == nil {
				continue
			}
			want := 1
			if slices.Contains(gc.noReplayed, name+" "+status) {
				want = 0
			}
			if n := countHeaders(resp.Value.Headers, replayedHeader); n != want {
				t.Errorf("%s: response %s declares %s %d times, want %d", name, status, replayedHeader, n, want)
			}
		}

		if n := strings.Count(oper.Description, "Idempotency: "); n != 1 {
			t.Errorf("%s: the description has %d idempotency paragraphs, want 1:\n%s", name, n, oper.Description)
		}
	}
	if s := got.Components.Schemas[gc.schema]; s == nil || !sameSchema(s, problemSchema(gc.schema)) {
		t.Errorf("components/schemas/%s is not the problem schema", gc.schema)
	}
}

func countHeaders(headers openapi3.Headers, name string) int {
	var n int
	for h := range headers {
		if strings.EqualFold(h, name) {
			n++
		}
	}
	return n
}
