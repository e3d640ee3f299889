package model

import (
	"cmp"
	"maps"
	"path"
	"slices"
	"strconv"
	"strings"

	idem "github.com/idemgen/idemgen/runtime"
)

// RuntimeImport is the import path of the runtime package (package idem).
const RuntimeImport = "github.com/idemgen/idemgen/runtime"

// RuntimeVersion is the version of the runtime's API for generated code
// that generated files check at compile time: the runtime's own constant,
// so that the generator and the runtime it is built with cannot disagree,
// for a file with a client helper or webhook initiator (version 5 added
// idem.ClientOperation's Lock, which they set); 4 for a file that uses
// what version 4 added (the receivers of webhooks and callbacks set
// idem.Operation's Provider; a storage policy sets its Final and
// Transient); 3 for one that uses neither, so that such files did not
// change when versions 4 and 5 came.
func (f File) RuntimeVersion() int {
	switch {
	case f.Client || f.Initiators:
		return idem.MaxVersion
	case f.HasEvents() || f.HasPolicy():
		return eventsVersion
	}
	return pathsVersion
}

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

// pathsVersion is the version a server file without webhooks, callbacks
// or a storage policy is generated for; eventsVersion one with them and
// without a client.
const (
	pathsVersion  = 3
	eventsVersion = 4
)

// Imports returns the import specs the file needs, standard library first,
// each group sorted by path, with an empty string between groups.
func (f File) Imports() []string {
	need := map[string]bool{} // standard library import specs
	add := func(path string) { need[strconv.Quote(path)] = true }
	if f.NetHTTPServer() || f.Strict || (f.FrameworkStrict && f.Facts().Strict == StrictWriter) || f.Client ||
		f.Initiators || (f.Receivers && f.Framework == NetHTTP) {
		add("net/http")
	}
	if f.Strict || f.Client || f.Initiators {
		add("context")
	}
	if f.Initiators {
		add("bytes")
	}
	if f.NetHTTPServer() && len(f.KeyParamNames()) > 0 {
		add("errors")
	}
	if len(f.Operations) > 0 && (f.Server || f.AnyStrict() || f.Client) || f.HasEvents() {
		add("time")
	}
	for _, op := range f.Operations {
		if f.AnyStrict() {
			add("fmt")
		}
		if f.Client && op.HasBody() {
			add("bytes")
			if op.ClientBodyKind() == ClientBodyReader {
				add("io")
			}
		}
	}
	for name, p := range f.Names.Aliases {
		need[name+" "+strconv.Quote(p)] = true
	}
	other := []string{"idem " + strconv.Quote(RuntimeImport)}
	if f.FrameworkServer() || f.FrameworkStrict || (f.Receivers && f.Framework != NetHTTP) {
		fw := f.Facts()
		other = append(other, strconv.Quote(fw.Import), strconv.Quote(fw.AdapterImport()))
	}
	for name, p := range f.TypeImports {
		if !f.Server && !f.AnyStrict() && !f.Client {
			break
		}
		spec := strconv.Quote(p)
		if name != path.Base(p) {
			spec = name + " " + spec
		}
		if first, _, _ := strings.Cut(p, "/"); !strings.Contains(first, ".") {
			need[spec] = true
		} else {
			other = append(other, spec)
		}
	}
	std := slices.Collect(maps.Keys(need))
	byPath := func(a, b string) int {
		return cmp.Or(strings.Compare(importPath(a), importPath(b)), strings.Compare(a, b))
	}
	slices.SortFunc(std, byPath)
	slices.SortFunc(other, byPath)
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
