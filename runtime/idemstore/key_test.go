package idemstore

import (
	"testing"
)

func TestStorageKeyIsUnambiguous(t *testing.T) {
	parts := [][3]string{
		{"a:b", "c", "d"}, {"a", "b:c", "d"}, {"a", "b", "c:d"}, {"a:b:c", "", "d"},
		{`a\`, "b", "c"}, {"a", `\b`, "c"}, {`a\:b`, "c", "d"}, {"a", "", "b:c"}, {"a", "b", "c"},
	}
	seen := map[string][3]string{}
	for _, p := range parts {
		k := RecordKey(p[0], p[1], p[2])
		if other, dup := seen[k]; dup {
			t.Errorf("RecordKey%q and RecordKey%q collide: %q", p, other, k)
		}
		seen[k] = p
	}
	if got, want := RecordKey("CreatePet", "tenant-1", "k:1"), OperationToken("", "CreatePet")+`:tenant-1:k\:1`; got != want {
		t.Errorf("RecordKey = %q, want %q", got, want)
	}
	if got, want := RecordKey("CreatePet", `:s\`, `\:k::`), OperationToken("", "CreatePet")+`:\:s\\:\\\:k\:\:`; got != want {
		t.Errorf("RecordKey = %q, want %q", got, want)
	}
}

// TestRecordKeyIn: API and operation become one short token, so no API,
// op, scope and key split differently compose the same key, the key of a
// generated server stays in Redis's 64-byte class, and SplitRecordKey
// takes apart only keys of this layout (previouslayout's test holds the
// previous layout's keys to the same).
func TestRecordKeyIn(t *testing.T) {
	seen := map[string][4]string{}
	for _, p := range [][4]string{
		{"", "a", "b", "c"}, {"a", "b", "", "c"}, {"a:b", "c", "", "d"}, {"a", "b:c", "", "d"}, {"x", "a", "b", "c"},
		{"a", "", "b", "c"}, {"", "a\nb", "", "c"}, {"a\nb", "", "", "c"}, {"x", "a", "b:c", "d"}, {"x", "a", "b", "c:d"},
	} {
		k := RecordKeyIn(p[0], p[1], p[2], p[3])
		if other, dup := seen[k]; dup {
			t.Errorf("RecordKeyIn%q and %q collide: %q", p, other, k)
		}
		seen[k] = p
		token, scope, key, ok := SplitRecordKey(k)
		if !ok || token != OperationToken(p[0], p[1]) || scope != p[2] || key != p[3] {
			t.Errorf("SplitRecordKey(%q) = %q, %q, %q, %v; want %q, %q, %q", k, token, scope, key, ok, OperationToken(p[0], p[1]), p[2], p[3])
		}
	}
	for _, k := range []string{"a:b", "a", "a:b:c:d:e", `a\:b:c`, "~abc:s:k", "~abcdefgh:s", "~abcdefgh:s:k:l", "petstore:CreatePet::k", "CreatePet:s:k"} {
		if _, _, _, ok := SplitRecordKey(k); ok {
			t.Errorf("SplitRecordKey(%q) splits a key RecordKeyIn never composes", k)
		}
	}
	if got, want := RecordKeyIn("", "CreatePet", "s", "k"), RecordKey("CreatePet", "s", "k"); got != want {
		t.Errorf("without an API: %q, want %q", got, want)
	}
	// The petstore's own names and a UUID key: "idem:" + the key must stay
	// at 60 bytes or less, which Redis keeps in its 64-byte size class.
	k := "idem:" + RecordKeyIn("petstore-with-safe-retries", "CreatePet", "", "0199c6d2-7b1e-7cc4-9a43-000000000001")
	if len(k) > 60 {
		t.Errorf("%q is %d bytes, want at most 60", k, len(k))
	}
}
