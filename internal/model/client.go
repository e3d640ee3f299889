package model

import (
	"strconv"
	"strings"
)

// ClientBodyKind is how the client helper takes the request body.
type ClientBodyKind int

// The ways the client helper takes a body.
const (
	ClientBodyNone   ClientBodyKind = iota // no request body
	ClientBodyJSON                         // a typed value, marshalled once by the Call
	ClientBodyText                         // a typed string
	ClientBodyReader                       // content type and an io.Reader, read once
	ClientBodyForm                         // a typed form body, encoded once by the Call
)

// FormContentType is the media type of the typed form variant's body.
const FormContentType = "application/x-www-form-urlencoded"

// ClientMethods are the methods of IdempotentClient for the operation: the
// operation itself, and for one that takes a form body also its typed form
// variant (ClientForm set), as oapi-codegen's client has
// XWithFormdataBody beside XWithBody.
func (f File) ClientMethods() []Operation {
	var out []Operation
	for _, op := range f.Operations {
		out = append(out, op)
		if form := op.FormBody(); form != nil {
			v := op
			v.ClientForm = true
			out = append(out, v)
		}
	}
	return out
}

// FormBody returns the operation's application/x-www-form-urlencoded
// body, nil if it takes none.
func (o Operation) FormBody() *Body {
	for _, b := range o.Bodies {
		if b.Kind == BodyForm {
			return &b
		}
	}
	return nil
}

// ClientMethodName is the name of the IdempotentClient method: the
// operation's Go name, with oapi-codegen's suffix for the form variant.
func (o Operation) ClientMethodName() string {
	if o.ClientForm {
		return o.GoName + "WithFormdataBody"
	}
	return o.GoName
}

// ClientBody returns the body the client helper sends: application/json if
// the operation takes it, else its first JSON media type, else its only
// text/plain body if its Go type is a string; nil when it reads an
// io.Reader with a caller-given content type, or takes no body.
func (o Operation) ClientBody() *Body {
	if o.ClientForm {
		return o.FormBody()
	}
	for _, b := range o.Bodies {
		if b.ContentType == "application/json" {
			return &b
		}
	}
	for _, b := range o.Bodies {
		if b.Kind == BodyJSON {
			return &b
		}
	}
	if len(o.Bodies) == 1 && o.Bodies[0].Kind == BodyText && o.Bodies[0].String {
		return &o.Bodies[0]
	}
	return nil
}

// ClientBodyKind says how the client helper takes the request body.
func (o Operation) ClientBodyKind() ClientBodyKind {
	if !o.HasBody() {
		return ClientBodyNone
	}
	b := o.ClientBody()
	switch {
	case o.ClientForm:
		return ClientBodyForm
	case b == nil:
		return ClientBodyReader
	case b.Kind == BodyText:
		return ClientBodyText
	default:
		return ClientBodyJSON
	}
}

// IsClientBodyJSON, IsClientBodyText and IsClientBodyReader are for templates.
func (o Operation) IsClientBodyJSON() bool { return o.ClientBodyKind() == ClientBodyJSON }

// IsClientBodyText reports whether the client helper takes a typed text body.
func (o Operation) IsClientBodyText() bool { return o.ClientBodyKind() == ClientBodyText }

// IsClientBodyReader reports whether the client helper reads an io.Reader.
func (o Operation) IsClientBodyReader() bool { return o.ClientBodyKind() == ClientBodyReader }

// IsClientBodyForm reports whether the client helper encodes a typed form.
func (o Operation) IsClientBodyForm() bool { return o.ClientBodyKind() == ClientBodyForm }

// FillKeyParam reports whether the client helper sets the declared key
// header parameter to the call's key. Only string types can hold it; for
// others (a UUID, say) the request editor's header alone carries the key.
func (o Operation) FillKeyParam() bool {
	return o.KeyParam != nil && o.KeyParam.Fillable
}

// KeyExpr is the call's key as a value of the key parameter's type.
func (o Operation) KeyExpr() string {
	key := o.Names.Client.Call + ".Key()"
	if o.KeyParam.Type == "string" {
		return key
	}
	return o.KeyParam.Type + "(" + key + ")"
}

// KeyParamValue is what the client helper assigns to the key parameter field.
func (o Operation) KeyParamValue() string {
	if o.KeyParam.Pointer {
		return "&" + o.Names.Client.Key
	}
	return o.Names.Client.Key
}

// ClientTakesParams reports whether the client helper takes params: the
// operation has parameters the helper does not fill itself.
func (o Operation) ClientTakesParams() bool {
	return o.HasParams && (o.OtherParams || !o.FillKeyParam())
}

// ClientParams is the client helper's parameter list after its context,
// starting with ", ".
func (o Operation) ClientParams() string {
	l := o.Names.Client
	s := ""
	for _, p := range o.PathParams {
		s += ", " + p.Name + " " + p.Type
	}
	if o.ClientTakesParams() {
		s += ", " + l.Params + " *" + o.GoName + "Params"
	}
	switch o.ClientBodyKind() {
	case ClientBodyJSON, ClientBodyText, ClientBodyForm:
		s += ", " + l.Body + " " + o.ClientBody().Type
	case ClientBodyReader:
		s += ", " + l.ContentType + " string, " + l.Body + " io.Reader"
	}
	return s
}

// ClientMethod is the ClientWithResponsesInterface method each attempt calls.
func (o Operation) ClientMethod() string {
	if o.HasBody() {
		return o.GoName + "WithBodyWithResponse"
	}
	return o.GoName + "WithResponse"
}

// ClientCallArgs is the argument list of ClientMethod after the context
// and before the request editor, starting with ", ".
func (o Operation) ClientCallArgs() string {
	l := o.Names.Client
	s := ""
	for _, p := range o.PathParams {
		s += ", " + p.Name
	}
	switch {
	case o.FillKeyParam():
		s += ", &" + l.P
	case o.HasParams:
		s += ", " + l.Params
	}
	reader := l.Bytes + ".NewReader(" + l.Buf + ")"
	switch o.ClientBodyKind() {
	case ClientBodyJSON, ClientBodyText, ClientBodyForm:
		s += ", " + quote(o.ClientBody().ContentType) + ", " + reader
	case ClientBodyReader:
		s += ", " + l.ContentType + ", " + reader
	}
	return s
}

// ErrDeclaredBeforeRun reports whether the client method declares its error
// variable before the call's Run, as it does when it prepares a body, so
// that the Run line assigns it (=) rather than declaring it (:=).
func (o Operation) ErrDeclaredBeforeRun() bool {
	k := o.ClientBodyKind()
	return k == ClientBodyJSON || k == ClientBodyReader || k == ClientBodyForm
}

// ClientRetryDoc says, for the client helper's doc comment, what its
// attempts carry and which of them are retried: the statuses of the
// operation's retry policy as the spec resolves them.
func (o Operation) ClientRetryDoc() string {
	retried := "fail in transport"
	if n := len(o.Retry.RetryOn); n > 0 {
		codes := make([]string, n)
		for i, c := range o.Retry.RetryOn {
			codes[i] = strconv.Itoa(c)
		}
		list := codes[0]
		if n > 1 {
			list = strings.Join(codes[:n-1], ", ") + " or " + codes[n-1]
		}
		retried += " or are answered " + list
	}
	form := ""
	if o.ClientForm {
		form = "The body is encoded once, as " + FormContentType + " (nested objects and maps as a[b])" + o.formKeyDoc() + ". "
	}
	return form + "Every attempt carries the same idempotency key and body bytes. Attempts that " + retried +
		" are retried as the operation's retry policy allows (options given to NewIdempotentClient or the call may change it). It returns the last typed response, and a *idem.RetryError when it gave up, or a *idem.ProblemError when the final answer is an RFC 9457 problem."
}

// formKeyDoc says, for the form variant of a body-key operation, where the
// key goes.
func (o Operation) formKeyDoc() string {
	if o.KeyPointer == "" {
		return ""
	}
	return ", with the call's key in its field " + strings.TrimPrefix(o.KeyPointer, "/") + " when that is empty"
}
