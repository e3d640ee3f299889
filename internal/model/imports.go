package model

import (
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
// so that the generator and the runtime it is built with cannot disagree.
func (File) RuntimeVersion() int { return idem.GenVersion }

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
