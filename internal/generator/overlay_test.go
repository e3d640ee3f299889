package generator_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idemgen/idemgen/internal/generator"
)

// headerkeyOverlayConfig copies the headerkey golden case's spec, with extra
// appended to its components/schemas, into a temporary directory.
func headerkeyOverlayConfig(t *testing.T, extra string) generator.Config {
	t.Helper()
	dir := filepath.Join(goldenRoot, "headerkey")
	spec, err := os.ReadFile(filepath.Join(dir, "openapi.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, "cfg.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	cg, _, err := generator.ParseCodegenConfig(data)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "openapi.yaml")
	if err := os.WriteFile(path, append(spec, extra...), 0o644); err != nil {
		t.Fatal(err)
	}
	return generator.Config{Spec: path, Source: "openapi.yaml", Codegen: cg}
}

// TestGenerateOverlaySeesUnusedComponents: codegen.Generate prunes unused
// components from the document it is given, so the overlay must be built on
// a copy it never saw, or it would add its problem schema over an unused
// schema of the same name.
func TestGenerateOverlaySeesUnusedComponents(t *testing.T) {
	c := headerkeyOverlayConfig(t, "    IdempotencyProblem:\n      type: string\n")
	f, err := generator.GenerateOverlay(c, "out/idem.overlay.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if f.Name != "out/idem.overlay.yaml" {
		t.Errorf("name %q", f.Name)
	}
	got := string(f.Content)
	if !strings.Contains(got, "components/schemas/IdempotencyProblem2.") || strings.Contains(got, "'#/components/schemas/IdempotencyProblem'") {
		t.Errorf("the overlay does not avoid the unused schema IdempotencyProblem:\n%s", got)
	}
	if !strings.Contains(got, "\n# source: openapi.yaml\n") {
		t.Errorf("the header does not name the spec by its base name:\n%s", got)
	}
}

func TestGenerateOverlayErrors(t *testing.T) {
	c := headerkeyOverlayConfig(t, "")
	for _, name := range []string{"", "idem.overlay.json", "api.idem.gen.go"} {
		if _, err := generator.GenerateOverlay(c, name); err == nil {
			t.Errorf("GenerateOverlay(%q): no error", name)
		}
	}
	c.Codegen.PackageName = ""
	if _, err := generator.GenerateOverlay(c, "idem.overlay.yaml"); err == nil || errors.Is(err, generator.ErrNothingToPublish) {
		t.Errorf("GenerateOverlay without a package name: %v", err)
	}
}
