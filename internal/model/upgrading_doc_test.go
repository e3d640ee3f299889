package model

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/idemgen/idemgen/runtime/idemop"
)

// TestUpgradingDocVersions: the runtime versions that docs/upgrading.md
// says generated files state are the ones the generator writes, its range
// is the runtime's, and it names no other version.
func TestUpgradingDocVersions(t *testing.T) {
	doc, err := os.ReadFile("../../docs/upgrading.md")
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]File{
		"any wrapper": {Client: true, Server: true, Strict: true, Receivers: true, Initiators: true},
	}
	rows := regexp.MustCompile("(?m)^\\| (.+) \\| (\\d) \\| `idemop.EnforceVersion\\((\\d) - idemop.MinVersion\\)` \\|$").FindAllStringSubmatch(string(doc), -1)
	seen := map[string]bool{}
	for _, r := range rows {
		for what, f := range files {
			if !strings.HasPrefix(r[1], what) {
				continue
			}
			seen[what] = true
			if want := strconv.Itoa(f.RuntimeVersion()); r[2] != want || r[3] != want {
				t.Errorf("docs/upgrading.md: a file with %s states %s (%s in its lines); the generator writes %s", what, r[2], r[3], want)
			}
		}
	}
	for what := range files {
		if !seen[what] {
			t.Errorf("docs/upgrading.md has no row for a file with %s", what)
		}
	}
	rng := regexp.MustCompile(`supports version (\d) only`).FindStringSubmatch(string(doc))
	if rng == nil || rng[1] != strconv.Itoa(idemop.MinVersion) || rng[1] != strconv.Itoa(idemop.MaxVersion) {
		t.Errorf("docs/upgrading.md's range %v; the runtime supports %d to %d", rng, idemop.MinVersion, idemop.MaxVersion)
	}
	for _, m := range regexp.MustCompile(`[Vv]ersion (\d+)`).FindAllStringSubmatch(string(doc), -1) {
		if n, _ := strconv.Atoi(m[1]); n < idemop.MinVersion || n > idemop.MaxVersion {
			t.Errorf("docs/upgrading.md names %q, outside the runtime's range", m[0])
		}
	}
}
