//docblocks:module examples/petstore

// The context of the server fragments (README.md, docs/server.md): the
// petstore's generated strict chi server as the package api.
package docs

import (
	"context"
	"log"

	"github.com/go-chi/chi/v5"
	"github.com/redis/go-redis/v9"

	api "github.com/idemgen/idemgen/examples/petstore/api/strict"
	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/redisstore"
)

var (
	ctx    context.Context
	secret []byte
	impl   api.ServerInterface       // your handlers
	simpl  api.StrictServerInterface // your strict handlers
	si     api.ServerInterface       // WithIdempotency(...) or NewStrictHandlerWithIdempotency(...)
)
