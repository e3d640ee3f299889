package extension_test

import (
	"encoding/json"
	"errors"
	"flag"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/idemgen/idemgen/internal/extension"
	"github.com/idemgen/idemgen/runtime/idemop"
)

// CI passes -update to every package under internal/ when it rewrites
// golden files; this package has none.
var _ = flag.Bool("update", false, "unused here")

// decode turns JSON into the values kin-openapi hands over.
func decode(t testing.TB, src string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(src), &v); err != nil {
		t.Fatalf("%s: %v", src, err)
	}
	return v
}

func TestParseOperationErrors(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`"yes"`, `x-idempotent: must be true, false (explicit opt-out) or an object, got string "yes"`},
		{`1`, `x-idempotent: must be true, false (explicit opt-out) or an object, got number 1`},
		{`null`, `x-idempotent: must be true, false (explicit opt-out) or an object, got null`},
		{`{"lok":"1s"}`, `x-idempotent.lok: unknown field; valid fields are key, provider, required, retention, lock, wait, final, transient, fingerprint, retry`},
		{`{"key":"Idempotency-Key"}`, `x-idempotent.key: must be an object with header (e.g. Idempotency-Key) or body (a JSON Pointer such as /idempotency_key), got string "Idempotency-Key"`},
		{`{"key":{}}`, `x-idempotent.key: must set header (e.g. Idempotency-Key) or body (a JSON Pointer such as /idempotency_key)`},
		{`{"key":{"header":"A","body":"/a"}}`, `x-idempotent.key: set header or body, not both`},
		{`{"key":{"header":""}}`, `x-idempotent.key.header: must not be empty: use a header name such as Idempotency-Key`},
		{`{"key":{"header":"a b"}}`, `x-idempotent.key.header: "a b" is not a valid HTTP header name (letters, digits and !#$%&'*+-.^_` + "`" + `|~ only)`},
		{`{"key":{"header":"X","cookie":"c"}}`, `x-idempotent.key.cookie: unknown field; valid fields are header, body`},
		{`{"key":{"body":"a"}}`, `x-idempotent.key.body: "a" is not a JSON Pointer: it must start with "/" (e.g. "/idempotency_key")`},
		{`{"key":{"body":"/a~2"}}`, `x-idempotent.key.body: "/a~2" is not a JSON Pointer: "~" must be followed by 0 or 1 ("~0" is "~", "~1" is "/")`},
		{`{"key":{"body":7}}`, `x-idempotent.key.body: must be a JSON Pointer such as /idempotency_key, or a list of them whose values together are the key, got number 7`},
		{`{"required":"yes"}`, `x-idempotent.required: must be true or false, got string "yes"`},
		{`{"retention":"0s"}`, `x-idempotent.retention: must be positive, got string "0s"`},
		{`{"lock":"-5s"}`, `x-idempotent.lock: must be positive, got string "-5s"`},
		{`{"lock":"5"}`, `x-idempotent.lock: "5" is not a duration: use a Go duration such as "30s", "5m" or "24h"`},
		{`{"wait":"-1ms"}`, `x-idempotent.wait: must not be negative, got string "-1ms"`},
		{`{"wait":1}`, `x-idempotent.wait: must be a duration string such as "30s", got number 1`},
		{`{"fingerprint":[]}`, `x-idempotent.fingerprint: must be an object with ignore and/or headers, got a list`},
		{`{"fingerprint":{"ignore":"/a"}}`, `x-idempotent.fingerprint.ignore: must be a list of JSON Pointers such as /metadata/trace_id, got string "/a"`},
		{`{"fingerprint":{"ignore":["/a",3]}}`, `x-idempotent.fingerprint.ignore[1]: must be one of JSON Pointers such as /metadata/trace_id, got number 3`},
		{`{"fingerprint":{"headers":["X-A","x-a"]}}`, `x-idempotent.fingerprint.headers[1]: "x-a" is listed twice`},
		{`{"retry":true}`, `x-idempotent.retry: must be an object (maxAttempts, initialInterval, maxInterval, multiplier, maxElapsed, attemptTimeout, retryOn), got boolean true`},
		{`{"retry":{"maxAttempts":0}}`, `x-idempotent.retry.maxAttempts: must be an integer of at least 1, got number 0`},
		{`{"retry":{"maxAttempts":1.5}}`, `x-idempotent.retry.maxAttempts: must be an integer of at least 1, got number 1.5`},
		{`{"retry":{"multiplier":0.5}}`, `x-idempotent.retry.multiplier: must be a number from 1 to 100, got number 0.5`},
		{`{"retry":{"initialInterval":"0s"}}`, `x-idempotent.retry.initialInterval: must be positive, got string "0s"`},
		{`{"retry":{"retryOn":[409,99]}}`, `x-idempotent.retry.retryOn[1]: must be an HTTP status code from 100 to 599, got number 99`},
		{`{"retry":{"retryOn":[503,503]}}`, `x-idempotent.retry.retryOn[1]: 503 is listed twice`},
		{`{"retry":{"retryOn":409}}`, `x-idempotent.retry.retryOn: must be a list of HTTP status codes such as [409, 429, 503], got number 409`},
		{`{"retry":{"retryOn":[422]}}`, `x-idempotent.retry.retryOn[0]: the runtime refuses it (idem: invalid retry policy: status 422 cannot be retried): the generated client would fail every call`},
		{`{"retry":{"retryOn":[503,400]}}`, `x-idempotent.retry.retryOn[1]: the runtime refuses it (idem: invalid retry policy: status 400 cannot be retried): the generated client would fail every call`},
	} {
		_, _, err := extension.ParseOperation(decode(t, tc.in))
		if err == nil {
			t.Errorf("%s: no error, want %s", tc.in, tc.want)
			continue
		}
		if err.Error() != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.in, err, tc.want)
		}
		var ext *extension.Error
		if !errors.As(err, &ext) {
			t.Errorf("%s: %T is not an *extension.Error", tc.in, err)
		}
	}
}

// TestParseOperationReportsEveryProblem: one object with several problems
// gives one *Error per problem, in the order of the documented fields.
func TestParseOperationReportsEveryProblem(t *testing.T) {
	_, _, err := extension.ParseOperation(decode(t, `{"lok":"1s","zzz":1,"key":{"header":"a b"},"lock":"5","retry":{"retryOn":[422,200,"x",503,503],"multiplier":0}}`))
	var got []string
	for _, e := range extension.Errors(err) {
		got = append(got, e.Error())
	}
	want := []string{
		`x-idempotent.lok: unknown field; valid fields are key, provider, required, retention, lock, wait, final, transient, fingerprint, retry`,
		`x-idempotent.zzz: unknown field; valid fields are key, provider, required, retention, lock, wait, final, transient, fingerprint, retry`,
		`x-idempotent.key.header: "a b" is not a valid HTTP header name (letters, digits and !#$%&'*+-.^_` + "`" + `|~ only)`,
		`x-idempotent.lock: "5" is not a duration: use a Go duration such as "30s", "5m" or "24h"`,
		`x-idempotent.retry.multiplier: must be a number from 1 to 100, got number 0`,
		`x-idempotent.retry.retryOn[0]: the runtime refuses it (idem: invalid retry policy: status 422 cannot be retried): the generated client would fail every call`,
		`x-idempotent.retry.retryOn[1]: the runtime refuses it (idem: invalid retry policy: status 200 cannot be retried): the generated client would fail every call`,
		`x-idempotent.retry.retryOn[2]: must be an HTTP status code from 100 to 599, got string "x"`,
		`x-idempotent.retry.retryOn[4]: 503 is listed twice`,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("errors:\n got %q\nwant %q", got, want)
	}
}

// TestRetryOnAgreesWithRuntime: the generator accepts a retryOn status
// exactly when the runtime's RetryPolicy.Validate does, so no generated
// client fails its calls before the first attempt.
func TestRetryOnAgreesWithRuntime(t *testing.T) {
	accepted := 0
	for n := 100; n <= 599; n++ {
		_, s, err := extension.ParseOperation(map[string]any{"retry": map[string]any{"retryOn": []any{float64(n)}}})
		if err == nil {
			_, err = extension.Resolve(extension.Spec{}, s)
		}
		runtimeErr := idemop.RetryPolicy{RetryOn: []int{n}}.Validate()
		if (err == nil) != (runtimeErr == nil) {
			t.Errorf("retryOn [%d]: generator error %v, runtime error %v", n, err, runtimeErr)
		}
		if err == nil {
			accepted++
		}
	}
	if accepted == 0 || accepted == 500 {
		t.Errorf("%d of 500 statuses accepted: the test proves nothing", accepted)
	}
}

// TestDefaultsAreTheRuntimes: an operation that says nothing resolves to the
// runtime's own defaults, and its policy is one the runtime accepts.
func TestDefaultsAreTheRuntimes(t *testing.T) {
	s, err := extension.Resolve(extension.Spec{}, extension.Spec{})
	if err != nil {
		t.Fatal(err)
	}
	// The runtime's default budget is the operation's lock plus a margin.
	want := idemop.DefaultRetryPolicy()
	want.MaxElapsed = idemop.DefaultMaxElapsed(s.Lock)
	if !reflect.DeepEqual(s.Retry.Policy(), want) {
		t.Errorf("retry policy %+v, runtime default %+v", s.Retry.Policy(), want)
	}
	if s.KeyHeader != idemop.DefaultKeyHeader || s.Retention != idemop.DefaultRetention || s.Lock != idemop.DefaultLock {
		t.Errorf("key header %q, retention %v, lock %v; runtime defaults %q, %v, %v",
			s.KeyHeader, s.Retention, s.Lock, idemop.DefaultKeyHeader, idemop.DefaultRetention, idemop.DefaultLock)
	}
	if err := s.Retry.Policy().Validate(); err != nil {
		t.Error(err)
	}
}

func TestParseOperationOptOut(t *testing.T) {
	for in, want := range map[string]bool{`true`: true, `false`: false, `{}`: true} {
		enabled, _, err := extension.ParseOperation(decode(t, in))
		if err != nil || enabled != want {
			t.Errorf("%s: enabled %v, err %v; want %v", in, enabled, err, want)
		}
	}
}

func TestParseDocument(t *testing.T) {
	if _, err := extension.ParseDocument(true); err == nil || !strings.Contains(err.Error(), "at document level") {
		t.Errorf("ParseDocument(true) = %v, want a document-level error", err)
	}
	if _, err := extension.ParseDocument(decode(t, `{"retention":"1h"}`)); err != nil {
		t.Error(err)
	}
}

func TestResolve(t *testing.T) {
	parse := func(src string) extension.Spec {
		t.Helper()
		_, s, err := extension.ParseOperation(decode(t, src))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	doc := parse(`{"key":{"header":"X-Key"},"retention":"48h","final":["2xx","4xx",500],"fingerprint":{"headers":["x-account-id"]},"retry":{"maxAttempts":7,"retryOn":[503]}}`)

	got, err := extension.Resolve(extension.Spec{}, extension.Spec{})
	if err != nil {
		t.Fatal(err)
	}
	want := extension.Settings{
		KeyHeader: "Idempotency-Key", Required: true, Retention: 24 * time.Hour, Lock: 30 * time.Second,
		Final: []string{"2xx", "3xx", "4xx"},
		Retry: extension.RetrySettings{MaxAttempts: 5, InitialInterval: 200 * time.Millisecond, MaxInterval: 5 * time.Second,
			Multiplier: 2, MaxElapsed: time.Minute, RetryOn: []int{409, 429, 502, 503, 504}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("defaults:\n got %+v\nwant %+v", got, want)
	}

	got, err = extension.Resolve(doc, parse(`{"key":{"body":"/k"},"lock":"5s","transient":[402],"retry":{"initialInterval":"1s"}}`))
	if err != nil {
		t.Fatal(err)
	}
	want = extension.Settings{
		KeyPointer: "/k", Required: true, Retention: 48 * time.Hour, Lock: 5 * time.Second,
		FingerprintHeaders: []string{"X-Account-Id"},
		Final:              []string{"2xx", "4xx", "500"}, Transient: []int{402},
		Retry: extension.RetrySettings{MaxAttempts: 7, InitialInterval: time.Second, MaxInterval: 5 * time.Second,
			Multiplier: 2, MaxElapsed: 35 * time.Second, RetryOn: []int{503}}, // the lock (5s) + 30s

	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("merged:\n got %+v\nwant %+v", got, want)
	}

	if _, err := extension.Resolve(doc, parse(`{"key":{"header":"X-Account-Id"}}`)); err == nil ||
		err.Error() != `x-idempotent.fingerprint.headers[0]: "x-account-id" is the key header, which is never part of the fingerprint; remove it` {
		t.Errorf("key header in fingerprint: %v", err)
	}
	if _, err := extension.Resolve(extension.Spec{}, parse(`{"retry":{"maxInterval":"100ms"}}`)); err == nil ||
		err.Error() != `x-idempotent.retry.maxInterval: must be at least initialInterval (200ms), got 100ms` {
		t.Errorf("maxInterval below initialInterval: %v", err)
	}
}

// FuzzParseOperation feeds arbitrary JSON to the parser: it must not panic,
// must return an *extension.Error whenever it fails, and what it accepts must
// resolve or fail with an *extension.Error too.
func FuzzParseOperation(f *testing.F) {
	for _, seed := range []string{
		`true`, `false`, `{}`, `"x"`, `{"key":{"header":"Idempotency-Key"}}`, `{"key":{"body":"/a/~0b/~1c"}}`,
		`{"required":false,"retention":"24h","lock":"30s","wait":0}`,
		`{"fingerprint":{"ignore":["/a"],"headers":["X-A"]}}`,
		`{"retry":{"maxAttempts":5,"initialInterval":"200ms","maxInterval":"5s","multiplier":2,"maxElapsed":"30s","attemptTimeout":"1s","retryOn":[409,429]}}`,
		`{"retry":{"maxInterval":"1ms"}}`, `{"lock":"-1s"}`, `{"retry":{"retryOn":[1e300]}}`,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, src string) {
		var v any
		if json.Unmarshal([]byte(src), &v) != nil {
			return
		}
		for _, parse := range []func(any) (extension.Spec, error){
			func(v any) (extension.Spec, error) { _, s, err := extension.ParseOperation(v); return s, err },
			extension.ParseDocument,
		} {
			s, err := parse(v)
			var ext *extension.Error
			if err != nil {
				if !errors.As(err, &ext) || !strings.HasPrefix(err.Error(), "x-idempotent") {
					t.Fatalf("%s: error %v (%T) is not an x-idempotent *extension.Error", src, err, err)
				}
				continue
			}
			set, err := extension.Resolve(s, s)
			if err != nil {
				if !errors.As(err, &ext) {
					t.Fatalf("%s: resolve error %T", src, err)
				}
				continue
			}
			if set.Retention <= 0 || set.Lock <= 0 || set.Wait < 0 || set.Retry.MaxAttempts < 1 || (set.KeyHeader == "") == (set.KeyPointer == "") {
				t.Fatalf("%s: resolved to impossible settings %+v", src, set)
			}
			if err := set.Retry.Policy().Validate(); err != nil {
				t.Fatalf("%s: resolved to a policy the runtime refuses: %v", src, err)
			}
		}
	})
}

// TestParseDocumentAPI: the document-level api names the API in storage
// keys; it is short, holds no key delimiter, and belongs to the document.
func TestParseDocumentAPI(t *testing.T) {
	s, err := extension.ParseDocument(decode(t, `{"api":"orders-api","retention":"1h"}`))
	if err != nil || s.API == nil || *s.API != "orders-api" || s.Retention == nil {
		t.Fatalf("ParseDocument = %+v, %v", s, err)
	}
	if s, err := extension.ParseDocument(decode(t, `{"api":""}`)); err != nil || s.API == nil || *s.API != "" {
		t.Fatalf(`api "" = %+v, %v`, s, err)
	}
	for doc, want := range map[string]string{
		`{"api":"a:b"}`: `x-idempotent.api: "a:b" has ':' at byte 1`,
		`{"api":3}`:     `x-idempotent.api: must be a short name`,
		`{"api":"` + strings.Repeat("a", 33) + `"}`: `is 33 bytes long`,
	} {
		if _, err := extension.ParseDocument(decode(t, doc)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", doc, err, want)
		}
	}
	if _, _, err := extension.ParseOperation(decode(t, `{"api":"x"}`)); err == nil || !strings.Contains(err.Error(), "document level only") {
		t.Errorf("api on an operation: %v", err)
	}
}

// TestAPIFromTitle: a slug of info.title, short, stable and free of key
// delimiters.
func TestAPIFromTitle(t *testing.T) {
	for title, want := range map[string]string{
		"Petstore":               "petstore",
		"Orders API (v2)":        "orders-api-v2",
		"  Billing: Invoices!  ": "billing-invoices",
	} {
		if got := extension.APIFromTitle(title); got != want {
			t.Errorf("APIFromTitle(%q) = %q, want %q", title, got, want)
		}
	}
	long1 := extension.APIFromTitle("The Very Long Name of an Internal Payments Service, EU")
	long2 := extension.APIFromTitle("The Very Long Name of an Internal Payments Service, US")
	if long1 == long2 || len(long1) > extension.MaxAPILength {
		t.Errorf("long titles: %q, %q", long1, long2)
	}
	for _, title := range []string{"日本", "", "a:b\\c"} {
		got := extension.APIFromTitle(title)
		if got == "" || strings.ContainsAny(got, `:\`) || len(got) > extension.MaxAPILength {
			t.Errorf("APIFromTitle(%q) = %q", title, got)
		}
	}
}

// TestParseDocumentUnknownField: the document level's unknown-field message
// lists api with the other fields it accepts.
func TestParseDocumentUnknownField(t *testing.T) {
	_, err := extension.ParseDocument(decode(t, `{"api":"orders","retension":"1h"}`))
	want := "x-idempotent.retension: unknown field; valid fields are api, key, required, retention, lock, wait, final, transient, fingerprint, retry"
	if err == nil || err.Error() != want {
		t.Errorf("ParseDocument = %v, want %s", err, want)
	}
}

func TestResolveStoragePolicy(t *testing.T) {
	for _, tc := range []struct {
		ext  string
		want string // the error, "" for none
	}{
		{`{"final":["2xx","4xx",500],"transient":[402]}`, ""},
		{`{"final":["2xx",409]}`, "x-idempotent.final[1]: 409 is never stored: it tells the client to try again, and a replay would refuse the key for good"},
		{`{"final":["4xx","429"]}`, "x-idempotent.final[1]: 429 is never stored: it tells the client to try again, and a replay would refuse the key for good"},
		{`{"final":["2xx","600"]}`, `x-idempotent.final[1]: "600" is neither a status code (500) nor a class (2xx, 3xx, 4xx, 5xx)`},
		{`{"final":"2xx"}`, `x-idempotent.final: must be a list of status codes and classes such as [2xx, 4xx, 500], got string "2xx"`},
		{`{"final":[true]}`, `x-idempotent.final[0]: must be a status code (500) or a class (2xx), got boolean true`},
		{`{"transient":["402"]}`, `x-idempotent.transient[0]: must be an HTTP status code such as 402, got string "402"`},
		{`{"final":["2xx",500],"transient":[500]}`, "x-idempotent.transient[0]: 500 is also listed in final; say once whether it is stored"},
	} {
		var v any
		if err := json.Unmarshal([]byte(tc.ext), &v); err != nil {
			t.Fatal(err)
		}
		_, s, err := extension.ParseOperation(v)
		if err == nil {
			_, err = extension.Resolve(extension.Spec{}, s)
		}
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.ext, got, tc.want)
		}
	}
}
