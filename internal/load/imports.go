package load

import (
	"fmt"
	"maps"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/oapi-codegen/oapi-codegen/v2/pkg/codegen"
)

// knownImports returns the import paths of the package names that
// oapi-codegen's output may use in Go types: the fixed ones of its imports
// template, the config's additional-imports and import-mapping (numbered as
// oapi-codegen numbers them), and x-go-type-import extensions.
func knownImports(cfg codegen.Configuration, defs []codegen.OperationDefinition) (map[string]string, error) {
	known := map[string]string{
		"openapi_types": "github.com/oapi-codegen/runtime/types",
		"runtime":       "github.com/oapi-codegen/runtime",
		"nullable":      "github.com/oapi-codegen/nullable",
		"json":          "encoding/json",
		"time":          "time",
		"url":           "net/url",
	}
	for _, imp := range cfg.AdditionalImports {
		known[cmpOr(imp.Alias, path.Base(imp.Package))] = imp.Package
	}
	mapped := slices.Sorted(maps.Values(cfg.ImportMapping))
	mapped = slices.Compact(mapped)
	n := 0
	for _, p := range mapped {
		if p == "-" {
			continue
		}
		if name, pkg, ok := strings.Cut(p, " "); ok {
			known[name] = pkg
		} else {
			known[fmt.Sprintf("externalRef%d", n)] = p
		}
		n++
	}
	imps, err := codegen.OperationImports(defs)
	if err != nil {
		return nil, err
	}
	for _, gi := range imps {
		known[cmpOr(gi.Name, path.Base(gi.Path))] = gi.Path
	}
	return known, nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

var qualifier = regexp.MustCompile(`\b([A-Za-z_][A-Za-z0-9_]*)\.[A-Za-z_]`)

// typeImports adds to imports (name -> path) the packages that Go type typ
// refers to.
func typeImports(imports, known map[string]string, typ string) error {
	for _, m := range qualifier.FindAllStringSubmatch(typ, -1) {
		p, ok := known[m[1]]
		if !ok {
			return fmt.Errorf("cannot tell which package %s in the Go type %s is; declare it with x-go-type-import or additional-imports", m[1], typ)
		}
		imports[m[1]] = p
	}
	return nil
}
