package idem

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/idemgen/idemgen/runtime/idemop"
	"github.com/idemgen/idemgen/runtime/internal/canonjson"
	"github.com/idemgen/idemgen/runtime/internal/keyheader"
)

// What webhook and callback receivers add to an operation: a provider in
// the key space and keys made of several body members. The flow is the
// operations' own (protect); only the key is found differently.

// opRecordName is the operation's name in its storage keys: its ID, or
// ID@Provider for a webhook or callback receiver.
func opRecordName(op *idemop.Operation) string {
	if op.Provider == "" {
		return op.ID
	}
	return op.ID + "@" + op.Provider
}

// partEscaper escapes a part of a composite key as storage keys escape
// their parts: '\' and ':' preceded by '\'.
var partEscaper = strings.NewReplacer(`\`, `\\`, `:`, `\:`)

// compositeKey returns the key made of the values at op.KeyPointers in a
// JSON body, each a string or a number, joined by ':' (a ':' or '\' inside a
// value escaped with '\', by partEscaper), so that no two lists of
// values make one key (a number and the string of its digits are one
// value: the id 1 is the id "1"). It reports whether a key was found (all of its
// parts), and a problem for a missing required part or a malformed one.
func compositeKey(op *idemop.Operation, body payload) (string, bool, *Problem) {
	missing := func(ptr string) (string, bool, *Problem) {
		if op.Optional {
			return "", false, nil
		}
		return "", false, problemf(http.StatusBadRequest, idemop.CodeMissingKey,
			"the idempotency key is made of %s in a JSON request body; %s is missing", strings.Join(op.KeyPointers, " and "), ptr)
	}
	if !body.isJSON {
		return missing(op.KeyPointers[0])
	}
	var b strings.Builder
	for i, s := range op.KeyPointers {
		p, err := canonjson.ParsePointer(s)
		if err != nil {
			panic(fmt.Errorf("idem: operation %s: key pointer: %w", op.ID, err))
		}
		_, at, _ := canonjson.Walk(nil, body.raw, []canonjson.Pointer{p}, 0)
		v := at.Value.In(body.raw)
		if len(v) == 0 || v[0] == 'n' {
			return missing(s)
		}
		var part string
		switch {
		case v[0] == '"':
			part = canonjson.DecodeString(v)
		case v[0] == '-' || v[0] >= '0' && v[0] <= '9':
			part = string(v)
		default:
			return "", false, problemf(http.StatusBadRequest, idemop.CodeInvalidKey, "the idempotency key part at %s is neither a string nor a number", s)
		}
		if part == "" {
			return missing(s)
		}
		if i > 0 {
			b.WriteByte(':')
		}
		partEscaper.WriteString(&b, part)
	}
	key := b.String()
	if err := keyheader.Check(key); err != nil {
		return "", false, problemf(http.StatusBadRequest, idemop.CodeInvalidKey, "the idempotency key made of %s is malformed: %s", strings.Join(op.KeyPointers, " and "), keyErrDetail(err))
	}
	return key, true, nil
}
