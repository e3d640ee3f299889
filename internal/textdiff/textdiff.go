// Package textdiff shows where two versions of a text file differ, briefly:
// what idemgen -check prints for a stale file and what a golden test prints
// when its output changed.
package textdiff

import (
	"fmt"
	"strings"
)

// MaxLines bounds each side of a Short diff.
const MaxLines = 12

// Short shows where two versions of the file name differ: the lines between
// their common head and common tail, each side cut to MaxLines, in a
// unified-diff-like form with old labelled oldLabel and cur labelled
// curLabel. It is meant to tell a person what changed, not to be applied.
// Equal inputs give "".
func Short(name, oldLabel, curLabel string, old, cur []byte) string {
	if string(old) == string(cur) {
		return ""
	}
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
	fmt.Fprintf(&s, "--- %s (%s)\n+++ %s (%s)\n", name, oldLabel, name, curLabel)
	fmt.Fprintf(&s, "@@ -%d,%d +%d,%d @@\n", head+1, len(a)-head-tail, head+1, len(b)-head-tail)
	side := func(prefix string, lines []string) {
		for i, l := range lines {
			if i == MaxLines {
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
