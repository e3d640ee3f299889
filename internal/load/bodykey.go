package load

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/oapi-codegen/oapi-codegen/v2/pkg/util"

	"github.com/idemgen/idemgen/internal/extension"
	"github.com/idemgen/idemgen/internal/model"
)

// checkBodyKeySchema resolves a body key's JSON Pointer against the schema
// of every JSON (or form) request body of op (refs followed, allOf merged): a member
// the schema says cannot be there, or one that is not a string, is an
// error, as every request would be refused 400 invalid-key at run time.
// Where the schema cannot tell (a free-form object, an untyped member, a
// oneOf), the pointer is accepted.
func checkBodyKeySchema(op *openapi3.Operation, pointer string) error {
	return checkKeySchema(op, pointer, "key.body", false)
}

// checkKeySchema is checkBodyKeySchema for the pointer of field, which may
// name a number too when number is set (a part of a composite key).
func checkKeySchema(op *openapi3.Operation, pointer, field string, number bool) error {
	if pointer == "" || op == nil || op.RequestBody == nil || op.RequestBody.Value == nil {
		return nil
	}
	content := op.RequestBody.Value.Content
	for _, ct := range slices.Sorted(maps.Keys(content)) {
		mt := content[ct]
		if mt == nil || mt.Schema == nil || (!util.IsMediaTypeJson(ct) && ct != model.FormContentType) {
			continue
		}
		if msg := resolvePointer(mt.Schema, pointer, number); msg != "" {
			return &extension.Error{Field: field, Msg: fmt.Sprintf("%s in the %s body: %s", strconv.Quote(pointer), ct, msg)}
		}
	}
	return nil
}

// resolvePointer follows pointer (already checked to be a JSON Pointer)
// through s and says why the member it names cannot be a string key, or "".
func resolvePointer(s *openapi3.SchemaRef, pointer string, number bool) string {
	path := ""
	for _, tok := range strings.Split(pointer, "/")[1:] {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		next, why := schemaMember(s, tok)
		if why != "" {
			where := "the body"
			if path != "" {
				where = strconv.Quote(path)
			}
			return where + " " + why
		}
		if next == nil {
			return "" // the schema cannot tell
		}
		path += "/" + strings.ReplaceAll(strings.ReplaceAll(tok, "~", "~0"), "/", "~1")
		s = next
	}
	if t := typeOf(s); number && (t == openapi3.TypeNumber || t == openapi3.TypeInteger) {
		return ""
	} else if number && t != "" && t != openapi3.TypeString {
		return fmt.Sprintf("the member is %s %s: a part of a composite key must be a string or a number", article(t), t)
	} else if t != "" && t != openapi3.TypeString {
		return fmt.Sprintf("the member is %s %s, not a string: a key must be a string; point at a string member or use key.header", article(t), t)
	}
	return ""
}

// schemaMember returns the schema of s's member name, nil when the schema
// cannot tell, or why s can have no such string-holding member.
func schemaMember(s *openapi3.SchemaRef, name string) (*openapi3.SchemaRef, string) {
	if s == nil || s.Value == nil {
		return nil, ""
	}
	v := s.Value
	if len(v.OneOf) > 0 || len(v.AnyOf) > 0 || v.Not != nil {
		return nil, "" // which branch applies is the request's business
	}
	if _, err := strconv.ParseUint(name, 10, 31); err == nil && typeOf(s) == openapi3.TypeArray {
		return v.Items, ""
	}
	if t := typeOf(s); t != "" && t != openapi3.TypeObject {
		return nil, fmt.Sprintf("is %s %s: it has no member %s", article(t), t, strconv.Quote(name))
	}
	if p, ok := v.Properties[name]; ok {
		return p, ""
	}
	closed := true // every part lists its members
	for _, part := range v.AllOf {
		p, why := schemaMember(part, name)
		switch {
		case p != nil:
			return p, ""
		case why == "":
			closed = false
		}
	}
	if ap := v.AdditionalProperties; ap.Schema != nil {
		return ap.Schema, ""
	} else if ap.Has != nil && *ap.Has {
		return nil, ""
	}
	if !closed || (len(v.Properties) == 0 && len(v.AllOf) == 0) {
		return nil, "" // free-form
	}
	names := slices.Sorted(maps.Keys(v.Properties))
	for _, part := range v.AllOf {
		if part.Value != nil {
			names = append(names, slices.Sorted(maps.Keys(part.Value.Properties))...)
		}
	}
	return nil, fmt.Sprintf("has no member %s (its members: %s)", strconv.Quote(name), strings.Join(names, ", "))
}

// typeOf is the one type s declares (null aside), or "" when it declares
// none or several.
func typeOf(s *openapi3.SchemaRef) string {
	if s == nil || s.Value == nil || s.Value.Type == nil {
		return ""
	}
	var types []string
	for _, t := range s.Value.Type.Slice() {
		if t != openapi3.TypeNull {
			types = append(types, t)
		}
	}
	if len(types) != 1 {
		return ""
	}
	return types[0]
}

func article(t string) string {
	if strings.ContainsRune("aeiou", rune(t[0])) {
		return "an"
	}
	return "a"
}
