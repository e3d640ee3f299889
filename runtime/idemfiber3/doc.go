// Package idemfiber3 runs idemgen's idempotency engine (package idem) under
// fiber v3, for the code idemgen generates from an oapi-codegen config with
// fiber-v3-server. It is a package of its own so that a program that does not
// serve with fiber does not link it: package idem imports no web
// framework.
//
// fiber runs on fasthttp, not net/http, and the adapter does not convert
// each request to net/http and back: it shows the engine the request's
// parts from fiber's own context ([idem.Engine.ServeRequest]: method, path,
// query, headers and the body as sent), lets the handler answer into
// fiber's response, and captures that response for the store. A replay or
// a problem (400, 409, 413, 422, 503) is written into fiber's response with
// the same headers and bodies as the net/http forms. Only a [idem.WithScope]
// function or a [idem.Reconciler], which take an *http.Request, get one,
// built by fiber's adaptor for them.
package idemfiber3
