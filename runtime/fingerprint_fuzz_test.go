package idem

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"testing"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/idemgen/idemgen/runtime/idemop"
	"github.com/idemgen/idemgen/runtime/internal/canonjson"
	"github.com/idemgen/idemgen/runtime/internal/keyheader"
)

// FuzzCanonicalJSON checks the canonical re-encoding behind JSON body
// fingerprints. For any input that decodes as one JSON value:
//
//   - the canonical form is valid JSON and decodes to the same document;
//   - it is a fixed point: canonicalising it again changes nothing;
//   - whitespace (indenting or compacting the input), member order
//     (members written in reverse order) and string escapes (every
//     character \u-escaped) do not change it, nor the fingerprint;
//   - an ignored member is ignored: adding /trace_id to an object and
//     ignoring it gives the same canonical form as ignoring it without it;
//   - it is byte for byte the legacy canonical form (decode into any,
//     remove the pointers, json.Marshal; legacyCanonicalJSON), with and
//     without ignored members, and with an ignored array element (/0, /a/0)
//     apart from the marker the legacy form spelled as the string
//     "\u0000removed". Equal bytes mean equal equivalence classes: two
//     bodies share a fingerprint now exactly when they did before, and
//     records stored before the change keep matching their retries.
//
// Input is JSON exactly when the legacy decoder accepts it; input that is
// not JSON must be fingerprinted as raw bytes, without panic.
func FuzzCanonicalJSON(f *testing.F) {
	for _, seed := range []string{
		`{}`, `[]`, `null`, `true`, `0`, `-1.5e+300`, `"x"`,
		`{"b":1,"a":[1,2,{"d":null,"c":false}]}`,
		` { "a" : 1 , "b" : [ ] } `,
		`{"a":1,"a":2}`,
		`{"\u00e9":"caf\u00e9","<&>":"\ud83d\ude00"}`,
		`{"n":12345678901234567890123,"f":1.000,"e":1E2}`,
		`["\u0000removed",1]`,
		`{"trace_id":"t-1","amount":100,"metadata":{"trace_id":"t-2"}}`,
		`[[[[[[[[[[{"deep":true}]]]]]]]]]]`,
		"{\"bad\":\"\xff\xfe\"}",
		`{"a":1} trailing`,
		`not json`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		op := &idemop.Operation{ID: "CreateOrder"}
		p := jsonPayload(op, raw)
		if _, err := decodeJSON(raw); (err == nil) != p.isJSON {
			t.Fatalf("isJSON %v, legacy decoder error %v", p.isJSON, err)
		}
		if !p.isJSON {
			_ = fingerprint(op, nil, p) // a body that is not JSON is hashed as is
			return
		}
		canon := fuzzCanonical(t, raw, op)
		if !json.Valid(canon) {
			t.Fatalf("canonical form is not JSON: %s", canon)
		}
		if again := fuzzCanonical(t, canon, op); !bytes.Equal(again, canon) {
			t.Fatalf("not a fixed point:\n%s\n%s", canon, again)
		}
		orig, err := decodeJSON(raw)
		if err != nil {
			t.Fatal(err)
		}
		for _, legacyOp := range []*idemop.Operation{
			op,
			{ID: "CreateOrder", FingerprintIgnore: []string{"/trace_id", "/items/0/sku"}},
			{ID: "CreateOrder", FingerprintIgnore: []string{"/0", "/a/0", "/a/1/b"}},
			{ID: "CreateOrder", KeyPointer: "/idempotency_key"},
		} {
			got := bytes.ReplaceAll(fuzzCanonical(t, raw, legacyOp), []byte{canonjson.RemovedElement}, []byte(`"\u0000removed"`))
			doc, err := decodeJSON(raw) // removePointer changes the document
			if err != nil {
				t.Fatal(err)
			}
			if want := legacyCanonicalJSON(doc, legacyOp); !bytes.Equal(got, want) {
				t.Fatalf("canonical form under %+v differs from the legacy one:\n%q\n%q", legacyOp, got, want)
			}
		}
		back, err := decodeJSON(canon)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(orig, back) {
			t.Fatalf("canonical form changed the document:\n%#v\n%#v", orig, back)
		}

		var indented, compacted bytes.Buffer
		if err := json.Indent(&indented, raw, "\n", "\t "); err != nil {
			t.Fatalf("Indent of decodable JSON: %v", err)
		}
		if err := json.Compact(&compacted, raw); err != nil {
			t.Fatalf("Compact of decodable JSON: %v", err)
		}
		reordered := fuzzReverseEncode(orig)
		want := fingerprint(op, nil, jsonPayload(op, raw))
		for name, variant := range map[string][]byte{
			"indented": indented.Bytes(), "compacted": compacted.Bytes(), "reordered+escaped": reordered,
		} {
			if got := fuzzCanonical(t, variant, op); !bytes.Equal(got, canon) {
				t.Fatalf("%s input %s\ncanonical %s\nwant      %s", name, variant, got, canon)
			}
			if got := fingerprint(op, nil, jsonPayload(op, variant)); got != want {
				t.Fatalf("%s input changed the fingerprint", name)
			}
		}

		if obj, ok := orig.(map[string]any); ok {
			ignoring := &idemop.Operation{ID: "CreateOrder", FingerprintIgnore: []string{"/trace_id"}}
			without := fuzzObjectJSON(t, obj, false)
			with := fuzzObjectJSON(t, obj, true)
			if a, b := fuzzCanonical(t, without, ignoring), fuzzCanonical(t, with, ignoring); !bytes.Equal(a, b) {
				t.Fatalf("ignored /trace_id still counts:\n%s\n%s", a, b)
			}
		}
	})
}

// fuzzCanonical decodes raw and returns its canonical form under op.
func fuzzCanonical(t *testing.T, raw []byte, op *idemop.Operation) []byte {
	t.Helper()
	p := jsonPayload(op, raw)
	if !p.isJSON {
		t.Fatalf("%q no longer decodes as JSON", raw)
	}
	return p.canon
}

// fuzzObjectJSON encodes obj without its trace_id member, and with one added
// when withTrace is set.
func fuzzObjectJSON(t *testing.T, obj map[string]any, withTrace bool) []byte {
	t.Helper()
	m := make(map[string]any, len(obj)+1)
	for k, v := range obj {
		if k != "trace_id" {
			m[k] = v
		}
	}
	if withTrace {
		m["trace_id"] = []any{"t-123", json.Number("7")}
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// fuzzReverseEncode writes a decoded document with object members in
// reverse order, whitespace between tokens and every string character
// \u-escaped: the same document, spelled as differently as JSON allows.
func fuzzReverseEncode(doc any) []byte {
	var b bytes.Buffer
	var enc func(v any)
	enc = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			keys := make([]string, 0, len(v))
			for k := range v {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			slices.Reverse(keys)
			b.WriteString("{ ")
			for i, k := range keys {
				if i > 0 {
					b.WriteString(" ,\n")
				}
				fuzzEscapeAll(&b, k)
				b.WriteString(" : ")
				enc(v[k])
			}
			b.WriteString(" }")
		case []any:
			b.WriteString("[ ")
			for i, e := range v {
				if i > 0 {
					b.WriteString(" , ")
				}
				enc(e)
			}
			b.WriteString(" ]")
		case string:
			fuzzEscapeAll(&b, v)
		case json.Number:
			b.WriteString(v.String())
		case bool:
			fmt.Fprint(&b, v)
		case nil:
			b.WriteString("null")
		default:
			panic(fmt.Sprintf("unexpected %T in a decoded document", v))
		}
	}
	enc(doc)
	return b.Bytes()
}

// fuzzEscapeAll writes s as a JSON string with every rune \u-escaped
// (surrogate pairs beyond the BMP). Decoded strings are valid UTF-8, so
// utf8.RuneError only stands for U+FFFD itself.
func fuzzEscapeAll(b *bytes.Buffer, s string) {
	b.WriteByte('"')
	for _, r := range s {
		if r == utf8.RuneError || r < 0x10000 {
			fmt.Fprintf(b, `\u%04x`, r)
			continue
		}
		r1, r2 := utf16.EncodeRune(r)
		fmt.Fprintf(b, `\u%04x\u%04x`, r1, r2)
	}
	b.WriteByte('"')
}

// FuzzBodyKey checks the key the server takes from a body, located by the
// canonicalising walk, against the way it was taken before: the body
// decoded by encoding/json, then looked up at the pointer (legacyBodyKey).
// The key, the found flag and the problem must be the same, at the fuzzed
// pointer and at the pointer of every value in the body (those inside
// duplicate members too), for a required and an optional key.
func FuzzBodyKey(f *testing.F) {
	for _, seed := range []struct{ body, pointer string }{
		{`{"idempotency_key":"k1","amount":5}`, "/idempotency_key"},
		{`{"k":"a","k":"b"}`, "/k"},
		{`{"a":{"k":"1"},"a":{}}`, "/a/k"},
		{`{"a":{"k":"1"},"b":2,"a":{"k":"2"}}`, "/a/k"},
		{`{"a":[{"k":"x"},{"k":"y"}]}`, "/a/1/k"},
		{`{"a":[{"k":"x"}]}`, "/a/00/k"},
		{`{"k":null,"n":1,"o":{},"s":"","e":"\u00e9","u":"\ud800","f":"\u0041\/"}`, "/f"},
		{"{\"k\":\"\xff\"}", "/k"},
		{`{"~/":{"":"x"}}`, "/~0~1/"},
		{`"top"`, "/k"},
		{`{"k":"a"} x`, "/k"},
	} {
		f.Add([]byte(seed.body), seed.pointer)
	}
	f.Fuzz(func(t *testing.T, raw []byte, pointer string) {
		ptrs := []string{pointer}
		if _, err := decodeJSON(raw); err == nil {
			ptrs = append(ptrs, rawPointers(raw, 20)...)
		}
		for _, ptr := range ptrs {
			if _, err := canonjson.ParsePointer(ptr); err != nil || ptr == "" {
				continue // bodyKey panics; "" is a header key
			}
			for _, optional := range []bool{false, true} {
				op := &idemop.Operation{ID: "CreateOrder", KeyPointer: ptr, Optional: optional}
				key, ok, prob := bodyKey(op, jsonPayload(op, raw))
				wkey, wok, wprob := legacyBodyKey(op, raw)
				if key != wkey || ok != wok || !reflect.DeepEqual(prob, wprob) {
					t.Fatalf("bodyKey at %q in %q = %q, %v, %v; want %q, %v, %v", ptr, raw, key, ok, prob, wkey, wok, wprob)
				}
			}
		}
	})
}

// legacyBodyKey is bodyKey as it was before the walk located the key: it
// decodes the whole body and looks the pointer up in the document.
func legacyBodyKey(op *idemop.Operation, raw []byte) (string, bool, *Problem) {
	missing := func(detail string) (string, bool, *Problem) {
		if op.Optional {
			return "", false, nil
		}
		return "", false, problemf(http.StatusBadRequest, idemop.CodeMissingKey, "%s", detail)
	}
	doc, err := decodeJSON(raw)
	if err != nil {
		return missing(fmt.Sprintf("the idempotency key is required at %s in a JSON request body", op.KeyPointer))
	}
	ptr, err := canonjson.ParsePointer(op.KeyPointer)
	if err != nil {
		panic(err)
	}
	v, ok := lookupDecoded(doc, ptr)
	if !ok || v == nil {
		return missing(fmt.Sprintf("the idempotency key is required at %s in the request body", op.KeyPointer))
	}
	key, isString := v.(string)
	if !isString {
		return "", false, problemf(http.StatusBadRequest, idemop.CodeInvalidKey, "the idempotency key at %s is not a string", op.KeyPointer)
	}
	if err := keyheader.Check(key); err != nil {
		return "", false, problemf(http.StatusBadRequest, idemop.CodeInvalidKey, "the idempotency key at %s is malformed: %s", op.KeyPointer, keyErrDetail(err))
	}
	return key, true, nil
}
