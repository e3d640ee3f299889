package idem

import (
	"bytes"
	"crypto/sha256"
	"encoding"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
)

// StepTypeError is the error of a [Step] whose journaled result was
// journaled as a type of another JSON shape than the one it is read as
// (the step's result type changed between two deploys, or two Steps of
// one name in a run have different types). Nothing is decoded: a wrong
// shape would read as zero values with no error. The run fails with it;
// see its Error for what to do.
type StepTypeError struct {
	Step      string // the step's name (nested steps: the outer names first, joined by "/")
	Journaled string // the Go type the result was journaled as
	Want      string // the Go type it is read as
}

// Error implements error.
func (e *StepTypeError) Error() string {
	return fmt.Sprintf("idem: step %q was journaled as %s and is read as %s, another JSON shape: "+
		"its journaled result is not returned (it would decode into wrong or zero values) and the step is not run again (its effect happened). "+
		"The request fails until its step journal is forgotten (on Redis idemctl forget with its operation and key, which deletes the journal with the record; "+
		"on PostgreSQL delete the key's rows of the steps table) or expires; for requests to come, give the changed step a new name (e.g. %q) so that it never reads the old journal",
		e.Step, e.Journaled, e.Want, e.Step+"/v2")
}

// Is makes errors.Is(err, ErrStepType) true.
func (e *StepTypeError) Is(target error) bool { return target == ErrStepType }

// A journaled step's result is its JSON preceded by a header that says
// what it was journaled as:
//
//	"idem-step/1 " shape " " type "\n" json
//
// shape is 16 hex digits of a SHA-256 of the Go type's JSON shape
// (jsonShape), type the Go type's name as reflect prints it, for the
// error. A result journaled before there was a header is its JSON alone,
// which never begins with the header's "i" (JSON text begins with one of
// {["-0123456789tfn, and a result is always json.Marshal's output): it is
// read as before, decoded without a check.
const stepHeader = "idem-step/1 "

// maxStepTypeName bounds the type's name in a header.
const maxStepTypeName = 200

// stepType is the type identity of a step's result type.
type stepType struct {
	name   string // as reflect prints it, bounded
	shape  string // 16 hex digits
	header string // stepHeader shape " " name "\n"
}

var stepTypes sync.Map // reflect.Type to *stepType

// stepTypeOf returns the type identity of t, computed once per type.
func stepTypeOf(t reflect.Type) *stepType {
	if v, ok := stepTypes.Load(t); ok {
		return v.(*stepType)
	}
	name := "<nil>"
	if t != nil {
		name = strings.ReplaceAll(t.String(), "\n", " ")
	}
	if len(name) > maxStepTypeName {
		name = name[:maxStepTypeName-3] + "..."
	}
	sum := sha256.Sum256([]byte(jsonShape(t, map[reflect.Type]bool{})))
	st := &stepType{name: name, shape: hex.EncodeToString(sum[:8])}
	st.header = stepHeader + st.shape + " " + name + "\n"
	v, _ := stepTypes.LoadOrStore(t, st)
	return v.(*stepType)
}

// wrap returns the journal's form of a result of type st: header and JSON.
func (st *stepType) wrap(raw []byte) []byte {
	b := make([]byte, 0, len(st.header)+len(raw))
	return append(append(b, st.header...), raw...)
}

// unwrap returns the JSON of journaled entry b, read as type st: a
// *StepTypeError when b was journaled as a type of another shape. An
// entry without a header (journaled before there was one) is returned as
// it is.
func (st *stepType) unwrap(step string, b []byte) ([]byte, error) {
	if !bytes.HasPrefix(b, []byte(stepHeader)) {
		return b, nil
	}
	head, raw, ok := bytes.Cut(b[len(stepHeader):], []byte{'\n'})
	shape, name, ok2 := bytes.Cut(head, []byte{' '})
	if !ok || !ok2 {
		return nil, fmt.Errorf("idem: step %q: journaled result has a malformed header %q", step, head)
	}
	if string(shape) != st.shape {
		return nil, &StepTypeError{Step: step, Journaled: string(name), Want: st.name}
	}
	return raw, nil
}

var (
	jsonMarshaler   = reflect.TypeFor[json.Marshaler]()
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	textMarshaler   = reflect.TypeFor[encoding.TextMarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// custom reports whether t (or *t) encodes or decodes JSON its own way.
func custom(t reflect.Type) bool {
	for _, i := range []reflect.Type{jsonMarshaler, jsonUnmarshaler, textMarshaler, textUnmarshaler} {
		if t.Implements(i) || (t.Kind() != reflect.Pointer && reflect.PointerTo(t).Implements(i)) {
			return true
		}
	}
	return false
}

// jsonShape describes the JSON that encoding/json makes of a t and
// decodes into one: two types of one shape read each other's JSON
// faithfully; two of different shapes may not (a renamed field decodes as
// its zero value, a number does not decode into an object). It follows
// encoding/json's rules: exported fields by their JSON name (lower-cased,
// as decoding matches names without case), "-" left out, embedded structs
// flattened, ",string" noted; pointers as what they point to; a type that
// marshals itself by its full name (its JSON is its own).
func jsonShape(t reflect.Type, seen map[reflect.Type]bool) string {
	if t == nil {
		return "any"
	}
	if t.Kind() == reflect.Pointer {
		return jsonShape(t.Elem(), seen)
	}
	if custom(t) {
		if t.Name() == "" { // a struct with a promoted marshaler
			return "custom:" + t.String()
		}
		return "custom:" + t.PkgPath() + "." + t.Name()
	}
	switch t.Kind() {
	case reflect.Bool:
		return "bool"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return "int"
	case reflect.Float32, reflect.Float64:
		return "float"
	case reflect.String:
		return "string"
	case reflect.Interface:
		return "any"
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 && !custom(t.Elem()) {
			return "bytes"
		}
		return "[" + jsonShape(t.Elem(), seen) + "]"
	case reflect.Array:
		return fmt.Sprintf("[%d]%s", t.Len(), jsonShape(t.Elem(), seen))
	case reflect.Map:
		return "{" + jsonShape(t.Key(), seen) + ":" + jsonShape(t.Elem(), seen) + "}"
	case reflect.Struct:
		if seen[t] {
			return "recursive:" + t.PkgPath() + "." + t.Name()
		}
		seen[t] = true
		defer delete(seen, t)
		var fields []string
		structFields(t, seen, &fields)
		slices.Sort(fields)
		return "{" + strings.Join(fields, ",") + "}"
	}
	return t.Kind().String() // chan, func, complex: encoding/json refuses them
}

// structFields appends the fields t's JSON object has, as name:shape.
func structFields(t reflect.Type, seen map[reflect.Type]bool, fields *[]string) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		ft := f.Type
		if f.Anonymous && name == "" {
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct && !custom(ft) {
				if !seen[ft] { // promoted into the outer object, once
					seen[ft] = true
					structFields(ft, seen, fields)
					delete(seen, ft)
				}
				continue
			}
		}
		if !f.IsExported() && !f.Anonymous {
			continue
		}
		if !f.IsExported() && f.Anonymous && ft.Kind() != reflect.Struct {
			continue
		}
		if name == "" {
			name = f.Name
		}
		shape := jsonShape(f.Type, seen)
		if strings.Contains(","+opts+",", ",string,") {
			shape = "string(" + shape + ")"
		}
		*fields = append(*fields, strings.ToLower(name)+":"+shape)
	}
}
