package load

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/idemgen/idemgen/internal/extension"
	"github.com/idemgen/idemgen/internal/model"
	"github.com/idemgen/idemgen/runtime/idemop"
)

// build makes the model of one idempotent operation from what oapi-codegen
// says of it and its resolved x-idempotent, and checks what only the two
// together can tell: a body key needs a JSON body, the declared key header
// parameter must agree with required, and so on.
func build(f model.File, d codegenOp, doc, s extension.Spec, secured []model.Security) (model.Operation, error) {
	set, err := extension.Resolve(doc, s)
	if err != nil {
		return model.Operation{}, err
	}
	op := model.Operation{
		GoName:             d.goName,
		SpecID:             d.specID,
		Method:             d.method,
		Path:               d.path,
		Summary:            d.summary,
		KeyHeader:          set.KeyHeader,
		KeyPointer:         set.KeyPointer,
		Optional:           !set.Required,
		Retention:          set.Retention,
		Lock:               set.Lock,
		Wait:               set.Wait,
		FingerprintIgnore:  set.FingerprintIgnore,
		FingerprintHeaders: set.FingerprintHeaders,
		Final:              unlessDefault(set.Final, idemop.DefaultFinal()),
		Transient:          set.Transient,
		Retry: model.Retry{
			MaxAttempts:     set.Retry.MaxAttempts,
			InitialInterval: set.Retry.InitialInterval,
			MaxInterval:     set.Retry.MaxInterval,
			Multiplier:      set.Retry.Multiplier,
			MaxElapsed:      set.Retry.MaxElapsed,
			AttemptTimeout:  set.Retry.AttemptTimeout,
			RetryOn:         set.Retry.RetryOn,
		},
		Security:     secured,
		PathParams:   d.pathArgs,
		HasParams:    d.hasParams,
		Bodies:       d.bodies,
		ResponseType: d.response,
	}
	var errs []error
	if err := checkBodyKey(f, op); err != nil {
		errs = append(errs, err)
	} else if err := checkBodyKeySchema(d.op, op.KeyPointer); err != nil {
		errs = append(errs, err)
	}
	for _, h := range d.headers {
		if set.KeyHeader != "" && strings.EqualFold(h.name, set.KeyHeader) {
			op.KeyParam = &model.KeyParam{
				Name:     h.name,
				Field:    h.field,
				Type:     strings.TrimPrefix(h.typ, "*"),
				Pointer:  strings.HasPrefix(h.typ, "*"),
				Fillable: h.stringy,
				Required: h.required,
			}
		}
	}
	op.OtherParams = slices.ContainsFunc(d.params, func(p param) bool {
		return op.KeyParam == nil || p.in != "header" || !strings.EqualFold(p.name, op.KeyParam.Name)
	})
	if p := op.KeyParam; p != nil && p.Required && op.Optional {
		errs = append(errs, &extension.Error{Field: "required", Msg: fmt.Sprintf(
			"false contradicts the key header parameter %s, which is declared required: oapi-codegen's wrapper answers 400 when it is missing; declare the parameter required: false, or drop required: false", p.Name)})
	}
	if len(errs) > 0 {
		return model.Operation{}, errors.Join(errs...)
	}
	return op, nil
}

// checkBodyKey checks that a body key can be found in every body the
// operation takes: JSON bodies, and for a client alone form bodies, whose
// key is a field (the client fills it; the server reads keys from JSON
// bodies only).
func checkBodyKey(f model.File, op model.Operation) error {
	if op.KeyPointer == "" {
		return nil
	}
	if !op.HasBody() {
		return &extension.Error{Field: "key.body", Msg: "operation has no request body; a body key needs a JSON body: use key.header instead"}
	}
	for _, b := range op.Bodies {
		switch {
		case b.Kind == model.BodyForm && (f.Server || f.AnyStrict()):
			return &extension.Error{Field: "key.body", Msg: fmt.Sprintf(
				"operation accepts %s; the server reads a body key from JSON bodies only (a client alone fills it into a form field): use key.header instead", b.ContentType)}
		case b.Kind == model.BodyForm && strings.Count(op.KeyPointer, "/") != 1:
			return &extension.Error{Field: "key.body", Msg: fmt.Sprintf(
				"operation accepts %s, whose key is a form field: name it with a pointer of one member, such as /idempotency_key", b.ContentType)}
		case b.Kind != model.BodyJSON && b.Kind != model.BodyForm:
			return &extension.Error{Field: "key.body", Msg: fmt.Sprintf(
				"operation accepts %s, which is not JSON; a body key needs every request body to be JSON: use key.header instead", b.ContentType)}
		}
	}
	return nil
}

// unlessDefault returns list, or nil when it is def: generated code states
// only a policy the runtime would not apply anyway.
func unlessDefault[T comparable](list, def []T) []T {
	if slices.Equal(list, def) {
		return nil
	}
	return list
}
