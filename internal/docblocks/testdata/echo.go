//docblocks:module internal/e2e

// The context of the echo fragment (docs/server.md): a generated strict
// echo server as the package api.
package docs

import (
	"github.com/labstack/echo/v4"

	api "github.com/idemgen/idemgen/internal/e2e/echostrictapi"
	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemstore"
)

var (
	impl  api.ServerInterface       // your handlers
	simpl api.StrictServerInterface // your strict handlers
	store idemstore.Store
	scope []idem.Option
)
