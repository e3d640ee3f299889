//docblocks:module internal/e2e

// The context of docs/postgresql.md's fragments: a generated strict chi
// server as the package api.
package docs

import (
	"context"
	"os"

	"github.com/go-chi/chi/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	api "github.com/idemgen/idemgen/internal/e2e/strictapi"
	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/pgstore"
)

var (
	ctx   context.Context
	simpl api.StrictServerInterface
	scope []idem.Option
)
