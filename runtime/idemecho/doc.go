// Package idemecho runs idemgen's idempotency engine (package idem) under
// echo v4, for the code idemgen generates from an oapi-codegen config with
// echo-server. It is a package of its own so that a program that serves
// with net/http routers only does not link echo: package idem imports no
// web framework.
//
// Echo renders a handler's returned error through its HTTPErrorHandler only
// after the middleware chain returns, so a recorder wrapped around the
// handler naively would record an empty 200. [Serve] renders the error
// itself, into the recorder, before the engine stores the response; what is
// stored and replayed is what the client of a first run sees.
package idemecho
