package cli

import (
	"fmt"
	"strings"
)

// maxDiffLines bounds each side of a short diff.
const maxDiffLines = 12

// shortDiff shows where two versions of a file differ: the lines between
// their common head and common tail, each side cut to maxDiffLines, in a
// unified-diff-like form. It is meant to tell a user what is stale, not to
// be applied.
func shortDiff(name string, old, cur []byte) string {
	a := strings.SplitAfter(string(old), "\n")
	b := strings.SplitAfter(string(cur), "\n")
	head := 0
	for head < len(a) && head < len(b) && a[head] == b[head] {
		head++
	}
	tail := 0
	for tail < len(a)-head && tail < len(b)-head && a[len(a)-1-tail] == b[len(b)-1-tail] {
		tail++
	}
	var s strings.Builder
	fmt.Fprintf(&s, "--- %s (on disk)\n+++ %s (generated)\n", name, name)
	fmt.Fprintf(&s, "@@ -%d,%d +%d,%d @@\n", head+1, len(a)-head-tail, head+1, len(b)-head-tail)
	side := func(prefix string, lines []string) {
		for i, l := range lines {
			if i == maxDiffLines {
				fmt.Fprintf(&s, "%s... %d more lines\n", prefix, len(lines)-i)
				break
			}
			s.WriteString(prefix + strings.TrimSuffix(l, "\n") + "\n")
		}
	}
	side("-", a[head:len(a)-tail])
	side("+", b[head:len(b)-tail])
	return s.String()
}
