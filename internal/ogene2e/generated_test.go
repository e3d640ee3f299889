package ogene2e_test

import (
	"bytes"
	"os"
	"testing"

	"github.com/idemgen/idemgen/internal/generator"
	"github.com/idemgen/idemgen/internal/textdiff"
)

// TestGeneratedFileIsCurrent checks api/api.idem.gen.go against what idemgen
// generates now from openapi.yaml for ogen, as idemgen -check does: a
// change to the generator shows up here as a diff to regenerate.
func TestGeneratedFileIsCurrent(t *testing.T) {
	files, err := generator.Generate(generator.Config{
		Spec:    "openapi.yaml",
		Source:  "../openapi.yaml",
		Codegen: generator.OgenCodegen("api"),
		Output:  "api/api.idem.gen.go",
		Target:  generator.TargetOgen,
	})
	if err != nil {
		t.Fatal(err)
	}
	have, err := os.ReadFile(files[0].Name)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(have, files[0].Content) {
		t.Errorf("run go generate ./api:\n%s", textdiff.Short(files[0].Name, "checked in", "generated", have, files[0].Content))
	}
}
