// Package published reads scripts/published-modules: the directories of the
// modules a release publishes, "." for the repository's root.
package published

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strings"
)

// Dirs returns the directories listed in root's scripts/published-modules,
// in its order, without its comments and blank lines.
func Dirs(root string) ([]string, error) {
	data, err := os.ReadFile(filepath.Join(root, "scripts/published-modules"))
	if err != nil {
		return nil, err
	}
	var dirs []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		if d := strings.TrimSpace(sc.Text()); d != "" && !strings.HasPrefix(d, "#") {
			dirs = append(dirs, d)
		}
	}
	return dirs, sc.Err()
}
