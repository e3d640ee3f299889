package keyheader

import (
	"errors"
	"strings"
	"testing"
)

func TestParseKeyHeader(t *testing.T) {
	for _, tc := range []struct {
		in     string
		strict bool
		want   string
		ok     bool
	}{
		{`"abc"`, true, "abc", true},
		{` "abc" `, true, "abc", true},
		{`"a\"b"`, true, `a"b`, true},
		{`"a\\b"`, true, `a\b`, true},
		{`"abc";a=1;b="x;y";c=?0;d=:aGk=:;e=1.5;f=tok/x`, true, "abc", true},
		{`"abc";*x`, true, "abc", true},
		{`"abc"`, false, "abc", true},
		{`abc-123_~!`, false, "abc-123_~!", true},
		{`abc`, true, "", false},
		{``, false, "", false},
		{`   `, false, "", false},
		{`""`, false, "", false},
		{`"abc`, false, "", false},
		{`"a\x"`, false, "", false},
		{`"a\`, false, "", false},
		{`"abc"x`, false, "", false},
		{`"abc";`, false, "", false},
		{`"abc";A=1`, false, "", false},
		{`"abc";a=`, false, "", false},
		{`"abc";a="x`, false, "", false},
		{"\"a\tb\"", false, "", false},
		{"a b", false, "", false},
		{"a\x7f", false, "", false},
		{`"é"`, false, "", false},
		{strings.Repeat("a", 255), false, strings.Repeat("a", 255), true},
		{strings.Repeat("a", 256), false, "", false},
		{`"` + strings.Repeat("a", 256) + `"`, false, "", false},
		{`"` + strings.Repeat(`\"`, 255) + `"`, false, strings.Repeat(`"`, 255), true},
	} {
		got, err := Parse(tc.in, tc.strict)
		if tc.ok != (err == nil) || got != tc.want {
			t.Errorf("Parse(%q, %v) = %q, %v; want %q, ok %v", tc.in, tc.strict, got, err, tc.want, tc.ok)
		}
		if err != nil && !errors.Is(err, ErrInvalid) {
			t.Errorf("Parse(%q): error %v is not ErrInvalid", tc.in, err)
		}
	}
}

func FuzzParseKeyHeader(f *testing.F) {
	for _, s := range []string{`"abc"`, `abc`, `"a\"b";x=1`, ``, `"`, `"a\`} {
		f.Add(s, false)
		f.Add(s, true)
	}
	f.Fuzz(func(t *testing.T, in string, strict bool) {
		key, err := Parse(in, strict)
		if err != nil {
			if key != "" {
				t.Fatalf("key %q returned with error %v", key, err)
			}
			return
		}
		if Check(key) != nil {
			t.Fatalf("accepted an invalid key %q from %q", key, in)
		}
		// Serializing the key as an sf-string parses back to it.
		quoted := `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(key) + `"`
		if back, err := Parse(quoted, true); err != nil || back != key {
			t.Fatalf("round trip of %q: %q, %v", key, back, err)
		}
	})
}
