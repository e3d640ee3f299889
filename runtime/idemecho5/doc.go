// Package idemecho5 runs idemgen's idempotency engine (package idem) under
// echo v5, for the code idemgen generates from an oapi-codegen config with
// echo5-server. It is a package of its own so that a program that does not
// serve with echo v5 does not link it: package idem imports no web
// framework.
//
// As in idemecho (echo v4): echo renders a handler's returned error
// through its HTTPErrorHandler only after the middleware chain returns, so
// [Serve] renders the error itself, into the engine's recorder, before the
// engine stores the response; what is stored and replayed is what the
// client of a first run sees.
package idemecho5
