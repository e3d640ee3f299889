package textdiff_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/idemgen/idemgen/internal/textdiff"
)

func TestShort(t *testing.T) {
	old := "a\nb\nc\nd\n"
	cur := "a\nB\nc\nd\n"
	want := "--- f.go (want)\n+++ f.go (got)\n@@ -2,1 +2,1 @@\n-b\n+B\n"
	if got := textdiff.Short("f.go", "want", "got", []byte(old), []byte(cur)); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if got := textdiff.Short("f.go", "want", "got", []byte(old), []byte(old)); got != "" {
		t.Errorf("equal inputs: %q, want empty", got)
	}
}

func TestShortCutsLongSides(t *testing.T) {
	var long strings.Builder
	for i := range 30 {
		fmt.Fprintf(&long, "line %d\n", i)
	}
	got := textdiff.Short("f", "old", "new", []byte("x\n"), []byte(long.String()))
	if !strings.Contains(got, "+line 11\n+... 18 more lines\n") || strings.Contains(got, "+line 12\n") {
		t.Errorf("the long side is not cut at %d lines:\n%s", textdiff.MaxLines, got)
	}
	if !strings.Contains(got, "@@ -1,1 +1,30 @@\n-x\n") {
		t.Errorf("header or old side wrong:\n%s", got)
	}
}
