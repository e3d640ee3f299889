// Package templates holds idemgen's code templates, one file per concern of
// the generated file: header and imports, operation settings, the
// ServerInterface decorator (its constructor and net/http methods, then its
// echo and gin methods), the strict-server middleware (net/http routers,
// then echo and gin), the client helpers, and the webhook and callback
// receivers and initiators. They read only the model (internal/model); internal/render, their
// only importer, parses them once and executes them. It is an implementation
// detail of the generator, a package of its own only because //go:embed
// cannot reach a parent folder; it is not an API.
package templates

import "embed"

// FS holds the *.tmpl files.
//
//go:embed *.tmpl
var FS embed.FS

// Order lists the templates in the order their output appears in a
// generated file.
func Order() []string {
	return []string{"header.tmpl", "operations.tmpl", "server.tmpl", "echo.tmpl", "gin.tmpl", "echo5.tmpl", "iris.tmpl", "strict.tmpl", "strictfw.tmpl", "fiber.tmpl", "strictctx.tmpl", "client.tmpl", "webhooks.tmpl"}
}
