package idem

import (
	"bytes"
	"encoding/json"
	"github.com/idemgen/idemgen/runtime/internal/canonjson"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// lookupDecoded returns the value at ptr in a document decoded by
// decodeJSON: the reference for what canonjson.Walk locates.
func lookupDecoded(doc any, ptr canonjson.Pointer) (any, bool) {
	for _, t := range ptr {
		switch v := doc.(type) {
		case map[string]any:
			m, ok := v[t.Name]
			if !ok {
				return nil, false
			}
			doc = m
		case []any:
			if t.Index < 0 || t.Index >= len(v) {
				return nil, false
			}
			doc = v[t.Index]
		default:
			return nil, false
		}
	}
	return doc, true
}

// TestWalkJSONLocate: the walk locates the value at a pointer and its
// parent as a decoder sees them, the last of duplicate members winning.
func TestWalkJSONLocate(t *testing.T) {
	const doc = `{"a":{"b":[1,{"c":"x"}]},"k/e":"v"}`
	for _, tc := range []struct {
		doc, ptr, value, parent string // "" for none
	}{
		{doc, "/a/b/1/c", `"x"`, `{"c":"x"}`},
		{doc, "/k~1e", `"v"`, doc},
		{doc, "", doc, ""},
		{doc, "/x", "", doc},
		{doc, "/a/b/2", "", `[1,{"c":"x"}]`},
		{doc, "/a/b/01", "", `[1,{"c":"x"}]`},
		{doc, "/a/b/-", "", `[1,{"c":"x"}]`},
		{doc, "/a/b/+1", "", `[1,{"c":"x"}]`},
		{doc, "/a/b/1/c/d", "", `"x"`},
		{doc, "/a/b/1/c/d/e", "", ""},
		{` { "k" : "v" } `, "/k", `"v"`, `{ "k" : "v" }`},
		{`{"":{"":1}}`, "//", `1`, `{"":1}`},
		{`{"\u006b":1}`, "/k", `1`, `{"\u006b":1}`},
		{`{"k":"1","k":"2"}`, "/k", `"2"`, `{"k":"1","k":"2"}`},
		{`{"k":"1","k":null}`, "/k", `null`, `{"k":"1","k":null}`},
		{`{"a":{"k":"1"},"a":{}}`, "/a/k", "", `{}`},
		{`{"a":{"k":"1"},"a":5}`, "/a/k", "", `5`},
		{`{"a":{"k":"1"},"b":{"k":"3"},"a":{"k" : "2"}}`, "/a/k", `"2"`, `{"k" : "2"}`},
		{`{"a":[{"k":1}],"a":[]}`, "/a/0/k", "", ""},
		{`{"a":[{"k":1}],"b":{"a":[{"k":2}]}}`, "/a/0/k", `1`, `{"k":1}`},
		{`[{"k":1},{"k":2}]`, "/1/k", `2`, `{"k":2}`},
	} {
		ptr, err := canonjson.ParsePointer(tc.ptr)
		if err != nil {
			t.Fatal(err)
		}
		_, at, ok := canonjson.Walk(nil, []byte(tc.doc), []canonjson.Pointer{ptr}, 0)
		if !ok {
			t.Fatalf("%s is not JSON", tc.doc)
		}
		raw := []byte(tc.doc)
		if v, p := string(at.Value.In(raw)), string(at.Parent.In(raw)); v != tc.value || p != tc.parent {
			t.Errorf("locate %s in %s: value %q, parent %q; want %q, %q", tc.ptr, tc.doc, v, p, tc.value, tc.parent)
		}
		checkLocated(t, raw, ptr, at)
	}
}

// checkLocated checks what canonjson.Walk located against the decoded document.
func checkLocated(t *testing.T, raw []byte, ptr canonjson.Pointer, at canonjson.Located) {
	t.Helper()
	doc, err := decodeJSON(raw)
	if err != nil {
		t.Fatal(err)
	}
	spans := []canonjson.Span{at.Value}
	ptrs := []canonjson.Pointer{ptr}
	if len(ptr) > 0 {
		spans = append(spans, at.Parent)
		ptrs = append(ptrs, ptr[:len(ptr)-1])
	}
	for i, s := range spans {
		want, found := lookupDecoded(doc, ptrs[i])
		if s.Found() != found {
			t.Fatalf("%v in %q: located %v, decoded %v", ptrs[i], raw, s.Found(), found)
		}
		if !found {
			continue
		}
		got, err := decodeJSON(s.In(raw))
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("%v in %q: canonjson.Located %q, decoded %#v", ptrs[i], raw, s.In(raw), want)
		}
	}
}

// rawPointers returns the pointers of the values in raw, a JSON document,
// in the order they start, each once (at most max): those inside duplicate
// members too, which a decoded document no longer holds.
func rawPointers(raw []byte, max int) []string {
	esc := strings.NewReplacer("~", "~0", "/", "~1")
	dec := json.NewDecoder(bytes.NewReader(raw))
	seen := map[string]bool{}
	var ptrs []string
	var walk func(path string) bool // false once raw does not decode
	walk = func(path string) bool {
		if !seen[path] && len(ptrs) < max {
			seen[path] = true
			ptrs = append(ptrs, path)
		}
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		if tok != json.Delim('{') && tok != json.Delim('[') {
			return true
		}
		for i := 0; dec.More(); i++ {
			elem := strconv.Itoa(i)
			if tok == json.Delim('{') {
				name, err := dec.Token()
				if err != nil {
					return false
				}
				elem = esc.Replace(name.(string))
			}
			if !walk(path + "/" + elem) {
				return false
			}
		}
		_, err = dec.Token()
		return err == nil
	}
	walk("")
	return ptrs
}
