package docblocks

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var linkRE = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// TestDocLinks: every relative link of the repository's documents (the
// top-level *.md and docs/*.md) names a file or directory that exists.
func TestDocLinks(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	top, _ := filepath.Glob(filepath.Join(root, "*.md"))
	docs, _ := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	checked := 0
	for _, doc := range append(top, docs...) {
		text, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, doc)
		for i, line := range strings.Split(string(text), "\n") {
			for _, m := range linkRE.FindAllStringSubmatch(line, -1) {
				target, _, _ := strings.Cut(m[1], "#")
				if target == "" || strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				checked++
				if _, err := os.Stat(filepath.Join(filepath.Dir(doc), target)); err != nil {
					t.Errorf("%s:%d: links to %s, which does not exist", rel, i+1, m[1])
				}
			}
		}
	}
	if checked == 0 {
		t.Fatal("no relative link found")
	}
}
