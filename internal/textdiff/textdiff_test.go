package textdiff_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/idemgen/idemgen/internal/textdiff"
)

func lines(from, to int) string {
	var b strings.Builder
	for i := from; i < to; i++ {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	return b.String()
}

func TestShort(t *testing.T) {
	for _, tc := range []struct {
		name, old, cur, want string
	}{
		{"equal", "a\n", "a\n", ""},
		{"one line changed", "a\nb\nc\nd\n", "a\nB\nc\nd\n",
			"@@ -1,4 +1,4 @@\n a\n-b\n+B\n c\n d\n"},
		{"two changes far apart are two hunks", lines(0, 20), strings.Replace(strings.Replace(lines(0, 20), "line 3\n", "LINE 3\n", 1), "line 15\n", "", 1),
			"@@ -2,5 +2,5 @@\n line 1\n line 2\n-line 3\n+LINE 3\n line 4\n line 5\n" +
				"@@ -14,5 +14,4 @@\n line 13\n line 14\n-line 15\n line 16\n line 17\n"},
		{"changes close together are one hunk", lines(0, 10), strings.Replace(strings.Replace(lines(0, 10), "line 3\n", "", 1), "line 6\n", "line 6\nnew\n", 1),
			"@@ -2,8 +2,8 @@\n line 1\n line 2\n-line 3\n line 4\n line 5\n line 6\n+new\n line 7\n line 8\n"},
		{"added at the end", "a\n", "a\nb\n", "@@ -1,1 +1,2 @@\n a\n+b\n"},
	} {
		got := textdiff.Short("f.go", "want", "got", []byte(tc.old), []byte(tc.cur))
		if tc.want != "" {
			tc.want = "--- f.go (want)\n+++ f.go (got)\n" + tc.want
		}
		if got != tc.want {
			t.Errorf("%s: got\n%s\nwant\n%s", tc.name, got, tc.want)
		}
	}
}

func TestShortCutsLongDiffs(t *testing.T) {
	got := textdiff.Short("f", "old", "new", []byte("x\n"), []byte(lines(0, 30)))
	if !strings.Contains(got, "+line 22\n... 7 more changed lines\n") || strings.Contains(got, "+line 23\n") {
		t.Errorf("the diff is not cut after %d changed lines:\n%s", textdiff.MaxLines, got)
	}
}
