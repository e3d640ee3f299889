package load

import (
	"cmp"
	"slices"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/idemgen/idemgen/internal/model"
)

// security returns the schemes of op's effective security requirements:
// its own security when it declares one (an empty list, security: [],
// means none), else the document's. An alternative that is the empty
// requirement {} (anonymous access allowed) adds no scheme; the others'
// schemes still mean that callers authenticate. The result is sorted by
// scheme name, each scheme once; nil when no scheme is required.
func security(doc *openapi3.T, op *openapi3.Operation) []model.Security {
	reqs := doc.Security
	if op.Security != nil {
		reqs = *op.Security
	}
	var out []model.Security
	for _, req := range reqs {
		for name := range req {
			if slices.ContainsFunc(out, func(s model.Security) bool { return s.Scheme == name }) {
				continue
			}
			s := model.Security{Scheme: name}
			if doc.Components != nil {
				if ref := doc.Components.SecuritySchemes[name]; ref != nil && ref.Value != nil {
					s.Type = ref.Value.Type
					if s.Type == "apiKey" {
						s.In, s.Name = ref.Value.In, ref.Value.Name
					}
				}
			}
			out = append(out, s)
		}
	}
	slices.SortFunc(out, func(a, b model.Security) int { return cmp.Compare(a.Scheme, b.Scheme) })
	return out
}
