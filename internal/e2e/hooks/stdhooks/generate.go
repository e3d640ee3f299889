// Package stdhooks is oapi-codegen's and idemgen's output for the std-http webhook
// receiver of ../webhooks.yaml, used by the end-to-end tests. Regenerate
// with go generate.

package stdhooks

//go:generate go tool oapi-codegen -config cfg.yaml ../webhooks.yaml
//go:generate go tool idemgen -config cfg.yaml -o api.idem.gen.go ../webhooks.yaml
