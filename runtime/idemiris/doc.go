// Package idemiris runs idemgen's idempotency engine (package idem) under
// iris, for the code idemgen generates from an oapi-codegen config with
// iris-server. It is a package of its own so that a program that does not
// serve with iris does not link it: package idem imports no web framework.
//
// iris serves net/http, so the adapter runs [idem.Engine.Serve] itself; a
// handler answers through iris's own response writer, which keeps a status
// until the first write or the end of the request. [Serve] gives the
// handler a fresh iris writer over the engine's recorder, and sends a
// status set without a body to the recorder when the handler returns, so
// that what is stored is what iris would have sent.
package idemiris
