package headerjson

import (
	"encoding/json"
	"net/http"
	"reflect"
	"testing"
)

var headers = []http.Header{
	nil,
	{},
	{"Content-Type": {"application/json"}},
	{"Location": {"/payments/1"}, "X-Multi": {"a", "b", ""}, "Empty": {}, "Nil": nil},
	{"X-Quote": {`say "hi" \ <b>&amp;</b>`}, "X-Ctl": {"a\nb\tc\x01"}, "X-Utf8": {"héllo ✓ \u2028"}, "X-Bad": {"\xff\xfe"}},
}

// TestRoundTrip: what Append encodes, Decode and encoding/json decode to
// the same header, and Decode reads what encoding/json encodes.
func TestRoundTrip(t *testing.T) {
	for _, h := range headers {
		var want http.Header
		std, err := json.Marshal(h)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(std, &want); err != nil {
			t.Fatal(err)
		}
		enc := Append(nil, h)
		var viaStd http.Header
		if err := json.Unmarshal(enc, &viaStd); err != nil {
			t.Fatalf("Append(%v) = %s: not JSON: %v", h, enc, err)
		}
		if !reflect.DeepEqual(viaStd, want) {
			t.Errorf("Append(%v) = %s, which encoding/json reads as %v; want %v", h, enc, viaStd, want)
		}
		for _, data := range [][]byte{enc, std} {
			got, err := Decode(data)
			if err != nil {
				t.Fatalf("Decode(%s): %v", data, err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("Decode(%s) = %#v; want %#v", data, got, want)
			}
		}
	}
}

// TestEncode: a nil header is stored as an empty object, which reads back
// as an empty header; any other as Append encodes it.
func TestEncode(t *testing.T) {
	if got, err := Decode(Encode(nil)); string(Encode(nil)) != "{}" || err != nil || got == nil || len(got) != 0 {
		t.Errorf("Encode(nil) = %s, read back as %#v, %v; want {}, an empty header", Encode(nil), got, err)
	}
	h := http.Header{"A": {"b"}}
	if got := Encode(h); string(got) != string(Append(nil, h)) {
		t.Errorf("Encode(%v) = %s; want %s", h, got, Append(nil, h))
	}
}

// TestDecodeNothing: no data (a NULL column) is a nil header.
func TestDecodeNothing(t *testing.T) {
	if h, err := Decode(nil); h != nil || err != nil {
		t.Errorf("Decode(nil) = %v, %v; want nil, nil", h, err)
	}
}

// TestDecodeJSONBOutput: PostgreSQL's jsonb output puts a space after
// every separator.
func TestDecodeJSONBOutput(t *testing.T) {
	got, err := Decode([]byte(`{"Location": ["/p/1", "x"], "Content-Type": ["application/json"], "N": null, "E": []}`))
	want := http.Header{"Location": {"/p/1", "x"}, "Content-Type": {"application/json"}, "N": nil, "E": {}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("got %#v, %v; want %#v", got, err, want)
	}
}

// TestDecodeRefusesWhatIsNotAHeader: malformed data is an error, as from
// encoding/json, never a partial header.
func TestDecodeRefusesWhatIsNotAHeader(t *testing.T) {
	for _, data := range []string{`{`, `{"a":`, `{"a":["x"]`, `{"a":"x"}`, `[1]`, `{"a":[1]}`, `{"a":["x"]} x`, `nul`} {
		if h, err := Decode([]byte(data)); err == nil {
			t.Errorf("Decode(%s) = %v; want an error", data, h)
		}
	}
}

func FuzzDecode(f *testing.F) {
	for _, h := range headers {
		f.Add(Append(nil, h))
	}
	f.Add([]byte(`{"A": ["b"]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return // a NULL column: a nil header, where encoding/json refuses
		}
		got, err := Decode(data)
		var want http.Header
		werr := json.Unmarshal(data, &want)
		if (err == nil) != (werr == nil) {
			t.Fatalf("Decode(%q): %v; encoding/json: %v", data, err, werr)
		}
		if err == nil && !reflect.DeepEqual(got, want) {
			t.Fatalf("Decode(%q) = %#v; encoding/json: %#v", data, got, want)
		}
	})
}

func BenchmarkDecode(b *testing.B) {
	data := []byte(`{"Location": ["/payments/1"], "Content-Type": ["application/json"]}`)
	b.Run("headerjson", func(b *testing.B) {
		for b.Loop() {
			if _, err := Decode(data); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		for b.Loop() {
			var h http.Header
			if err := json.Unmarshal(data, &h); err != nil {
				b.Fatal(err)
			}
		}
	})
}
