package canonjson

import (
	"reflect"
	"testing"
)

func TestParsePointer(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Pointer
		ok   bool
	}{
		{"", nil, true},
		{"/", Pointer{{"", -1}}, true},
		{"/a/b", Pointer{{"a", -1}, {"b", -1}}, true},
		{"/a~1b/c~0d/~01", Pointer{{"a/b", -1}, {"c~d", -1}, {"~1", -1}}, true},
		{"/0/10/01/-/+1/-0/1e1/ 1", Pointer{{"0", 0}, {"10", 10}, {"01", -1}, {"-", -1}, {"+1", -1}, {"-0", -1}, {"1e1", -1}, {" 1", -1}}, true},
		{"/99999999999999999999", Pointer{{"99999999999999999999", -1}}, true},
		{"a", nil, false},
		{"/a~2", nil, false},
		{"/a~", nil, false},
	} {
		got, err := ParsePointer(tc.in)
		if (err == nil) != tc.ok || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("ParsePointer(%q) = %v, %v", tc.in, got, err)
		}
	}
}
