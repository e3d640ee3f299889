// Package strictapi is the load harness's operation as oapi-codegen's
// strict server with idemgen's layer, generated from openapi.yaml. Regenerate with go generate.

package strictapi

//go:generate go tool oapi-codegen -config cfg.yaml openapi.yaml
//go:generate go tool idemgen -config cfg.yaml -o api.idem.gen.go openapi.yaml
