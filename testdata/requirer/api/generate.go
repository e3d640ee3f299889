// Package api is oapi-codegen's and idemgen's client for openapi.yaml.
package api

//go:generate go tool oapi-codegen -config cfg.yaml openapi.yaml
//go:generate go tool idemgen -config cfg.yaml -o client.idem.gen.go openapi.yaml
