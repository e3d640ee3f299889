// Package overlay writes an OpenAPI Overlay 1.0.0 document that publishes how
// the x-idempotent operations of a spec honour idempotency keys, as
// draft-ietf-httpapi-idempotency-key-header asks of every such resource: the
// key (its header, or the body member that carries it), how long results are
// replayed, the errors the idempotency layer answers and the header that
// marks a replay.
//
// Applied to the spec, the overlay adds to each idempotent operation only what
// the operation does not declare already:
//
//   - the key header parameter (not for keys carried in the body, and not when
//     a header parameter of that name is declared on the operation or its path
//     item);
//   - responses 400, 409, 413, 422 and 503 with an application/problem+json
//     body (RFC 9457) whose schema is added under components/schemas, and
//     Retry-After on 409 and 503;
//   - the Idempotent-Replayed header on the declared responses that can be
//     replayed (2xx, 3xx and 4xx other than 408, 409, 425 and 429);
//   - a paragraph appended to the operation's description.
//
// Nothing the spec declares is changed. A description is "appended to" by
// setting it to the original text, unchanged, followed by a blank line and
// the paragraph: Overlay updates replace strings, they cannot extend them.
//
// Targets are JSONPath expressions of the form $.paths['/pets/{petId}'].post,
// which both JSONPath dialects of github.com/speakeasy-api/openapi/overlay (the
// library behind oapi-codegen's overlay support) select identically: the
// legacy yamlpath one that Overlay 1.0.0 documents get by default, and
// RFC 9535.
//
// The package sees only the loaded document and a small description of each
// idempotent operation ([Operation]), so the generator can call [Build]
// without sharing its model.
package overlay
