// Package form encodes a typed application/x-www-form-urlencoded body as
// oapi-codegen declares it (a struct with form or json tags), for the
// client's MarshalForm.
package form

import (
	"fmt"
	"net/url"
	"reflect"
	"strings"
)

// Values returns the form of body, a struct or a pointer to one, as
// oapi-codegen's runtime.MarshalForm writes it (top-level omitempty fields
// left out when zero, a[0] for slices, a[b] for nested objects, fmt.Sprint
// for values), with a[key] for maps and additional properties, which
// runtime.MarshalForm writes as Go syntax (metadata=map[order:42]) where
// form APIs such as Stripe's expect metadata[order]=42. ok is false when
// body is not a struct.
func Values(body any) (form url.Values, ok bool) {
	v := reflect.ValueOf(body)
	for v.Kind() == reflect.Pointer && !v.IsNil() {
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return nil, false
	}
	form = url.Values{}
	appendFields(form, v, "")
	return form, true
}

// fieldTag is a field's form tag, or its json tag, as runtime.MarshalForm
// reads them.
func fieldTag(f reflect.StructField) string {
	if tag, ok := f.Tag.Lookup("form"); ok && tag != "" {
		return tag
	}
	return f.Tag.Get("json")
}

// appendValue adds v under name: nested fields, elements and map entries as
// name[field], name[i] and name[key].
func appendValue(form url.Values, v reflect.Value, name string) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			appendValue(form, v.Elem(), name)
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			appendValue(form, v.Index(i), fmt.Sprintf("%s[%d]", name, i))
		}
	case reflect.Map:
		appendMap(form, v, name+"[%s]")
	case reflect.Struct:
		appendFields(form, v, name)
	default:
		form.Add(name, fmt.Sprint(v.Interface()))
	}
}

// appendFields adds the fields of the struct v: at the top (name "")
// each under its tag, its omitempty fields left out when zero; nested, each
// under name[tag], as runtime.MarshalForm does.
func appendFields(form url.Values, v reflect.Value, name string) {
	field, entry := func(tag string) string { return name + "[" + tag + "]" }, name+"[%s]"
	if name == "" {
		field, entry = func(tag string) string { return tag }, "%s"
	}
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		tag, opts, _ := strings.Cut(fieldTag(f), ",")
		switch {
		case f.Name == "AdditionalProperties" && tag == "-" && v.Field(i).Kind() == reflect.Map:
			appendMap(form, v.Field(i), entry)
		case !f.IsExported() || tag == "-" || tag == "":
		case name == "" && strings.Contains(opts, "omitempty") && v.Field(i).IsZero():
		default:
			appendValue(form, v.Field(i), field(tag))
		}
	}
}

// appendMap adds the entries of the map m, each under format with its
// key.
func appendMap(form url.Values, m reflect.Value, format string) {
	for it := m.MapRange(); it.Next(); {
		appendValue(form, it.Value(), fmt.Sprintf(format, fmt.Sprint(it.Key().Interface())))
	}
}
