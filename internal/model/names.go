package model

import (
	"unicode"
	"unicode/utf8"
)

// Receiver is the receiver name of generated methods: "s", or another name
// when a path parameter is called s.
func (f File) Receiver() string {
	for _, name := range []string{"s", "srv", "server", "decorator"} {
		if !f.paramNamed(name) {
			return name
		}
	}
	return "idempotentServerReceiver"
}

func (f File) paramNamed(name string) bool {
	for _, op := range f.Operations {
		for _, p := range op.PathParams {
			if p.Name == name {
				return true
			}
		}
	}
	return false
}

// ReservedNames are the identifiers generated methods use beside the path
// parameters; a path parameter with one of these Go names is an error.
func ReservedNames() []string {
	return []string{"body", "buf", "c", "call", "contentType", "ctx", "engine", "err", "f", "key", "obj", "opts", "out", "p", "params", "r", "req", "request", "resp", "w"}
}

// unexported returns name with its first letter in lower case.
func unexported(name string) string {
	r, n := utf8.DecodeRuneInString(name)
	return string(unicode.ToLower(r)) + name[n:]
}

// OpVar is the package-level idem.Operation of the server wrappers.
func (o Operation) OpVar() string { return unexported(o.GoName) + "IdempotencyOp" }

// ClientOpVar is the package-level idem.ClientOperation of the client helper.
func (o Operation) ClientOpVar() string { return unexported(o.GoName) + "IdempotencyClientOp" }

// StrictFunc is the function that wraps the operation's strict handler.
func (o Operation) StrictFunc() string { return unexported(o.GoName) + "IdempotencyStrict" }
