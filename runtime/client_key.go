package idem

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// ErrBodyKey is returned (wrapped) by [Call.MarshalBody] when the key cannot
// be placed at the operation's KeyPointer: the pointer is malformed, its
// parent is missing or not an object, or the member is not a string.
var ErrBodyKey = errors.New("idem: cannot place the key in the body")

// ErrKeyConflict is returned by [Call.MarshalBody] when the body already
// carries a key that differs from the one given with [WithKey].
var ErrKeyConflict = errors.New("idem: body key differs from the call's key")

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
// writes it. When the member holds a non-empty string it returns body
// unchanged and that string as existing; when it is missing, "" or null, it
// returns a copy of body with the member set to key (appended last when
// missing). Everything else keeps its bytes and order.
func fillBodyKey(body []byte, pointer, key string) (out []byte, existing string, err error) {
	ptr, err := parsePointer(pointer)
	if err != nil {
		return nil, "", err
	}
	if len(ptr) == 0 {
		return nil, "", errors.New("the pointer names the whole body, not a member")
	}
	if !utf8.ValidString(pointer) {
		return nil, "", errors.New("the pointer is not valid UTF-8")
	}
	w := &keyWriter{dec: json.NewDecoder(bytes.NewReader(body)), want: ptr, key: key}
	w.dec.UseNumber()
	w.out = make([]byte, 0, len(body)+len(key)+len(ptr[len(ptr)-1].name)+8)
	if err := w.value(0, true); err != nil {
		return nil, "", err
	}
	if !w.parentSeen {
		return nil, "", errors.New("its parent is missing or not an object")
	}
	if w.existing != "" {
		return body, w.existing, nil
	}
	return w.out, "", nil
}

// keyWriter re-encodes a JSON document token by token, filling in the key.
type keyWriter struct {
	dec        *json.Decoder
	want       jsonPointer
	key        string
	out        []byte
	parentSeen bool   // the object holding the member was found
	existing   string // the member's non-empty value, if any
}

// value copies one value at depth; onPath tells whether the tokens so far
// match the first depth tokens of the pointer.
func (w *keyWriter) value(depth int, onPath bool) error {
	tok, err := w.dec.Token()
	if err != nil {
		return err
	}
	switch t := tok.(type) {
	case json.Delim:
		if t == '{' {
			return w.object(depth, onPath)
		}
		return w.array(depth, onPath)
	case string:
		w.appendString(t)
	case json.Number:
		w.out = append(w.out, t...)
	case bool:
		w.out = strconv.AppendBool(w.out, t)
	case nil:
		w.out = append(w.out, "null"...)
	}
	return nil
}

func (w *keyWriter) object(depth int, onPath bool) error {
	isParent := onPath && depth == len(w.want)-1
	if isParent {
		w.parentSeen = true
	}
	w.out = append(w.out, '{')
	n, found := 0, false
	for w.dec.More() {
		tok, err := w.dec.Token()
		if err != nil {
			return err
		}
		name, _ := tok.(string)
		if n > 0 {
			w.out = append(w.out, ',')
		}
		n++
		w.appendString(name)
		w.out = append(w.out, ':')
		if isParent && name == w.want[depth].name {
			found = true
			err = w.member()
		} else {
			err = w.value(depth+1, onPath && depth < len(w.want)-1 && name == w.want[depth].name)
		}
		if err != nil {
			return err
		}
	}
	if _, err := w.dec.Token(); err != nil { // '}'
		return err
	}
	if isParent && !found {
		if n > 0 {
			w.out = append(w.out, ',')
		}
		w.appendString(w.want[depth].name)
		w.out = append(w.out, ':')
		w.appendString(w.key)
	}
	w.out = append(w.out, '}')
	return nil
}

func (w *keyWriter) array(depth int, onPath bool) error {
	if onPath && depth == len(w.want)-1 {
		return errors.New("its parent is an array, not an object")
	}
	w.out = append(w.out, '[')
	for i := 0; w.dec.More(); i++ {
		if i > 0 {
			w.out = append(w.out, ',')
		}
		if err := w.value(depth+1, onPath && depth < len(w.want) && w.want[depth].index == i); err != nil {
			return err
		}
	}
	_, err := w.dec.Token() // ']'
	w.out = append(w.out, ']')
	return err
}

// member handles the key member itself.
func (w *keyWriter) member() error {
	tok, err := w.dec.Token()
	if err != nil {
		return err
	}
	switch t := tok.(type) {
	case string:
		if t != "" {
			w.existing = t
			w.appendString(t)
			return nil
		}
	case nil:
	default:
		return fmt.Errorf("the member is %v, not a string", describeToken(tok))
	}
	w.appendString(w.key)
	return nil
}

func (w *keyWriter) appendString(s string) {
	b, _ := json.Marshal(s) // a string always marshals
	w.out = append(w.out, b...)
}

func describeToken(tok any) string {
	switch tok.(type) {
	case json.Delim:
		return "an object or array"
	case json.Number:
		return "a number"
	case bool:
		return "a boolean"
	}
	return "of another type"
}
