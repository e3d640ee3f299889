package previouslayout_test

import (
	"testing"

	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/redisstore/previouslayout"
)

// TestPreviousRecordKey: the previous layout's keys name the API and the
// operation in full, take apart into the parts they were composed of, and
// are never taken for a key of the current layout, nor the reverse.
func TestPreviousRecordKey(t *testing.T) {
	for _, p := range [][4]string{
		{"", "a", "b", "c"}, {"a", "b", "", "c"}, {"a:b", "c", "", "d"}, {"a", "b:c", "", "d"}, {"x", "a", "b", "c"},
		{"a", "", "b", "c"}, {"", "a\nb", "", "c"}, {"a\nb", "", "", "c"}, {"x", "a", "b:c", "d"}, {"x", "a", "b", `c:\d`},
	} {
		prev := previouslayout.PreviousRecordKey(p[0], p[1], p[2], p[3])
		if api, op, scope, key, ok := previouslayout.SplitPreviousRecordKey(prev); !ok || [4]string{api, op, scope, key} != p {
			t.Errorf("SplitPreviousRecordKey(%q) = %q, %q, %q, %q, %v; want %q", prev, api, op, scope, key, ok, p)
		}
		if _, _, _, ok := idemstore.SplitRecordKey(prev); ok {
			t.Errorf("idemstore.SplitRecordKey(%q) splits a key of the previous layout", prev)
		}
		if cur := idemstore.RecordKeyIn(p[0], p[1], p[2], p[3]); cur == prev {
			t.Errorf("%q is a key of both layouts", cur)
		} else if _, _, _, _, ok := previouslayout.SplitPreviousRecordKey(cur); ok {
			t.Errorf("SplitPreviousRecordKey(%q) splits a key of the current layout", cur)
		}
	}
	for _, k := range []string{"a:b", "a:b:c:d:e", `a\:b:c`} {
		if _, _, _, _, ok := previouslayout.SplitPreviousRecordKey(k); ok {
			t.Errorf("SplitPreviousRecordKey(%q) splits a key PreviousRecordKey never composes", k)
		}
	}
	if got, want := previouslayout.PreviousRecordKey("", "CreatePet", "s", "k"), "CreatePet:s:k"; got != want {
		t.Errorf("PreviousRecordKey without an API = %q, want the layout before API identities, %q", got, want)
	}
	if got, want := previouslayout.PreviousRecordKey("petstore", "CreatePet", "", `k:\`), `petstore:CreatePet::k\:\\`; got != want {
		t.Errorf("PreviousRecordKey = %q, want %q", got, want)
	}
}
