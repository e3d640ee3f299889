package idem

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"regexp"
	"testing"
	"unicode/utf8"

	"github.com/idemgen/idemgen/runtime/idemop"
	"github.com/idemgen/idemgen/runtime/internal/canonjson"
	"github.com/idemgen/idemgen/runtime/internal/keyheader"
)

func TestClientNewCallKey(t *testing.T) {
	hex32 := regexp.MustCompile(`^[0-9a-f]{32}$`)
	seen := make(map[string]bool)
	for range 1000 {
		k := newCallKey()
		if !hex32.MatchString(k) {
			t.Fatalf("key %q is not 32 hex digits", k)
		}
		if seen[k] {
			t.Fatalf("key %q drawn twice", k)
		}
		seen[k] = true
	}
}

func TestClientFillBodyKey(t *testing.T) {
	const key = "k-1"
	tests := []struct {
		name, body, pointer, want, existing string
	}{
		{"missing", `{"amount":5,"note":"\u003cb\u003e"}`, "/idempotency_key",
			`{"amount":5,"note":"\u003cb\u003e","idempotency_key":"k-1"}`, ""},
		{"empty object", `{}`, "/k", `{"k":"k-1"}`, ""},
		{"empty string", `{"idempotency_key":"","amount":1.50}`, "/idempotency_key",
			`{"idempotency_key":"k-1","amount":1.50}`, ""},
		{"null", `{"a":[1,{"b":null}],"idempotency_key":null}`, "/idempotency_key",
			`{"a":[1,{"b":null}],"idempotency_key":"k-1"}`, ""},
		{"set", `{"idempotency_key":"mine","x":true}`, "/idempotency_key",
			`{"idempotency_key":"mine","x":true}`, "mine"},
		{"nested", `{"payment":{"amount":12345678901234567890},"z":false}`, "/payment/key",
			`{"payment":{"amount":12345678901234567890,"key":"k-1"},"z":false}`, ""},
		{"through an array", `{"items":[{"a":1},{"a":2}]}`, "/items/1/key",
			`{"items":[{"a":1},{"a":2,"key":"k-1"}]}`, ""},
		{"escaped pointer", `{"a/b":{"c~d":""}}`, "/a~1b/c~0d", `{"a/b":{"c~d":"k-1"}}`, ""},
		{"same name elsewhere", `{"other":{"key":""},"key":"x"}`, "/key", `{"other":{"key":""},"key":"x"}`, "x"},
		{"member name quoted", `{}`, "/<k>", `{"\u003ck\u003e":"k-1"}`, ""},
		// Bytes other than the member's are kept as they are.
		{"spacing kept", "{ \"a\" : \"<b>\" ,\n\"k\" : null }", "/k", "{ \"a\" : \"<b>\" ,\n\"k\" : \"k-1\" }", ""},
		{"appended after spacing", `{ "a" : 1 }`, "/k", `{ "a" : 1 ,"k":"k-1"}`, ""},
		{"empty object with spacing", `{ }`, "/k", `{ "k":"k-1"}`, ""},
		{"escaped existing", `{"k":"\u0061\/b"}`, "/k", `{"k":"\u0061\/b"}`, "a/b"},
		// Of duplicates the last counts, as for the server's decoder.
		{"duplicate member", `{"k":"a","k":""}`, "/k", `{"k":"a","k":"k-1"}`, ""},
		{"duplicate member set", `{"k":"","k":"b"}`, "/k", `{"k":"","k":"b"}`, "b"},
		{"duplicate parent", `{"p":{"k":"a"},"p":{}}`, "/p/k", `{"p":{"k":"a"},"p":{"k":"k-1"}}`, ""},
	}
	for _, tt := range tests {
		out, existing, err := fillBodyKey([]byte(tt.body), tt.pointer, key)
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		if string(out) != tt.want || existing != tt.existing {
			t.Errorf("%s: got %s, %q; want %s, %q", tt.name, out, existing, tt.want, tt.existing)
		}
		if !json.Valid(out) {
			t.Errorf("%s: invalid JSON %s", tt.name, out)
		}
	}
	// The key is quoted as json.Marshal quotes it, invalid UTF-8 included.
	for _, k := range []string{"a<b>&\u2028\"\\\n", "a\xffb"} {
		want, _ := json.Marshal(map[string]string{"k": k})
		if out, _, err := fillBodyKey([]byte(`{}`), "/k", k); err != nil || string(out) != string(want) {
			t.Errorf("key %q: got %s, %v; want %s", k, out, err, want)
		}
	}
	failures := []struct{ name, body, pointer string }{
		{"whole document", `{}`, ""},
		{"bad pointer", `{}`, "key"},
		{"bad escape", `{}`, "/a~2"},
		{"missing parent", `{"a":1}`, "/payment/key"},
		{"null body", `null`, "/key"},
		{"parent is an array", `{"a":[]}`, "/a/0"},
		{"parent is a string", `{"a":"s"}`, "/a/key"},
		{"number member", `{"key":5}`, "/key"},
		{"object member", `{"key":{}}`, "/key"},
		{"array index out of range", `{"items":[{}]}`, "/items/1/key"},
		{"array index with a sign", `{"items":[{}]}`, "/items/+0/key"},
		{"pointer not UTF-8", `{}`, "/\xca"},
		{"not JSON", `{"a":1} x`, "/k"},
		{"duplicate parent not an object", `{"p":{},"p":1}`, "/p/k"},
		{"duplicate member not a string", `{"k":"","k":1}`, "/k"},
	}
	for _, tt := range failures {
		if _, _, err := fillBodyKey([]byte(tt.body), tt.pointer, key); err == nil {
			t.Errorf("%s: fillBodyKey(%s, %q) succeeded", tt.name, tt.body, tt.pointer)
		}
	}
}

type payment struct {
	Amount int    `json:"amount"`
	Key    string `json:"idempotency_key,omitempty"`
}

func TestClientMarshalBody(t *testing.T) {
	op := &idemop.ClientOperation{ID: "CreatePayment", KeyPointer: "/idempotency_key"}
	var c *Caller // a nil Caller uses the defaults

	call := c.Begin(op)
	b, err := call.marshalBody(payment{Amount: 5})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"amount":5,"idempotency_key":"` + call.Key() + `"}`; string(b) != want {
		t.Fatalf("filled body %s, want %s", b, want)
	}

	var res CallResult
	call = c.Begin(op, WithResult(&res))
	if b, err = call.marshalBody(&payment{Amount: 5, Key: "from-body"}); err != nil {
		t.Fatal(err)
	}
	if call.Key() != "from-body" || res.Key != "from-body" || string(b) != `{"amount":5,"idempotency_key":"from-body"}` {
		t.Fatalf("adopted: key %q, result key %q, body %s", call.Key(), res.Key, b)
	}

	call = c.Begin(op, WithKey("given"))
	if b, err = call.marshalBody(payment{Amount: 5}); err != nil || string(b) != `{"amount":5,"idempotency_key":"given"}` {
		t.Fatalf("WithKey fill: %s, %v", b, err)
	}
	if _, err = call.marshalBody(payment{Amount: 5, Key: "given"}); err != nil {
		t.Fatalf("WithKey equal to the body's key: %v", err)
	}
	if _, err = call.marshalBody(payment{Amount: 5, Key: "other"}); !errors.Is(err, ErrBodyKeyDiffers) {
		t.Fatalf("WithKey differing from the body's key: %v, want ErrBodyKeyDiffers", err)
	}
	if _, err = c.Begin(op).marshalBody(payment{Key: "bad\nkey"}); !errors.Is(err, ErrInvalidKey) {
		t.Fatalf("invalid key in body: %v, want ErrInvalidKey", err)
	}
	if _, err = c.Begin(op).marshalBody([]int{1}); !errors.Is(err, ErrBodyKey) {
		t.Fatalf("array body: %v, want ErrBodyKey", err)
	}
	if _, err = c.Begin(op).marshalBody(make(chan int)); err == nil || errors.Is(err, ErrBodyKey) {
		t.Fatalf("unmarshalable body: %v", err)
	}

	header := &idemop.ClientOperation{ID: "CreatePet", KeyHeader: "Idempotency-Key"}
	if b, err = c.Begin(header).marshalBody(payment{Amount: 1}); err != nil || string(b) != `{"amount":1}` {
		t.Fatalf("header-key operation body: %s, %v", b, err)
	}
}

func TestClientEditor(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name   string
		caller *Caller
		op     idemop.ClientOperation
		key    string
		header string
		want   string
	}{
		{"sf-string", NewCaller(WithQuotedKeyHeader(true)), idemop.ClientOperation{KeyHeader: "Idempotency-Key"}, `a"b\c`, "Idempotency-Key", `"a\"b\\c"`},
		{"bare by default", NewCaller(), idemop.ClientOperation{KeyHeader: "X-Key"}, "abc", "X-Key", "abc"},
		{"default header", NewCaller(), idemop.ClientOperation{}, "abc", idemop.DefaultKeyHeader, "abc"},
		{"body key", NewCaller(), idemop.ClientOperation{KeyPointer: "/k"}, "abc", idemop.DefaultKeyHeader, ""},
	}
	for _, tt := range tests {
		req, _ := http.NewRequest(http.MethodPost, "http://example.test/", nil)
		call := tt.caller.Begin(&tt.op, WithKey(tt.key))
		if err := call.editor()(ctx, req); err != nil {
			t.Fatal(err)
		}
		if got := req.Header.Get(tt.header); got != tt.want {
			t.Errorf("%s: header %s = %q, want %q", tt.name, tt.header, got, tt.want)
		}
		if tt.want != "" && tt.op.KeyHeader != "" {
			// The server's own parser reads the key back.
			if k, err := keyheader.Parse(tt.want, tt.caller.quoteKeys); err != nil || k != tt.key {
				t.Errorf("%s: server parses %q as %q, %v", tt.name, tt.want, k, err)
			}
		}
	}
}

// FuzzClientFillBodyKey checks fillBodyKey against the document as
// encoding/json decodes it, for the body json.Marshal writes (compact, as
// MarshalBody has it) and for the document as given (spacing, escapes,
// duplicate members), at the fuzzed pointer, at the pointer of every value
// of the document and at a new member below each. It must fail exactly
// when the pointer's parent is not an object or its member is neither a
// string nor null; otherwise the result is valid JSON holding the key (or
// the member's own non-empty string, with the body unchanged) at the
// pointer, and nothing else changed.
func FuzzClientFillBodyKey(f *testing.F) {
	f.Add(`{"a":1}`, "/k")
	f.Add(`{"k":"","b":[1,{"c":null}]}`, "/k")
	f.Add(`{"p":{"k":"set"}}`, "/p/k")
	f.Add(`{"x":[{"y":{}}]}`, "/x/0/y/k")
	f.Add(`{"p":{"k":"a"},"p":{ },"k":"","k":null}`, "/p/k")
	f.Add(`{"a~/b":{"\u00e9":"\ud83d"}}`, "/a~0~1b/\u00e9")
	f.Fuzz(func(t *testing.T, doc, pointer string) {
		v, err := decodeJSON([]byte(doc))
		if err != nil {
			return
		}
		compact, _ := json.Marshal(v)
		for _, body := range [][]byte{compact, []byte(doc)} {
			for _, p := range rawPointers(body, 20) {
				fuzzFillBodyKey(t, body, p)
				fuzzFillBodyKey(t, body, p+"/k")
			}
			fuzzFillBodyKey(t, body, pointer)
		}
	})
}

func fuzzFillBodyKey(t *testing.T, body []byte, pointer string) {
	t.Helper()
	const key = "fuzz-key"
	doc, err := decodeJSON(body)
	if err != nil {
		t.Fatal(err)
	}
	// What the decoded document says fillBodyKey must do.
	ptr, err := canonjson.ParsePointer(pointer)
	fail := err != nil || len(ptr) == 0 || !utf8.ValidString(pointer)
	var member any
	if !fail {
		parent, _ := lookupDecoded(doc, ptr[:len(ptr)-1])
		obj, isObject := parent.(map[string]any)
		member = obj[ptr[len(ptr)-1].Name]
		switch member.(type) {
		case string, nil:
			fail = !isObject
		default:
			fail = true
		}
	}
	want, _ := member.(string)

	out, existing, err := fillBodyKey(body, pointer, key)
	if (err != nil) != fail {
		t.Fatalf("fillBodyKey(%s, %q) error %v, want failure %v", body, pointer, err, fail)
	}
	if fail {
		return
	}
	if existing != want {
		t.Fatalf("fillBodyKey(%s, %q) existing %q, want %q", body, pointer, existing, want)
	}
	if existing != "" && !bytes.Equal(out, body) {
		t.Fatalf("fillBodyKey(%s, %q) = %s, want the body unchanged", body, pointer, out)
	}
	if want == "" {
		want = key
	}
	// Bytes were only added, or put in place of a "" or null.
	pre := 0
	for pre < len(body) && pre < len(out) && body[pre] == out[pre] {
		pre++
	}
	suf := 0
	for suf < len(body)-pre && suf < len(out)-pre && body[len(body)-1-suf] == out[len(out)-1-suf] {
		suf++
	}
	if len(body)-pre-suf > len("null") {
		t.Fatalf("fillBodyKey(%s, %q) = %s changed %q", body, pointer, out, body[pre:len(body)-suf])
	}
	got, err := decodeJSON(out)
	if err != nil {
		t.Fatalf("fillBodyKey(%s, %q) = invalid JSON %s", body, pointer, out)
	}
	if m, ok := lookupDecoded(got, ptr); !ok || m != want {
		t.Fatalf("fillBodyKey(%s, %q) = %s: member %v, want %q", body, pointer, out, m, want)
	}
	a, _ := json.Marshal(removePointer(got, ptr))
	b, _ := json.Marshal(removePointer(doc, ptr))
	if !bytes.Equal(a, b) {
		t.Fatalf("fillBodyKey(%s, %q) = %s changed other members", body, pointer, out)
	}
}

func BenchmarkClientFillBodyKey(b *testing.B) {
	const order = `"customer":"cus_3f9a1c","items":[{"sku":"SKU-000042","quantity":2}],"currency":"EUR","note":"leave at the door"`
	for _, bc := range []struct{ name, body string }{
		{"missing", `{` + order + `}`},
		{"empty", `{"idempotency_key":"",` + order + `}`},
		{"set", `{"idempotency_key":"0199c6d2-7b1e-7cc4-9a43-3f2a9c1e5b7d",` + order + `}`},
	} {
		b.Run(bc.name, func(b *testing.B) {
			body := []byte(bc.body)
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := fillBodyKey(body, "/idempotency_key", "0199c6d2-7b1e-7cc4-9a43-3f2a9c1e5b7e"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
