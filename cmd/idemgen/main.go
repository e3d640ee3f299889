// Command idemgen generates idempotency wrappers for oapi-codegen output:
// a ServerInterface decorator, a strict-server middleware and client
// helpers for every operation marked x-idempotent in an OpenAPI document.
//
// Usage:
//
//	idemgen -config cfg.yaml -o api.idem.gen.go openapi.yaml
//
// cfg.yaml is the configuration file given to oapi-codegen. With
// -emit-overlay FILE, idemgen also (or, without -o, only) writes an OpenAPI
// Overlay that publishes the idempotency contract for docs and clients.
// With -check, idemgen writes nothing and exits 1 with a short diff when a
// file given by -o or -emit-overlay is stale. Typical use is a go:generate line right after
// oapi-codegen's:
//
//	//go:generate go tool oapi-codegen -config cfg.yaml openapi.yaml
//	//go:generate go tool idemgen -config cfg.yaml -o api.idem.gen.go openapi.yaml
package main

import (
	"context"
	"os"
	"os/signal"

	"github.com/idemgen/idemgen/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := cli.Run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
