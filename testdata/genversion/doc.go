// Package genversion keeps files that an earlier idemgen generated, byte for
// byte as it wrote them, so that a test (internal/generator
// TestPreviousGenVersionBuilds) proves they still compile against the
// current runtime: generated code and runtime meet on a version range
// (idem.MinVersion to idem.MaxVersion), and adding runtime API must never
// break a file generated before it.
//
// v2/ holds the petstore's client, plain and strict server files as idemgen
// generated them for version 2 (the version before the range existed; they
// compare with idem.GenVersion exactly, which stays 2 for them). v3/ holds
// the petstore's client as idemgen generated it for version 3 (a client
// file stated 3 or 4), before version 5 added idem.ClientOperation.Lock.
// These files are fixtures, not regenerated: never update them.
package genversion
