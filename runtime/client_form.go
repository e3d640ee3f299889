package idem

import (
	"fmt"
	"net/url"
	"reflect"
	"strings"

	"github.com/idemgen/idemgen/runtime/internal/canonjson"
)

// MarshalForm encodes body, a typed application/x-www-form-urlencoded body
// as oapi-codegen declares it (a struct with form or json tags), once, for
// every attempt to send: the call's form counterpart of MarshalBody. It
// writes what oapi-codegen's runtime.MarshalForm writes (top-level
// omitempty fields left out when zero, a[0] for slices, a[b] for nested
// objects, fmt.Sprint for values), and a[key] for maps and additional
// properties, which runtime.MarshalForm writes as Go syntax (metadata=
// map[order:42]) where form APIs such as Stripe's expect metadata[order]=42.
//
// For a body-key operation, whose KeyPointer then names a form field
// (/field), it sets that field to the call's key when it is missing or
// empty, and adopts the form's key as the call's key when it is set.
func (c *Call) MarshalForm(body any) ([]byte, error) {
	v := reflect.ValueOf(body)
	for v.Kind() == reflect.Pointer && !v.IsNil() {
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return nil, fmt.Errorf("idem: %s: a form body must be a struct, not %T", c.op.ID, body)
	}
	form := url.Values{}
	appendFormFields(form, v, "")
	if err := c.fillFormKey(form); err != nil {
		return nil, err
	}
	out := []byte(form.Encode())
	if c.op.KeyPointer != "" {
		c.placedKey(out)
	}
	return out, nil
}

// formTag is a field's form tag, or its json tag, as runtime.MarshalForm
// reads them.
func formTag(f reflect.StructField) string {
	if tag, ok := f.Tag.Lookup("form"); ok && tag != "" {
		return tag
	}
	return f.Tag.Get("json")
}

// appendForm adds v under name: nested fields, elements and map entries as
// name[field], name[i] and name[key].
func appendForm(form url.Values, v reflect.Value, name string) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			appendForm(form, v.Elem(), name)
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			appendForm(form, v.Index(i), fmt.Sprintf("%s[%d]", name, i))
		}
	case reflect.Map:
		appendFormMap(form, v, name+"[%s]")
	case reflect.Struct:
		appendFormFields(form, v, name)
	default:
		form.Add(name, fmt.Sprint(v.Interface()))
	}
}

// appendFormFields adds the fields of the struct v: at the top (name "")
// each under its tag, its omitempty fields left out when zero; nested, each
// under name[tag], as runtime.MarshalForm does.
func appendFormFields(form url.Values, v reflect.Value, name string) {
	field, entry := func(tag string) string { return name + "[" + tag + "]" }, name+"[%s]"
	if name == "" {
		field, entry = func(tag string) string { return tag }, "%s"
	}
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		tag, opts, _ := strings.Cut(formTag(f), ",")
		switch {
		case f.Name == "AdditionalProperties" && tag == "-" && v.Field(i).Kind() == reflect.Map:
			appendFormMap(form, v.Field(i), entry)
		case !f.IsExported() || tag == "-" || tag == "":
		case name == "" && strings.Contains(opts, "omitempty") && v.Field(i).IsZero():
		default:
			appendForm(form, v.Field(i), field(tag))
		}
	}
}

// appendFormMap adds the entries of the map m, each under format with its
// key.
func appendFormMap(form url.Values, m reflect.Value, format string) {
	for it := m.MapRange(); it.Next(); {
		appendForm(form, it.Value(), fmt.Sprintf(format, fmt.Sprint(it.Key().Interface())))
	}
}

// fillFormKey puts the call's key into the form field of a body-key
// operation, or adopts the key already there (see MarshalForm).
func (c *Call) fillFormKey(form url.Values) error {
	if c.op.KeyPointer == "" {
		return nil
	}
	ptr, err := canonjson.ParsePointer(c.op.KeyPointer)
	if err != nil || len(ptr) != 1 {
		return fmt.Errorf("%w: a form field is named by a pointer of one member, such as /idempotency_key (operation %s, pointer %s)", ErrBodyKey, c.op.ID, c.op.KeyPointer)
	}
	field := ptr[0].Name
	switch existing := form.Get(field); existing {
	case "":
		form.Set(field, c.key)
	case c.key:
	default:
		return c.adoptKey(existing, "form field "+field, "in the form field "+field)
	}
	return nil
}
