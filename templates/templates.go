// Package templates holds idemgen's code templates, one file per concern of
// the generated file: header and imports, operation settings, the
// ServerInterface decorator, the strict-server middleware, the client
// helpers, and the webhook and callback receivers and initiators, with the
// partials they share in partials.tmpl. A framework's tokens come from its
// row of the model's framework table, not from a template of its own. They read only the model (internal/model);
// internal/render, their only importer, parses them once and executes
// them. It is an implementation detail of the generator, a package of its
// own only because //go:embed cannot reach a parent folder; it is not an
// API.
package templates

import "embed"

// FS holds the *.tmpl files.
//
//go:embed *.tmpl
var FS embed.FS

// Order lists the templates in the order their output appears in a
// generated file.
func Order() []string {
	return []string{"header.tmpl", "operations.tmpl", "server.tmpl", "strict.tmpl", "client.tmpl", "webhooks.tmpl"}
}

// OgenOrder lists the templates of a file generated beside ogen's output,
// in order.
func OgenOrder() []string { return []string{"header.tmpl", "ogen.tmpl"} }
