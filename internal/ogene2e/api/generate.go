// Package api is ogen's server and client for ../openapi.yaml, and the file
// idemgen generates beside them (api.idem.gen.go), which gives the server
// its idempotency layer.
package api

//go:generate go tool ogen --target . --package api --clean ../openapi.yaml
//go:generate go tool idemgen -target ogen -package api -o api.idem.gen.go ../openapi.yaml
