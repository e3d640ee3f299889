// Package echo5api is oapi-codegen's and idemgen's output for the plain echo v5 server of
// ../openapi.yaml, used by the end-to-end tests. Regenerate with go generate.

package echo5api

//go:generate go tool oapi-codegen -config cfg.yaml ../openapi.yaml
//go:generate go tool idemgen -config cfg.yaml -o api.idem.gen.go ../openapi.yaml
