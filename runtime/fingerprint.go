package idem

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
)

// payload is a request body as the fingerprint sees it.
type payload struct {
	raw    []byte // the bytes as sent (or as encoded, for a strict JSON body)
	doc    any    // the decoded JSON document, when isJSON
	isJSON bool   // raw decoded as one JSON value
}

// jsonPayload decodes raw as JSON; if it is not exactly one JSON value the
// payload is kept raw.
func jsonPayload(raw []byte) payload {
	doc, err := decodeJSON(raw)
	if err != nil {
		return payload{raw: raw}
	}
	return payload{raw: raw, doc: doc, isJSON: true}
}

// decodeJSON decodes exactly one JSON value, numbers kept as json.Number so
// that re-encoding is exact.
func decodeJSON(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("idem: decode json body: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("idem: decode json body: trailing data")
	}
	return doc, nil
}

// isJSONContentType reports whether a Content-Type is application/json or
// a +json type.
func isJSONContentType(ct string) bool {
	if ct == "" {
		return false
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return false
	}
	return mt == "application/json" || (strings.HasPrefix(mt, "application/") && strings.HasSuffix(mt, "+json"))
}

// fingerprint hashes what identifies a request: the operation, the method
// and escaped path (which carries the path parameters), the query with its
// keys sorted, the listed headers in order, and the body. A JSON body is
// re-encoded canonically (sorted members, no insignificant whitespace) after
// the ignore pointers and the body-key member are removed; any other body is
// hashed as is. r may be nil (for [Do]).
func fingerprint(op *Operation, r *http.Request, body payload) string {
	h := sha256.New()
	field(h, "op", op.ID)
	if r != nil {
		field(h, "method", r.Method)
		field(h, "path", r.URL.EscapedPath())
		field(h, "query", canonicalQuery(r))
		for _, name := range op.FingerprintHeaders {
			name = http.CanonicalHeaderKey(name)
			vals := r.Header.Values(name)
			field(h, "header", name)
			field(h, "count", fmt.Sprint(len(vals)))
			for _, v := range vals {
				field(h, "value", v)
			}
		}
	}
	if body.isJSON {
		field(h, "json", string(canonicalJSON(body.doc, op)))
	} else {
		field(h, "raw", string(body.raw))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// field writes a tagged, length-prefixed field, so that no two different
// sequences of fields hash the same bytes.
func field(h hash.Hash, tag, val string) {
	var n [8]byte
	h.Write([]byte(tag))
	binary.BigEndian.PutUint64(n[:], uint64(len(val)))
	h.Write(n[:])
	h.Write([]byte(val))
}

// canonicalQuery renders the query with sorted keys (values keep their
// order); an unparsable query is used as sent.
func canonicalQuery(r *http.Request) string {
	vals, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return r.URL.RawQuery
	}
	return vals.Encode()
}

// canonicalJSON re-encodes doc with the ignore pointers and the body-key
// pointer removed. encoding/json writes map members in sorted order and
// json.Number values verbatim, which makes the encoding canonical. doc is
// modified.
func canonicalJSON(doc any, op *Operation) []byte {
	ptrs := op.FingerprintIgnore
	if op.keyHeader() == "" { // a body key is not part of the fingerprint
		ptrs = append(ptrs[:len(ptrs):len(ptrs)], op.KeyPointer)
	}
	for _, p := range ptrs {
		toks, err := parsePointer(p)
		if err != nil {
			continue // the generator validates pointers; a bad one removes nothing
		}
		doc = removePointer(doc, toks)
	}
	b, err := json.Marshal(doc)
	if err != nil { // decoded JSON always re-encodes
		panic(fmt.Errorf("idem: encode canonical json: %w", err))
	}
	return b
}
