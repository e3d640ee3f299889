// Package textdiff shows where two versions of a text file differ, briefly:
// what idemgen -check prints for a stale file and what a golden test prints
// when its output changed.
package textdiff

import (
	"fmt"
	"strings"
)

// MaxLines bounds the changed lines (removed and added) that Short prints;
// the rest are counted.
const MaxLines = 24

// context is the number of unchanged lines shown around each change.
const context = 2

// Short shows how the file name differs between old (labelled oldLabel) and
// cur (labelled curLabel) as unified-diff hunks, each change with two lines
// of context, at most MaxLines changed lines in all. It is meant to tell a
// person what changed, not to be applied. Equal inputs give "".
func Short(name, oldLabel, curLabel string, old, cur []byte) string {
	if string(old) == string(cur) {
		return ""
	}
	a, b := splitLines(old), splitLines(cur)
	var s strings.Builder
	fmt.Fprintf(&s, "--- %s (%s)\n+++ %s (%s)\n", name, oldLabel, name, curLabel)
	shown, hidden := 0, 0
	for _, h := range hunks(edits(a, b)) {
		if shown >= MaxLines {
			hidden += h.changed()
			continue
		}
		fmt.Fprintf(&s, "@@ -%d,%d +%d,%d @@\n", h.aStart+1, h.aLen, h.bStart+1, h.bLen)
		for _, e := range h.lines {
			if e.op != ' ' {
				if shown >= MaxLines {
					hidden++
					continue
				}
				shown++
			}
			s.WriteString(string(e.op) + strings.TrimSuffix(e.text, "\n") + "\n")
		}
	}
	if hidden > 0 {
		fmt.Fprintf(&s, "... %d more changed lines\n", hidden)
	}
	return s.String()
}

// splitLines splits text after each newline; a final newline ends the
// last line rather than starting an empty one.
func splitLines(text []byte) []string {
	l := strings.SplitAfter(string(text), "\n")
	if l[len(l)-1] == "" {
		l = l[:len(l)-1]
	}
	return l
}

// edit is one line of a diff: ' ' kept, '-' only in a, '+' only in b.
type edit struct {
	op   byte
	text string
}

// edits returns a shortest edit script from a to b: a longest common
// subsequence by dynamic programming over what lies between the common head
// and tail, which for generated files is small.
func edits(a, b []string) []edit {
	head := 0
	for head < len(a) && head < len(b) && a[head] == b[head] {
		head++
	}
	tail := 0
	for tail < len(a)-head && tail < len(b)-head && a[len(a)-1-tail] == b[len(b)-1-tail] {
		tail++
	}
	out := make([]edit, 0, len(a)+len(b))
	for _, l := range a[:head] {
		out = append(out, edit{' ', l})
	}
	ma, mb := a[head:len(a)-tail], b[head:len(b)-tail]
	// lcs[i][j] is the length of a longest common subsequence of ma[i:] and mb[j:].
	lcs := make([][]int32, len(ma)+1)
	for i := range lcs {
		lcs[i] = make([]int32, len(mb)+1)
	}
	for i := len(ma) - 1; i >= 0; i-- {
		for j := len(mb) - 1; j >= 0; j-- {
			if ma[i] == mb[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	i, j := 0, 0
	for i < len(ma) || j < len(mb) {
		switch {
		case i < len(ma) && j < len(mb) && ma[i] == mb[j]:
			out = append(out, edit{' ', ma[i]})
			i++
			j++
		case j == len(mb) || (i < len(ma) && lcs[i+1][j] >= lcs[i][j+1]):
			out = append(out, edit{'-', ma[i]})
			i++
		default:
			out = append(out, edit{'+', mb[j]})
			j++
		}
	}
	for _, l := range a[len(a)-tail:] {
		out = append(out, edit{' ', l})
	}
	return out
}

// hunk is a run of edits with its context and where it starts in a and b.
type hunk struct {
	aStart, aLen, bStart, bLen int
	lines                      []edit
}

// changed counts the removed and added lines of h.
func (h hunk) changed() int {
	n := 0
	for _, e := range h.lines {
		if e.op != ' ' {
			n++
		}
	}
	return n
}

// hunks groups the changes of es with context lines around them, merging
// changes whose contexts touch.
func hunks(es []edit) []hunk {
	var out []hunk
	ai, bi := 0, 0 // line numbers in a and b before es[k]
	pos := make([][2]int, len(es))
	for k, e := range es {
		pos[k] = [2]int{ai, bi}
		if e.op != '+' {
			ai++
		}
		if e.op != '-' {
			bi++
		}
	}
	for k := 0; k < len(es); {
		if es[k].op == ' ' {
			k++
			continue
		}
		start := max(0, k-context)
		end := k
		for end < len(es) {
			if es[end].op != ' ' {
				end++
				continue
			}
			next := end
			for next < len(es) && es[next].op == ' ' {
				next++
			}
			if next == len(es) || next-end > 2*context {
				end = min(len(es), end+context)
				break
			}
			end = next
		}
		h := hunk{aStart: pos[start][0], bStart: pos[start][1], lines: es[start:end]}
		for _, e := range h.lines {
			if e.op != '+' {
				h.aLen++
			}
			if e.op != '-' {
				h.bLen++
			}
		}
		out = append(out, h)
		k = end
	}
	return out
}
