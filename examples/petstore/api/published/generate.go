package publishedclient

// The published contract: idemgen writes the overlay from the server's
// config (the operations and settings the server really runs), then
// oapi-codegen generates a client of the spec with that overlay applied
// (cfg.yaml names it). Order matters: go generate runs the directives of a
// file in order, so the overlay is fresh when oapi-codegen reads it.

//go:generate go tool idemgen -config ../strict/cfg.yaml -emit-overlay ../idempotency.overlay.yaml ../openapi.yaml
//go:generate go tool oapi-codegen -config cfg.yaml ../openapi.yaml
