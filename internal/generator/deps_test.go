package generator_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestToolsDoNotLinkTheEngine: the generator's packages, idemctl's
// (internal/ctl) and idemctl probe's (internal/probe) take the runtime's
// rules, defaults and version range from the leaf runtime/idemop, not from
// the engine (package idem), as ogen's ir does not import its runtime; and
// probe stands on its own, without the generator's command line. CI runs
// this test: an import that brings an edge back fails here.
func TestToolsDoNotLinkTheEngine(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	pkgs := []string{
		"github.com/idemgen/idemgen/cmd/idemgen",
		"github.com/idemgen/idemgen/cmd/idemctl",
		"github.com/idemgen/idemgen/internal/cli",
		"github.com/idemgen/idemgen/internal/ctl",
		"github.com/idemgen/idemgen/internal/extension",
		"github.com/idemgen/idemgen/internal/generator",
		"github.com/idemgen/idemgen/internal/load",
		"github.com/idemgen/idemgen/internal/model",
		"github.com/idemgen/idemgen/internal/overlay",
		"github.com/idemgen/idemgen/internal/probe",
		"github.com/idemgen/idemgen/internal/render",
	}
	forbidden := map[string]map[string]bool{}
	for _, p := range pkgs {
		forbidden[p] = map[string]bool{"github.com/idemgen/idemgen/runtime": true}
	}
	forbidden["github.com/idemgen/idemgen/internal/probe"]["github.com/idemgen/idemgen/internal/cli"] = true
	// One go list for all: each line is a package and its dependencies.
	out, err := exec.Command("go", append([]string{"list", "-f", "{{.ImportPath}} {{join .Deps \" \"}}"}, pkgs...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != len(pkgs) {
		t.Fatalf("go list listed %d packages, want %d:\n%s", len(lines), len(pkgs), out)
	}
	for _, line := range lines {
		deps := strings.Fields(line)
		if len(deps) < 2 {
			t.Fatalf("go list: %q has no dependencies", line)
		}
		for _, dep := range deps[1:] {
			if forbidden[deps[0]][dep] {
				t.Errorf("%s depends on %s", deps[0], dep)
			}
		}
	}
}
