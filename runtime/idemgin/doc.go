// Package idemgin runs idemgen's idempotency engine (package idem) under
// gin, for the code idemgen generates from an oapi-codegen config with
// gin-server. It is a package of its own so that a program that serves with
// net/http routers only does not link gin: package idem imports no web
// framework.
//
// Gin has no standard way to wrap a func(http.Handler) http.Handler, and its
// writer defers the status line until the first write (or until gin ends
// the request), so [Serve] swaps c.Writer for a gin.ResponseWriter over the
// engine's recorder while the handler runs, sends a status the handler set
// without writing a body into the recorder before the engine stores it, and
// restores c.Writer and c.Request afterwards.
package idemgin
