package model

import (
	"cmp"
	"maps"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/idemgen/idemgen/runtime/idemop"
)

// The import paths of the runtime's packages that generated code calls:
// the engine and the client (package idem), the operation's description
// (idemop), the store contract (idemstore) and the plumbing only generated
// code calls (idemgen).
const (
	RuntimeImport = "github.com/idemgen/idemgen/runtime"
	OpImport      = RuntimeImport + "/idemop"
	StoreImport   = RuntimeImport + "/idemstore"
	GenImport     = RuntimeImport + "/idemgen"
)

// RuntimeVersion is the version of the runtime's API for generated code
// that generated files check at compile time: the runtime's own constant,
// so that the generator and the runtime it is built with cannot disagree.
// Every file states it while the runtime supports only it; once a version
// is added, a file that uses nothing it adds states the one before, so
// that it does not change.
func (f File) RuntimeVersion() int { return idemop.MaxVersion }

// HasPolicy reports whether an operation of f has a storage policy other
// than the runtime's default (x-idempotent final or transient).
func (f File) HasPolicy() bool {
	for _, op := range f.Operations {
		if op.Final != nil || op.Transient != nil {
			return true
		}
	}
	return false
}

// Imports returns the import specs the file needs, standard library first,
// each group sorted by path, with an empty string between groups.
func (f File) Imports() []string {
	std, other := f.stdImports(), f.runtimeImports()
	for name, p := range f.Names.Aliases {
		if strings.HasPrefix(p, RuntimeImport) {
			other = append(other, name+" "+strconv.Quote(p))
		} else {
			std = append(std, name+" "+strconv.Quote(p))
		}
	}
	typeStd, typeOther := f.typeImports()
	std, other = append(std, typeStd...), append(other, typeOther...)
	byPath := func(a, b string) int {
		return cmp.Or(strings.Compare(importPath(a), importPath(b)), strings.Compare(a, b))
	}
	slices.SortFunc(std, byPath)
	slices.SortFunc(other, byPath)
	return append(append(slices.Compact(std), ""), slices.Compact(other)...)
}

// stdImports are the standard library packages the generated code calls,
// as import specs, in no order.
func (f File) stdImports() []string {
	need := map[string]bool{}
	for path, used := range map[string]bool{
		"net/http": f.NetHTTPServer() || f.Strict || (f.FrameworkStrict && f.Facts().Strict == StrictWriter) || f.Client ||
			f.Initiators || (f.Receivers && f.Framework == NetHTTP),
		"context": f.Strict || f.Client || f.Initiators,
		"bytes":   f.Initiators || f.Client && slices.ContainsFunc(f.Operations, Operation.HasBody),
		"errors":  f.NetHTTPServer() && len(f.KeyParamNames()) > 0,
		"time":    len(f.Operations) > 0 && (f.Server || f.AnyStrict() || f.Client) || f.HasEvents(),
		"fmt":     len(f.Operations) > 0 && f.AnyStrict(),
		"io":      f.Client && slices.ContainsFunc(f.Operations, Operation.sendsReader),
	} {
		if used {
			need[strconv.Quote(path)] = true
		}
	}
	for _, path := range f.ogenImports() {
		need[strconv.Quote(path)] = true
	}
	return slices.Collect(maps.Keys(need))
}

// sendsReader reports whether the operation's client helper takes its
// body as an io.Reader.
func (o Operation) sendsReader() bool { return o.HasBody() && o.ClientBodyKind() == ClientBodyReader }

// runtimeImports are the runtime's packages the generated code calls: idem,
// idemop (every file's version guard), idemstore and idemgen, and a
// framework's own package and its adapter.
func (f File) runtimeImports() []string {
	other := []string{strconv.Quote(OpImport)}
	engine := f.Server || f.AnyStrict() || f.Receivers || f.OgenServer || f.OgenWebhooks != nil
	if engine || f.Client || f.Initiators || f.OgenClient {
		other = append(other, "idem "+strconv.Quote(RuntimeImport))
	}
	if engine {
		other = append(other, strconv.Quote(StoreImport))
	}
	if engine || f.Client && len(f.Operations) > 0 || f.OgenClient || f.Initiators {
		other = append(other, strconv.Quote(GenImport))
	}
	if f.FrameworkServer() || f.FrameworkStrict || (f.Receivers && f.Framework != NetHTTP) {
		fw := f.Facts()
		other = append(other, strconv.Quote(fw.Import), strconv.Quote(fw.AdapterImport()))
	}
	return other
}

// typeImports are the packages of oapi-codegen's Go types that the
// generated signatures name (path parameters such as openapi_types.UUID),
// split into the standard library's and the others.
func (f File) typeImports() (std, other []string) {
	if !f.Server && !f.AnyStrict() && !f.Client {
		return nil, nil
	}
	for name, p := range f.TypeImports {
		spec := strconv.Quote(p)
		if name != path.Base(p) {
			spec = name + " " + spec
		}
		if first, _, _ := strings.Cut(p, "/"); !strings.Contains(first, ".") {
			std = append(std, spec)
		} else {
			other = append(other, spec)
		}
	}
	return std, other
}

// importPath is the quoted path of an import spec.
func importPath(spec string) string {
	_, p, ok := strings.Cut(spec, " ")
	if !ok {
		return spec
	}
	return p
}
