//docblocks:module internal/e2e

// The context of the gin fragment (docs/server.md): a generated strict
// gin server as the package api.
package docs

import (
	"github.com/gin-gonic/gin"

	api "github.com/idemgen/idemgen/internal/e2e/ginstrictapi"
	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemstore"
)

var (
	impl  api.ServerInterface       // your handlers
	simpl api.StrictServerInterface // your strict handlers
	store idemstore.Store
	scope []idem.Option
)
