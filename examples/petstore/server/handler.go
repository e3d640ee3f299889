package server

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/idemgen/idemgen/examples/petstore/api/plain"
	"github.com/idemgen/idemgen/examples/petstore/api/strict"
	"github.com/idemgen/idemgen/examples/petstore/shop"
	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemstore"
)

// APIKeyHeader carries the caller's API key: the spec's apiKey scheme.
const APIKeyHeader = "X-API-Key"

// ScopedByAPIKey are the engine options of the petstore's key space: one
// per API key, each stored as an HMAC-SHA256 under secret (at least 16
// bytes, the same in every instance and across restarts), so one caller
// never replays another's response and no API key reaches Redis.
func ScopedByAPIKey(secret []byte) []idem.Option {
	return []idem.Option{idem.WithScopeFromHeader(APIKeyHeader), idem.WithScopeSecret(secret)}
}

// NewStrictHandler serves the shop through oapi-codegen's strict server,
// built by idemgen's generated NewStrictHandlerWithIdempotency, with every
// request error of the router answered as a problem document.
func NewStrictHandler(s *shop.Shop, store idemstore.Store, opts ...idem.Option) http.Handler {
	return strictapi.HandlerWithOptions(strictapi.NewStrictHandlerWithIdempotency(Strict{Shop: s}, nil, store, opts...),
		strictapi.ChiServerOptions{BaseRouter: chi.NewRouter(), ErrorHandlerFunc: strictapi.IdempotencyErrorHandler})
}

// NewPlainHandler serves the shop through oapi-codegen's plain
// ServerInterface, decorated by idemgen's generated WithIdempotency.
func NewPlainHandler(s *shop.Shop, store idemstore.Store, opts ...idem.Option) http.Handler {
	return plainapi.HandlerWithOptions(plainapi.WithIdempotency(Plain{Shop: s}, store, opts...),
		plainapi.ChiServerOptions{BaseRouter: chi.NewRouter(), ErrorHandlerFunc: plainapi.IdempotencyErrorHandler})
}
