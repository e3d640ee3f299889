package idem

import (
	"reflect"
	"testing"
)

func TestParsePointer(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want jsonPointer
		ok   bool
	}{
		{"", nil, true},
		{"/", jsonPointer{{"", -1}}, true},
		{"/a/b", jsonPointer{{"a", -1}, {"b", -1}}, true},
		{"/a~1b/c~0d/~01", jsonPointer{{"a/b", -1}, {"c~d", -1}, {"~1", -1}}, true},
		{"/0/10/01/-/+1/-0/1e1/ 1", jsonPointer{{"0", 0}, {"10", 10}, {"01", -1}, {"-", -1}, {"+1", -1}, {"-0", -1}, {"1e1", -1}, {" 1", -1}}, true},
		{"/99999999999999999999", jsonPointer{{"99999999999999999999", -1}}, true},
		{"a", nil, false},
		{"/a~2", nil, false},
		{"/a~", nil, false},
	} {
		got, err := parsePointer(tc.in)
		if (err == nil) != tc.ok || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("parsePointer(%q) = %v, %v", tc.in, got, err)
		}
	}
}

func TestLookupPointer(t *testing.T) {
	doc, err := decodeJSON([]byte(`{"a":{"b":[1,{"c":"x"}]},"k/e":"v"}`))
	if err != nil {
		t.Fatal(err)
	}
	for ptr, want := range map[string]any{"/a/b/1/c": "x", "/k~1e": "v"} {
		p, _ := parsePointer(ptr)
		if got, ok := lookupPointer(doc, p); !ok || got != want {
			t.Errorf("lookup %s = %v, %v", ptr, got, ok)
		}
	}
	for _, ptr := range []string{"/a/b/2", "/a/b/01", "/a/b/-", "/a/b/+1", "/a/b/-0", "/x", "/a/b/1/c/d"} {
		p, _ := parsePointer(ptr)
		if _, ok := lookupPointer(doc, p); ok {
			t.Errorf("lookup %s resolved", ptr)
		}
	}
}
