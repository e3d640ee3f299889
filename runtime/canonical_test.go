package idem

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/idemgen/idemgen/runtime/idemop"
	"github.com/idemgen/idemgen/runtime/internal/canonjson"
)

// legacyCanonicalJSON is the canonicalisation the fingerprint used before
// canonjson.AppendCanonical: decode into any, remove the pointers, json.Marshal.
// It is kept as the reference the fuzz test compares against. Its one
// known flaw, which canonjson.AppendCanonical fixes, is that a removed array
// element encodes like the string "\u0000removed".
func legacyCanonicalJSON(doc any, op *idemop.Operation) []byte {
	ptrs := op.FingerprintIgnore
	if opKeyHeader(op) == "" {
		ptrs = append(ptrs[:len(ptrs):len(ptrs)], op.KeyPointer)
	}
	for _, p := range ptrs {
		ptr, err := canonjson.ParsePointer(p)
		if err != nil {
			continue
		}
		doc = removePointer(doc, ptr)
	}
	b, err := json.Marshal(doc)
	if err != nil {
		panic(fmt.Errorf("idem: encode canonical json: %w", err))
	}
	return b
}

// removePointer deletes the member or element at ptr from doc, in place
// for objects; it returns the (possibly new) document. A pointer that does
// not resolve leaves doc as it was; the empty pointer removes everything.
func removePointer(doc any, ptr canonjson.Pointer) any {
	if len(ptr) == 0 {
		return nil
	}
	parent, ok := lookupDecoded(doc, ptr[:len(ptr)-1])
	if !ok {
		return doc
	}
	last := ptr[len(ptr)-1]
	switch v := parent.(type) {
	case map[string]any:
		delete(v, last.Name)
	case []any:
		if i := last.Index; 0 <= i && i < len(v) {
			// Arrays cannot shrink in place through the parent; mark the
			// element removed instead, which is just as stable a hash.
			v[i] = removed{}
		}
	}
	return doc
}

// decodeJSON decodes exactly one JSON value the way the fingerprint and the
// body key once did, numbers kept as json.Number so that re-encoding is
// exact: the reference the walker's JSON grammar, canonical form and key
// lookup are checked against.
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

// removed stands for an array element left out of the fingerprint.
type removed struct{}

// MarshalJSON implements json.Marshaler.
func (removed) MarshalJSON() ([]byte, error) { return []byte(`"\u0000removed"`), nil }

// canonical returns the canonical form of raw under op, and whether raw is
// JSON.
func canonical(op *idemop.Operation, raw string) (string, bool) {
	p := jsonPayload(op, []byte(raw))
	return string(p.canon), p.isJSON
}

func TestCanonicalJSON(t *testing.T) {
	plain := &idemop.Operation{ID: "A"}
	for _, tc := range []struct {
		in, want string
	}{
		{` { "b" : 1 , "a" : [ 1 , 2 ] } `, `{"a":[1,2],"b":1}`},
		{`{"a":1,"a":2}`, `{"a":2}`},
		{`{"b":1,"a":{"y":1,"x":2},"b":3}`, `{"a":{"x":2,"y":1},"b":3}`},
		{`{"\u0062":1,"a":2}`, `{"a":2,"b":1}`},
		{`"<&>\u2028\/\u00e9"`, `"\u003c\u0026\u003e\u2028/é"`},
		{"\"\xff\"", "\"\xef\xbf\xbd\""},
		{`"\ud800x"`, "\"\xef\xbf\xbdx\""},
		{`"\ud83d\ude00"`, `"😀"`},
		{`1.50`, `1.50`},
		{`-0e+1`, `-0e+1`},
		{`[]`, `[]`},
		{`{}`, `{}`},
		{"\t[true ,false,null]\r\n", `[true,false,null]`},
		{`{"ab":1,"a":2,"b":3,"a":4}`, `{"a":4,"ab":1,"b":3}`},
		{`{"<":1,"&":2,"\u003e":3}`, `{"\u0026":2,"\u003c":1,"\u003e":3}`},
	} {
		got, ok := canonical(plain, tc.in)
		if !ok || got != tc.want {
			t.Errorf("canonical(%s) = %s, %v; want %s", tc.in, got, ok, tc.want)
		}
	}
	// Objects of more members than are sorted by insertion, and of fewer,
	// in reverse order and with duplicates (the last wins), ordered as
	// encoding/json orders them.
	for _, n := range []int{5, 20, 21, 40} {
		var b strings.Builder
		b.WriteString("{")
		for i := n; i > 0; i-- {
			fmt.Fprintf(&b, `"k%02d":%d,`, i%(n*2/3), i)
		}
		b.WriteString(`"a":0}`)
		doc, err := decodeJSON([]byte(b.String()))
		if err != nil {
			t.Fatal(err)
		}
		if got, ok := canonical(plain, b.String()); !ok || got != string(legacyCanonicalJSON(doc, plain)) {
			t.Errorf("canonical(%s) = %s, %v; want %s", b.String(), got, ok, legacyCanonicalJSON(doc, plain))
		}
	}
	deep := strings.Repeat("[", canonjson.MaxDepth) + strings.Repeat("]", canonjson.MaxDepth)
	for _, in := range []string{
		``, ` `, `{`, `{"a"}`, `{"a":1,}`, `[1,]`, `01`, `1.`, `1e`, `-`, `tru`, `nul`, `"a`,
		"\"\x01\"", `"\x"`, `"\u12"`, `{} {}`, `1 2`, `{"a":1} x`, `'a'`, "\ufeff{}",
		"[" + deep + "]",
	} {
		if got, ok := canonical(plain, in); ok {
			t.Errorf("canonical(%.40q) = %s; want not JSON", in, got)
		}
		if _, err := decodeJSON([]byte(in)); err == nil {
			t.Errorf("decodeJSON(%.40q) accepts it", in)
		}
	}
	if _, ok := canonical(plain, deep); !ok {
		t.Errorf("%d nested arrays are not JSON", canonjson.MaxDepth)
	}
}

func TestCanonicalJSONDrop(t *testing.T) {
	for _, tc := range []struct {
		ptrs     []string
		in, want string
	}{
		{[]string{"/a/b/1/c", "/missing/x", "bad"}, `{"a":{"b":[1,{"c":"x"}]},"k/e":"v"}`, `{"a":{"b":[1,{}]},"k/e":"v"}`},
		{[]string{"/k~1e"}, `{"k/e":"v","z":1}`, `{"z":1}`},
		{[]string{"/a"}, `{"a":1,"b":2,"a":3}`, `{"b":2}`},
		{[]string{"/a/x"}, `{"a":{"x":1,"y":2},"a":{"x":3}}`, `{"a":{}}`},
		{[]string{"/t/1"}, `{"t":[1,2,3]}`, "{\"t\":[1,\x00,3]}"},
		{[]string{"/t/01", "/t/-", "/t/3", "/t/+1", "/t/-0"}, `{"t":[1,2,3]}`, `{"t":[1,2,3]}`},
		{[]string{""}, `{"t":[1,2,3]}`, `null`},
		{[]string{"/t", "/t/0"}, `{"t":[1],"u":[1]}`, `{"u":[1]}`},
	} {
		op := &idemop.Operation{ID: "A", FingerprintIgnore: tc.ptrs}
		if got, ok := canonical(op, tc.in); !ok || got != tc.want {
			t.Errorf("ignoring %q: canonical(%s) = %q, %v; want %q", tc.ptrs, tc.in, got, ok, tc.want)
		}
	}
}

// TestRemovedElementCollision: a removed array element used to encode as
// the string "\u0000removed", so a body with an element removed hashed like
// a body holding that string in its place with nothing removed (the ignore
// list itself is not hashed).
func TestRemovedElementCollision(t *testing.T) {
	op := &idemop.Operation{ID: "A", FingerprintIgnore: []string{"/t/0"}}
	plain := &idemop.Operation{ID: "A"}
	a := fingerprint(op, nil, jsonPayload(op, []byte(`{"t":["x",1]}`)))
	b := fingerprint(plain, nil, jsonPayload(plain, []byte(`{"t":["\u0000removed",1]}`)))
	c := fingerprint(op, nil, jsonPayload(op, []byte(`{"t":["y",1]}`)))
	if a != c {
		t.Error("the removed element still counts")
	}
	if a == b {
		t.Error(`a removed element hashes like the string "\u0000removed"`)
	}
	for _, in := range []string{`{"t":["x",1]}`, `{"t":[1]}`, `{"t":[null,1]}`, `{"t":["",1]}`} {
		for _, other := range []string{`{"t":[1]}`, `{"t":[null,1]}`, `{"t":["",1]}`, `{"t":[[],1]}`} {
			if in == other {
				continue
			}
			if got, _ := canonical(op, in); got == mustCanonical(t, plain, other) {
				t.Errorf("%s with /t/0 removed canonicalises like %s", in, other)
			}
		}
	}
}

func mustCanonical(t *testing.T, op *idemop.Operation, raw string) string {
	t.Helper()
	got, ok := canonical(op, raw)
	if !ok {
		t.Fatalf("%s is not JSON", raw)
	}
	return got
}

// TestCanonicalJSONBodyKey: the body key's member is not part of the
// fingerprint, and the key is still found.
func TestCanonicalJSONBodyKey(t *testing.T) {
	op := &idemop.Operation{ID: "A", KeyPointer: "/idempotency_key"}
	p := jsonPayload(op, []byte(`{"idempotency_key":"k1","amount":5}`))
	if !p.isJSON || string(p.canon) != `{"amount":5}` {
		t.Fatalf("canonical = %s, %v", p.canon, p.isJSON)
	}
	if key, ok, prob := bodyKey(op, p); !ok || prob != nil || key != "k1" {
		t.Errorf("bodyKey = %q, %v, %v", key, ok, prob)
	}

	// A key pointer that does not parse is a bug of the operation: bodyKey
	// panics once the body is JSON.
	bad := &idemop.Operation{ID: "A", KeyPointer: "key"}
	if _, ok, prob := bodyKey(bad, jsonPayload(bad, []byte("not json"))); ok || prob == nil || prob.Code != idemop.CodeMissingKey {
		t.Errorf("bad pointer, raw body: %v, %v", ok, prob)
	}
	defer func() {
		if recover() == nil {
			t.Error("bad pointer, JSON body: no panic")
		}
	}()
	bodyKey(bad, jsonPayload(bad, []byte(`{"key":"k1"}`)))
}

func BenchmarkCanonicalJSON(b *testing.B) {
	body := []byte(`{"customer":"cus_3f9a1c","items":[{"sku":"SKU-000042","quantity":2}],"currency":"EUR","note":"leave at the door"}`)
	op := &idemop.Operation{ID: "CreateOrder"}
	b.Run("bytes", func(b *testing.B) {
		b.ReportAllocs()
		var dst []byte
		for b.Loop() {
			var ok bool
			if dst, ok = canonjson.AppendCanonical(dst[:0], body, nil); !ok {
				b.Fatal("not JSON")
			}
		}
	})
	b.Run("legacy-decode-marshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			doc, err := decodeJSON(body)
			if err != nil {
				b.Fatal(err)
			}
			_ = legacyCanonicalJSON(doc, op)
		}
	})
	// An operation whose key is in the body: the fingerprint's canonical
	// form and the key, as identify needs them.
	keyOp := &idemop.Operation{ID: "CreateOrder", KeyPointer: "/idempotency_key"}
	keyed := []byte(`{"idempotency_key":"0199c6d2-7b1e-7cc4-9a43-3f2a9c1e5b7d","customer":"cus_3f9a1c","items":[{"sku":"SKU-000042","quantity":2}],"currency":"EUR","note":"leave at the door"}`)
	b.Run("body-key", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, ok, prob := bodyKey(keyOp, jsonPayload(keyOp, keyed)); !ok || prob != nil {
				b.Fatal("no key", prob)
			}
		}
	})
	if !bytes.Equal(must(canonjson.AppendCanonical(nil, body, nil)), legacyCanonicalJSON(mustDecode(body), op)) {
		b.Fatal("canonical forms differ")
	}
}

func must(b []byte, ok bool) []byte {
	if !ok {
		panic("not JSON")
	}
	return b
}

func mustDecode(b []byte) any {
	doc, err := decodeJSON(b)
	if err != nil {
		panic(err)
	}
	return doc
}
