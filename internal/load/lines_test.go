package load

import (
	"flag"
	"testing"
)

// CI passes -update to every package under internal/ when it rewrites
// golden files; this package has none.
var _ = flag.Bool("update", false, "unused here")

func TestLineIndex(t *testing.T) {
	yamlSpec := `openapi: 3.0.3
x-idempotent:
  retention: 1h
paths:
  /a:
    x-idempotent: true
    post:
      operationId: a
      x-idempotent:
        lock: 1s
        retry:
          retryOn:
            - 409
            - 600
    get:
      operationId: b
`
	jsonSpec := `{"paths": {"/a": {
  "post": {
    "x-idempotent": {
      "fingerprint": {"ignore": [
        "/x",
        "y"]}}}}}}
`
	ix := indexLines([]byte(yamlSpec))
	jx := indexLines([]byte(jsonSpec))
	for _, tc := range []struct {
		ix                  lineIndex
		path, method, field string
		want                int
	}{
		{ix, "", "", "", 2},
		{ix, "", "", "retention", 3},
		{ix, "", "", "retry.maxAttempts", 2},
		{ix, "/a", "x-idempotent", "", 6},
		{ix, "/a", "POST", "", 9},
		{ix, "/a", "POST", "lock", 10},
		{ix, "/a", "POST", "retry.retryOn[1]", 14},
		{ix, "/a", "POST", "retry.maxAttempts", 11},
		{ix, "/a", "POST", "key.body", 9},
		{ix, "/a", "GET", "", 15},
		{ix, "/b", "POST", "lock", 0},
		{jx, "/a", "POST", "fingerprint.ignore[1]", 6},
		{jx, "/a", "POST", "", 3},
		{indexLines([]byte("{not yaml")), "/a", "POST", "", 0},
	} {
		if got := tc.ix.line(tc.path, tc.method, tc.field); got != tc.want {
			t.Errorf("line(%q, %q, %q) = %d, want %d", tc.path, tc.method, tc.field, got, tc.want)
		}
	}
}

// FuzzIndexLines: any text indexes without panicking, and lookups answer.
func FuzzIndexLines(f *testing.F) {
	f.Add("paths:\n  /a:\n    post:\n      x-idempotent: {lock: 1s}\n")
	f.Add(`{"x-idempotent": [1, {"a": [2]}]}`)
	f.Fuzz(func(t *testing.T, text string) {
		ix := indexLines([]byte(text))
		_ = ix.line("/a", "POST", "retry.retryOn[0]")
		_ = ix.line("", "", "")
	})
}
