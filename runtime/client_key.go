package idem

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/idemgen/idemgen/runtime/internal/canonjson"
)

// newCallKey returns a fresh key: 128 bits from crypto/rand as 32 lower-case
// hex digits (crypto/rand.Read does not fail).
func newCallKey() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// sfString encodes key as an RFC 8941 sf-string, the form the IETF draft
// gives the Idempotency-Key header. key must be printable ASCII.
func sfString(key string) string {
	var b strings.Builder
	b.Grow(len(key) + 2)
	b.WriteByte('"')
	for i := 0; i < len(key); i++ {
		if key[i] == '"' || key[i] == '\\' {
			b.WriteByte('\\')
		}
		b.WriteByte(key[i])
	}
	b.WriteByte('"')
	return b.String()
}

// fillBodyKey places key at pointer in body, compact JSON as json.Marshal
// writes it. When the member holds a non-empty string it returns body unchanged
// and that string as existing; when it is missing, "" or null, it returns a
// copy of body with the member set to key (appended last when missing).
// Everything else keeps its bytes and order. Of duplicate members, on the
// pointer's path or at its end, the last counts, as it does for a decoder
// and for the server.
func fillBodyKey(body []byte, pointer, key string) (out []byte, existing string, err error) {
	ptr, err := canonjson.ParsePointer(pointer)
	if err != nil {
		return nil, "", err
	}
	if len(ptr) == 0 {
		return nil, "", errors.New("the pointer names the whole body, not a member")
	}
	if !utf8.ValidString(pointer) {
		return nil, "", errors.New("the pointer is not valid UTF-8")
	}
	// The walk locates the member and its parent; the canonical form it
	// writes on the way is not needed here.
	_, at, ok := canonjson.Walk(nil, body, []canonjson.Pointer{ptr}, 0)
	if !ok {
		return nil, "", errors.New("the body is not one JSON value")
	}
	parent := at.Parent.In(body)
	switch {
	case len(parent) > 0 && parent[0] == '[':
		return nil, "", errors.New("its parent is an array, not an object")
	case len(parent) == 0 || parent[0] != '{':
		return nil, "", errors.New("its parent is missing or not an object")
	}
	quoted := canonjson.AppendString(nil, []byte(key))
	if v := at.Value.In(body); v != nil {
		switch v[0] {
		case '"':
			if s := canonjson.DecodeString(v); s != "" {
				return body, s, nil
			}
		case 'n': // null, filled like ""
		default:
			return nil, "", fmt.Errorf("the member is %s, not a string", describeJSON(v))
		}
		return splice(body, at.Value.Start, at.Value.End, quoted), "", nil
	}
	// A new last member, before the parent's closing brace.
	end := at.Parent.End - 1
	var m []byte
	if len(bytes.TrimLeft(body[at.Parent.Start+1:end], " \t\n\r")) > 0 {
		m = append(m, ',')
	}
	m = canonjson.AppendString(m, []byte(ptr[len(ptr)-1].Name))
	m = append(m, ':')
	m = append(m, quoted...)
	return splice(body, end, end, m), "", nil
}

// splice returns a copy of b with b[i:j] replaced by s.
func splice(b []byte, i, j int, s []byte) []byte {
	out := make([]byte, 0, len(b)-(j-i)+len(s))
	out = append(out, b[:i]...)
	out = append(out, s...)
	return append(out, b[j:]...)
}

// describeJSON names the type of the JSON value v that is not a string.
func describeJSON(v []byte) string {
	switch v[0] {
	case '{', '[':
		return "an object or array"
	case 't', 'f':
		return "a boolean"
	}
	return "a number"
}
