package model

import (
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// RuntimeImport is the import path of the runtime package (package idem).
const RuntimeImport = "github.com/idemgen/idemgen/runtime"

// Imports returns the import specs the file needs, standard library first,
// each group sorted, with an empty string between groups.
func (f File) Imports() []string {
	need := map[string]bool{}
	if f.Server || f.Strict || f.Client {
		need["net/http"] = true
	}
	if f.Strict || f.Client {
		need["context"] = true
	}
	if len(f.Operations) > 0 && (f.Server || f.Strict || f.Client) {
		need["time"] = true
	}
	for _, op := range f.Operations {
		if f.Strict {
			need["fmt"] = true
		}
		if f.Client && op.HasBody() {
			need["bytes"] = true
			if op.ClientBodyKind() == ClientBodyReader {
				need["io"] = true
			}
		}
	}
	other := []string{"idem " + strconv.Quote(RuntimeImport)}
	for name, p := range f.TypeImports {
		if !f.Server && !f.Strict && !f.Client {
			break
		}
		spec := strconv.Quote(p)
		if name != path.Base(p) {
			spec = name + " " + spec
		}
		if first, _, _ := strings.Cut(p, "/"); !strings.Contains(first, ".") {
			need[p] = true
		} else {
			other = append(other, spec)
		}
	}
	std := make([]string, 0, len(need))
	for p := range need {
		std = append(std, strconv.Quote(p))
	}
	slices.Sort(std)
	slices.SortFunc(other, func(a, b string) int { return strings.Compare(importPath(a), importPath(b)) })
	return append(append(std, ""), slices.Compact(other)...)
}

// importPath is the quoted path of an import spec.
func importPath(spec string) string {
	_, p, ok := strings.Cut(spec, " ")
	if !ok {
		return spec
	}
	return p
}

// Receiver is the receiver name of generated methods: "s", or another name
// when a path parameter is called s.
func (f File) Receiver() string {
	for _, name := range []string{"s", "srv", "server", "decorator"} {
		if !f.paramNamed(name) {
			return name
		}
	}
	return "idempotentServerReceiver"
}

func (f File) paramNamed(name string) bool {
	for _, op := range f.Operations {
		for _, p := range op.PathParams {
			if p.Name == name {
				return true
			}
		}
	}
	return false
}

// ReservedNames are the identifiers generated methods use beside the path
// parameters; a path parameter with one of these Go names is an error.
func ReservedNames() []string {
	return []string{"body", "buf", "c", "call", "contentType", "ctx", "engine", "err", "f", "key", "obj", "opts", "out", "p", "params", "r", "req", "request", "resp", "w"}
}

// unexported returns name with its first letter in lower case.
func unexported(name string) string {
	r, n := utf8.DecodeRuneInString(name)
	return string(unicode.ToLower(r)) + name[n:]
}

// OpVar is the package-level idem.Operation of the server wrappers.
func (o Operation) OpVar() string { return unexported(o.GoName) + "IdempotencyOp" }

// ClientOpVar is the package-level idem.ClientOperation of the client helper.
func (o Operation) ClientOpVar() string { return unexported(o.GoName) + "IdempotencyClientOp" }

// StrictFunc is the function that wraps the operation's strict handler.
func (o Operation) StrictFunc() string { return unexported(o.GoName) + "IdempotencyStrict" }

// Route is "METHOD /path".
func (o Operation) Route() string { return o.Method + " " + o.Path }

// Sentence is the summary as a sentence ending in a period, or "".
func (o Operation) Sentence() string {
	s := strings.Join(strings.Fields(o.Summary), " ")
	if s == "" || strings.HasSuffix(s, ".") {
		return s
	}
	return s + "."
}

// Name is the operation as the spec calls it: its operationId, or its route.
func (o Operation) Name() string {
	if o.SpecID != "" {
		return o.SpecID
	}
	return o.Route()
}

// KeyParamNote explains, for an operation whose spec declares the key
// header as a required parameter, that oapi-codegen's generated wrapper
// rejects a request without it (400, its own plain-text error) before the
// idempotency layer runs; "" otherwise.
func (o Operation) KeyParamNote() string {
	if o.KeyParam == nil || !o.KeyParam.Required {
		return ""
	}
	return "The spec declares " + o.KeyParam.Name + " a required parameter, so oapi-codegen's wrapper answers 400 to a request without it before the idempotency layer runs."
}

// ServerParams is the parameter list of the ServerInterface method after
// (w, r), starting with ", ".
func (o Operation) ServerParams() string {
	var b strings.Builder
	for _, p := range o.PathParams {
		fmt.Fprintf(&b, ", %s %s", p.Name, p.Type)
	}
	if o.HasParams {
		fmt.Fprintf(&b, ", params %sParams", o.GoName)
	}
	return b.String()
}

// ServerArgs is the argument list matching ServerParams.
func (o Operation) ServerArgs() string {
	var b strings.Builder
	for _, p := range o.PathParams {
		b.WriteString(", " + p.Name)
	}
	if o.HasParams {
		b.WriteString(", params")
	}
	return b.String()
}

// HasBody reports whether the operation takes a request body.
func (o Operation) HasBody() bool { return len(o.Bodies) > 0 }

// Duration renders d as a Go expression of package time.
func Duration(d time.Duration) string {
	units := []struct {
		d    time.Duration
		name string
	}{
		{time.Hour, "time.Hour"},
		{time.Minute, "time.Minute"},
		{time.Second, "time.Second"},
		{time.Millisecond, "time.Millisecond"},
		{time.Microsecond, "time.Microsecond"},
	}
	if d == 0 {
		return "0"
	}
	for _, u := range units {
		if d%u.d == 0 {
			if d == u.d {
				return u.name
			}
			return strconv.FormatInt(int64(d/u.d), 10) + " * " + u.name
		}
	}
	return strconv.FormatInt(int64(d), 10) + " * time.Nanosecond"
}

// Ints renders a list of ints as a Go slice literal.
func Ints(list []int) string {
	parts := make([]string, len(list))
	for i, n := range list {
		parts[i] = strconv.Itoa(n)
	}
	return "[]int{" + strings.Join(parts, ", ") + "}"
}

// Strings renders a list of strings as a Go slice literal.
func Strings(list []string) string {
	parts := make([]string, len(list))
	for i, s := range list {
		parts[i] = strconv.Quote(s)
	}
	return "[]string{" + strings.Join(parts, ", ") + "}"
}

// Float renders f as a Go float literal.
func Float(f float64) string {
	s := strconv.FormatFloat(f, 'g', -1, 64)
	if !strings.ContainsAny(s, ".e") {
		s += ".0"
	}
	return s
}

func quote(s string) string { return strconv.Quote(s) }
