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
	for _, p := range pkgs {
		out, err := exec.Command("go", "list", "-deps", p).CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps %s: %v\n%s", p, err, out)
		}
		deps := strings.Fields(string(out))
		if len(deps) < 2 {
			t.Fatalf("go list -deps %s listed %q", p, deps)
		}
		for _, dep := range deps {
			if forbidden[p][dep] {
				t.Errorf("%s depends on %s", p, dep)
			}
		}
	}
}
