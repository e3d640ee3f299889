//docblocks:module examples/petstore

// The context of the client fragments (README.md, docs/client.md): the
// petstore's generated client as the package api.
package docs

import (
	"context"
	"errors"
	"log/slog"
	"net/http"

	api "github.com/idemgen/idemgen/examples/petstore/api/client"
	idem "github.com/idemgen/idemgen/runtime"
)

var (
	ctx                 context.Context
	clientWithResponses api.ClientWithResponsesInterface
	c                   *api.IdempotentClient
	body                api.CreatePetJSONRequestBody
	k                   string
	traceID             func(context.Context) string
)
