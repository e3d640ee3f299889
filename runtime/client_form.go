package idem

import (
	"fmt"
	"net/url"

	"github.com/idemgen/idemgen/runtime/internal/canonjson"
	"github.com/idemgen/idemgen/runtime/internal/form"
)

// marshalForm is idemgen.MarshalForm: it encodes body, a typed application/x-www-form-urlencoded body
// as oapi-codegen declares it (a struct with form or json tags), once, for
// every attempt to send: the call's form counterpart of MarshalBody. It
// writes what oapi-codegen's runtime.MarshalForm writes (top-level
// omitempty fields left out when zero, a[0] for slices, a[b] for nested
// objects, fmt.Sprint for values), and a[key] for maps and additional
// properties, which runtime.MarshalForm writes as Go syntax (metadata=
// map[order:42]) where form APIs such as Stripe's expect metadata[order]=42.
//
// For a body-key operation, whose KeyPointer then names a form field
// (/field), it sets that field to the call's key when it is missing or
// empty, and adopts the form's key as the call's key when it is set.
func (c *Call) marshalForm(body any) ([]byte, error) {
	vals, ok := form.Values(body)
	if !ok {
		return nil, fmt.Errorf("idem: %s: a form body must be a struct, not %T", c.op.ID, body)
	}
	if err := c.fillFormKey(vals); err != nil {
		return nil, err
	}
	out := []byte(vals.Encode())
	if c.op.KeyPointer != "" {
		c.placedKey(out)
	}
	return out, nil
}

// fillFormKey puts the call's key into the form field of a body-key
// operation, or adopts the key already there (see MarshalForm).
func (c *Call) fillFormKey(form url.Values) error {
	if c.op.KeyPointer == "" {
		return nil
	}
	ptr, err := canonjson.ParsePointer(c.op.KeyPointer)
	if err != nil || len(ptr) != 1 {
		return fmt.Errorf("%w: a form field is named by a pointer of one member, such as /idempotency_key (operation %s, pointer %s)", ErrBodyKey, c.op.ID, c.op.KeyPointer)
	}
	field := ptr[0].Name
	switch existing := form.Get(field); existing {
	case "":
		form.Set(field, c.key)
	case c.key:
	default:
		return c.adoptKey(existing, "form field "+field, "in the form field "+field)
	}
	return nil
}
