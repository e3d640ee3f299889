package render

import (
	"flag"
	"strings"
	"testing"
)

// CI passes -update to every package under internal/ when it rewrites
// golden files; this package has none.
var _ = flag.Bool("update", false, "unused here")

func TestFormatErrorShowsLines(t *testing.T) {
	src := "package p\n\nfunc f() {\n\treturn 1 +\n}\n"
	_, err := formatSource([]byte(src))
	if err == nil {
		t.Fatal("no error for broken source")
	}
	for _, want := range []string{"format generated code:", ">    5 | }", "     4 | \treturn 1 +", "     3 | func f() {"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%s", want, err)
		}
	}
}

func TestComment(t *testing.T) {
	got := comment(strings.Repeat("word ", 30))
	for _, line := range strings.Split(got, "\n") {
		if !strings.HasPrefix(line, "// ") || len(line) > 76 {
			t.Errorf("bad comment line %q", line)
		}
	}
}
