package loadtest

import (
	"encoding/json"
	"testing"
)

func TestJSONBodyExactSizeAndValid(t *testing.T) {
	for _, size := range []int{0, minBodySize, 200, 777, 2048, 20480} {
		b := jsonBody(size, 42)
		if want := max(size, minBodySize); len(b) != want {
			t.Errorf("jsonBody(%d): %d bytes, want %d", size, len(b), want)
		}
		if !json.Valid(b) {
			t.Errorf("jsonBody(%d) is not valid JSON: %s", size, b)
		}
	}
	if first, again := jsonBody(2048, 1), jsonBody(2048, 1); string(first) != string(again) {
		t.Error("jsonBody is not reproducible for one seed")
	}
}
