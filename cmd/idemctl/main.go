// Command idemctl inspects and repairs one idempotency key in the Redis of
// an idemgen server, for operators: a record stuck after an incident, a
// customer asking why a retry was refused. idemctl probe checks a deployed
// API against its spec's idempotency contract.
//
// Usage:
//
//	idemctl inspect -redis redis://host:6379/0 -api petstore -op createPet [-scope s] -key k [-body]
//	idemctl forget  -redis redis://host:6379/0 -api petstore -op createPet [-scope s] -key k [-force]
//	idemctl probe   -spec openapi.yaml -config cfg.yaml -url https://staging.example.com -header 'X-API-Key: sk_test' [-dry-run]
//
// probe sends real requests, which create real resources on the target:
// point it at staging (internal/probe, docs/probe.md).
//
// inspect prints the record's state, the lease or retention it has left, its
// fence, the stored status, header names and body size (the body only with
// -body). forget deletes it so that the next request with the key runs the
// operation again; it refuses a record in progress unless -force is given,
// and says what forcing risks.
//
// -op takes the operationId of the spec (createPet) or its Go name
// (CreatePet); when no record is found, idemctl lists the operations that
// have records under the prefix and says when a scope secret is missing.
// Installed with go get -tool, run it as go tool idemctl.
package main

import (
	"context"
	"os"
	"os/signal"

	"github.com/idemgen/idemgen/internal/ctl"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := ctl.Run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
