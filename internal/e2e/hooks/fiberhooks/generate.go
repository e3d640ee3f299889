// Package fiberhooks is oapi-codegen's and idemgen's output for the fiber v2 webhook
// receiver of ../webhooks.yaml, used by the end-to-end tests. Regenerate
// with go generate.

package fiberhooks

//go:generate go tool oapi-codegen -config cfg.yaml ../webhooks.yaml
//go:generate go tool idemgen -config cfg.yaml -o api.idem.gen.go ../webhooks.yaml
