package idem

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"regexp"
	"testing"
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
		{"missing", `{"amount":5,"note":"<b>"}`, "/idempotency_key",
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
	op := &ClientOperation{ID: "CreatePayment", KeyPointer: "/idempotency_key"}
	var c *Caller // a nil Caller uses the defaults

	call := c.Begin(op)
	b, err := call.MarshalBody(payment{Amount: 5})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"amount":5,"idempotency_key":"` + call.Key() + `"}`; string(b) != want {
		t.Fatalf("filled body %s, want %s", b, want)
	}

	var res CallResult
	call = c.Begin(op, WithResult(&res))
	if b, err = call.MarshalBody(&payment{Amount: 5, Key: "from-body"}); err != nil {
		t.Fatal(err)
	}
	if call.Key() != "from-body" || res.Key != "from-body" || string(b) != `{"amount":5,"idempotency_key":"from-body"}` {
		t.Fatalf("adopted: key %q, result key %q, body %s", call.Key(), res.Key, b)
	}

	call = c.Begin(op, WithKey("given"))
	if b, err = call.MarshalBody(payment{Amount: 5}); err != nil || string(b) != `{"amount":5,"idempotency_key":"given"}` {
		t.Fatalf("WithKey fill: %s, %v", b, err)
	}
	if _, err = call.MarshalBody(payment{Amount: 5, Key: "given"}); err != nil {
		t.Fatalf("WithKey equal to the body's key: %v", err)
	}
	if _, err = call.MarshalBody(payment{Amount: 5, Key: "other"}); !errors.Is(err, ErrKeyConflict) {
		t.Fatalf("WithKey differing from the body's key: %v, want ErrKeyConflict", err)
	}
	if _, err = c.Begin(op).MarshalBody(payment{Key: "bad\nkey"}); !errors.Is(err, ErrInvalidKey) {
		t.Fatalf("invalid key in body: %v, want ErrInvalidKey", err)
	}
	if _, err = c.Begin(op).MarshalBody([]int{1}); !errors.Is(err, ErrBodyKey) {
		t.Fatalf("array body: %v, want ErrBodyKey", err)
	}
	if _, err = c.Begin(op).MarshalBody(make(chan int)); err == nil || errors.Is(err, ErrBodyKey) {
		t.Fatalf("unmarshalable body: %v", err)
	}

	header := &ClientOperation{ID: "CreatePet", KeyHeader: "Idempotency-Key"}
	if b, err = c.Begin(header).MarshalBody(payment{Amount: 1}); err != nil || string(b) != `{"amount":1}` {
		t.Fatalf("header-key operation body: %s, %v", b, err)
	}
}

func TestClientEditor(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name   string
		caller *Caller
		op     ClientOperation
		key    string
		header string
		want   string
	}{
		{"sf-string", NewCaller(WithQuotedKeyHeader(true)), ClientOperation{KeyHeader: "Idempotency-Key"}, `a"b\c`, "Idempotency-Key", `"a\"b\\c"`},
		{"bare by default", NewCaller(), ClientOperation{KeyHeader: "X-Key"}, "abc", "X-Key", "abc"},
		{"default header", NewCaller(), ClientOperation{}, "abc", DefaultKeyHeader, "abc"},
		{"body key", NewCaller(), ClientOperation{KeyPointer: "/k"}, "abc", DefaultKeyHeader, ""},
	}
	for _, tt := range tests {
		req, _ := http.NewRequest(http.MethodPost, "http://example.test/", nil)
		call := tt.caller.Begin(&tt.op, WithKey(tt.key))
		if err := call.Editor()(ctx, req); err != nil {
			t.Fatal(err)
		}
		if got := req.Header.Get(tt.header); got != tt.want {
			t.Errorf("%s: header %s = %q, want %q", tt.name, tt.header, got, tt.want)
		}
		if tt.want != "" && tt.op.KeyHeader != "" {
			// The server's own parser reads the key back.
			if k, err := ParseKeyHeader(tt.want, tt.caller.quoteKeys); err != nil || k != tt.key {
				t.Errorf("%s: server parses %q as %q, %v", tt.name, tt.want, k, err)
			}
		}
	}
}

// FuzzClientFillBodyKey checks, for any JSON document json.Marshal could
// write, that filling the key yields valid JSON holding the key (or the
// member's own value) at the pointer and nothing else changed.
func FuzzClientFillBodyKey(f *testing.F) {
	f.Add(`{"a":1}`, "/k")
	f.Add(`{"k":"","b":[1,{"c":null}]}`, "/k")
	f.Add(`{"p":{"k":"set"}}`, "/p/k")
	f.Add(`{"x":[{"y":{}}]}`, "/x/0/y/k")
	f.Fuzz(func(t *testing.T, doc, pointer string) {
		var v any
		if json.Unmarshal([]byte(doc), &v) != nil {
			return
		}
		body, _ := json.Marshal(v) // compact, as MarshalBody has it
		out, existing, err := fillBodyKey(body, pointer, "fuzz-key")
		if err != nil {
			return
		}
		var got any
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatalf("fillBodyKey(%s, %q) = invalid JSON %s", body, pointer, out)
		}
		ptr, _ := parsePointer(pointer)
		member, ok := lookupDecoded(got, ptr)
		want := "fuzz-key"
		if existing != "" {
			want = existing
		}
		if !ok || member != want {
			t.Fatalf("fillBodyKey(%s, %q) = %s: member %v, want %q", body, pointer, out, member, want)
		}
		removed := removePointer(got, ptr)
		orig := removePointer(v, ptr)
		a, _ := json.Marshal(removed)
		b, _ := json.Marshal(orig)
		if string(a) != string(b) {
			t.Fatalf("fillBodyKey(%s, %q) = %s changed other members", body, pointer, out)
		}
	})
}
