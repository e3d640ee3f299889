// Package generator runs idemgen's three stages, load -> model -> render,
// and returns the generated files' names and bytes. It never writes files:
// the command line does.
//
//   - load (internal/load) loads the spec with oapi-codegen's own loader,
//     overlay included, and takes Go names and types from oapi-codegen's
//     pkg/codegen at the version pinned in go.mod. oapi-codegen keeps its
//     configuration, name normalizer and template functions in package
//     variables; one function (load.describe) drives them, under a mutex
//     (tests run oapi-codegen's own command, in a process of its own).
//     It parses and validates x-idempotent (internal/extension) and builds
//     the model.
//   - model (internal/model) is plain data about the idempotent operations;
//     decisions live in its methods.
//   - render (internal/render) executes the embedded templates (package
//     templates) and formats with go/format, imports computed by the model.
//
// Decisions a user can observe:
//
//   - What is emitted follows the oapi-codegen config: WithIdempotency for
//     chi-server, std-http-server and gorilla-server (their ServerInterface
//     has the same shape, and IdempotencyErrorHandler answers its request
//     errors), and for echo-server, echo5-server, gin-server, iris-server,
//     fiber-server and fiber-v3-server with their signatures (over
//     runtime/idemecho, idemecho5, idemgin, idemiris, idemfiber and
//     idemfiber3); NewStrictHandlerWithIdempotency when strict-server is
//     generated with one of them; IdempotentClient for client.
//   - Strict bodies: oapi-codegen's strict handler decodes the body before
//     any strict middleware runs, so NewStrictHandlerWithIdempotency puts a
//     ServerInterface decorator in front of it that reads the body as sent
//     (idemgen.ServeBody, or idemecho/idemgin.ServeBody: bounded,
//     restored for the decoder) and a middleware behind it that
//     fingerprints those bytes (idem.Engine.ServeStrict), whatever the
//     media type: JSON, form, text, octet and multipart bodies count
//     exactly as in the plain server. The two share one engine, which is
//     why the strict server has one constructor rather than a middleware to
//     add by hand.
//   - A key header that the spec also declares as a header parameter is
//     filled by the client helper (when its Go type is a string type). When
//     that parameter is required, oapi-codegen's generated wrapper rejects a
//     request without it with its own 400 (plain text, not
//     application/problem+json) before the idempotency layer runs; the
//     generated doc comment says so, and x-idempotent.required: false with
//     a required parameter is a generator error. A key parameter whose
//     schema has a format (uuid) is also validated by oapi-codegen first.
//   - OpenAPI 3.1 documents go through the same path: kin-openapi loads
//     them and oapi-codegen names them; x-idempotent is read the same way.
//     Webhooks and callbacks are not wrapped.
//   - GenerateOverlay (Loaded.Overlay) renders the same model, with package
//     overlay, as an OpenAPI Overlay that publishes the contract; a run that
//     writes the Go file too loads the spec once for both (Load). It is
//     built on a fresh copy of the document after the user's overlay (the
//     copy load.Load used has been pruned and filtered in place by
//     codegen.Generate), for the operations the Go code covers. Writing it
//     over the overlay the config applies is refused (the second run would
//     find nothing to add).
//   - Names: parameters keep the Go names oapi-codegen gives them; every
//     name the generated code chooses itself (locals, receivers, unexported
//     package-level identifiers) is allocated per file and per method so
//     that no spec can collide with it (model.File.AllocateNames), the way
//     protoc-gen-go allocates names. Where a path parameter hides a package
//     the method body needs (a client-only parameter named context), the
//     file imports that package a second time under a free name. Only an
//     exported identifier that oapi-codegen's output declares too
//     (a schema named IdempotentClient) is an error, since users call it
//     by name.
//   - Errors: every problem of a run is reported, one per line, sorted by
//     line (load.Errors).
//   - Operation settings are emitted fully resolved (document defaults and
//     documented defaults filled in), so the generated file shows what runs.
package generator
