// Package idemop describes an idempotent operation as generated code
// declares it and the runtime runs it: [Operation] (the server's),
// [ClientOperation] and [RetryPolicy] (the client's), the [Security]
// schemes an operation requires, its storage policy's rules ([CheckFinal],
// [Operation.Stores]), the defaults of the zero fields, the problem codes
// and headers of the wire contract, and the version range that generated
// code and the runtime meet on.
//
// It is the one home of these names: generated code, users (an
// [Operation] for a hand-written route, a [RetryPolicy] in
// idem.WithPolicy, a problem code to match) and the tools all write
// idemop.X. It imports only the standard library and idemstore, so that
// the generator, idemctl and idemctl probe apply the runtime's own rules
// and defaults without linking the engine, as drivers import
// database/sql/driver and not database/sql.
package idemop
