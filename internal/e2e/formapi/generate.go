// Package formapi is oapi-codegen's and idemgen's output for a client of
// openapi.yaml, an API whose bodies are forms (as Stripe's are), used by the
// end-to-end tests. Regenerate with go generate.

package formapi

//go:generate go tool oapi-codegen -config cfg.yaml openapi.yaml
//go:generate go tool idemgen -config cfg.yaml -o api.idem.gen.go openapi.yaml
