// Package idemop describes an idempotent operation as generated code
// declares it and the runtime runs it: [Operation] (the server's),
// [ClientOperation] and [RetryPolicy] (the client's), the [Security]
// schemes an operation requires, its storage policy's rules ([CheckFinal],
// [Operation.Stores]), the defaults of the zero fields, the problem codes
// and headers of the wire contract, and the version range that generated
// code and the runtime meet on.
//
// It imports only the standard library and idemstore, so that the
// generator, idemctl and idemctl probe apply the runtime's own rules and
// defaults without linking the engine, as drivers import
// database/sql/driver and not database/sql. Package idem aliases every
// name here; users and generated code use those (idem.Operation,
// idem.CheckFinal, idem.MaxVersion, ...).
package idemop
