package idemgen

import (
	"context"
	"net/http"

	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/internal/genlink"
)

// Package idem's methods of a Call, handed over in its init (see genlink).
var (
	editor      = genlink.Editor.(func(*idem.Call) func(context.Context, *http.Request) error)
	marshalBody = genlink.MarshalBody.(func(*idem.Call, any) ([]byte, error))
	marshalForm = genlink.MarshalForm.(func(*idem.Call, any) ([]byte, error))
)

// MarshalBody marshals body to JSON once, for c. For a body-key operation
// it fills the member at the operation's KeyPointer with the call's key
// when it is missing or empty, and adopts the body's key as the call's key
// when it is set (idem.ErrBodyKeyDiffers when the call was given another).
// Call it before c.Run and send the returned bytes on every attempt, each
// time through a fresh reader (bytes.NewReader).
func MarshalBody(c *idem.Call, body any) ([]byte, error) {
	return marshalBody(c, body)
}

// MarshalForm encodes body, a typed application/x-www-form-urlencoded body
// as oapi-codegen declares it (a struct with form or json tags), once, for
// every attempt of c to send: the form counterpart of MarshalBody. It
// writes what oapi-codegen's runtime.MarshalForm writes (top-level
// omitempty fields left out when zero, a[0] for slices, a[b] for nested
// objects, fmt.Sprint for values), and a[key] for maps and additional
// properties, which runtime.MarshalForm writes as Go syntax (metadata=
// map[order:42]) where form APIs such as Stripe's expect metadata[order]=42.
//
// For a body-key operation, whose KeyPointer then names a form field
// (/field), it sets that field to the call's key when it is missing or
// empty, and adopts the form's key as the call's key when it is set.
func MarshalForm(c *idem.Call, body any) ([]byte, error) {
	return marshalForm(c, body)
}

// Editor returns a request editor of c (oapi-codegen's RequestEditorFn
// shape) that runs the call's idem.WithRequestEditors, then sets the key
// header on an attempt: as a bare token, or as an RFC 8941 sf-string with
// idem.WithQuotedKeyHeader (for a body-key operation, no header). The key
// is set last, so that every attempt carries the call's key.
func Editor(c *idem.Call) func(ctx context.Context, req *http.Request) error {
	return editor(c)
}
