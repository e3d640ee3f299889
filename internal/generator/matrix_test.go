package generator_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idemgen/idemgen/internal/generator"
)

// matrixSpecs are the specs of TestFlagMatrix: one that marks nothing
// x-idempotent, and one that marks operations of every body and parameter
// shape the wrappers care about.
var matrixSpecs = map[string]string{
	"bare": `openapi: 3.0.3
info: {title: Nothing marked, version: 1.0.0}
paths:
  /pets:
    get:
      operationId: listPets
      responses:
        "200": {description: OK, content: {application/json: {schema: {type: array, items: {type: string}}}}}
    post:
      operationId: createPet
      requestBody:
        content:
          application/json: {schema: {type: object, properties: {name: {type: string}}}}
      responses:
        "201": {description: Created}
`,
	"marked": `openapi: 3.0.3
info: {title: Marked, version: 1.0.0}
paths:
  /pets:
    get:
      operationId: listPets
      responses:
        "200": {description: OK, content: {application/json: {schema: {type: array, items: {type: string}}}}}
    post:
      operationId: createPet
      x-idempotent: true
      parameters:
        - {name: Idempotency-Key, in: header, required: true, schema: {type: string}}
      requestBody:
        required: true
        content:
          application/json: {schema: {type: object, properties: {name: {type: string}}}}
      responses:
        "201": {description: Created, content: {application/json: {schema: {type: object, properties: {id: {type: string}}}}}}
  /pets/{id}:
    delete:
      operationId: deletePet
      x-idempotent: true
      parameters:
        - {name: id, in: path, required: true, schema: {type: string, format: uuid}}
      responses:
        "204": {description: Deleted}
  /notes:
    post:
      operationId: addNote
      x-idempotent: true
      requestBody:
        content:
          text/plain: {schema: {type: string}}
      responses:
        "201": {description: Added}
`,
}

// TestFlagMatrix generates every combination of oapi-codegen's generate:
// flags that idemgen reads (models in the same config or in a config of its
// own, as split layouts do; client; each server, plain and strict), for a
// spec that marks nothing and one that marks operations, and builds and
// vets each package: oapi-codegen's output and idemgen's, for every config.
func TestFlagMatrix(t *testing.T) {
	if testing.Short() {
		t.Skip("go vet of the matrix packages is slow; skipped with -short")
	}
	// Inside the module, so that the packages build against it and its
	// go.mod; removed afterwards.
	root, err := os.MkdirTemp("../../testdata", "matrix-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	var pkgs []string
	for specName, spec := range matrixSpecs {
		for _, models := range []bool{false, true} {
			for _, client := range []bool{false, true} {
				for _, server := range []string{"", "chi-server", "std-http-server", "gorilla-server", "echo-server", "gin-server"} {
					for _, strict := range []bool{false, true} {
						if strict && server == "" {
							continue
						}
						name := fmt.Sprintf("%s_models%t_client%t_%s_strict%t", specName, models, client, strings.TrimSuffix(server, "-server"), strict)
						dir := filepath.Join(root, strings.ReplaceAll(name, "-", ""))
						matrixPackage(t, dir, spec, models, client, server, strict)
						pkgs = append(pkgs, "./"+filepath.ToSlash(filepath.Join("testdata", filepath.Base(root), filepath.Base(dir))))
					}
				}
			}
		}
	}
	goVet(t, "../..", pkgs...)
}

// matrixPackage writes one package of TestFlagMatrix into dir: every
// combination has at least one config (models, or a split layout's types).
func matrixPackage(t *testing.T, dir, spec string, models, client bool, server string, strict bool) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "openapi.yaml"), []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	var flags []string
	if models {
		flags = append(flags, "models: true")
	}
	if client {
		flags = append(flags, "client: true")
	}
	if server != "" {
		flags = append(flags, server+": true")
	}
	if strict {
		flags = append(flags, "strict-server: true")
	}
	configs := map[string][]string{}
	if len(flags) > 0 {
		configs["api"] = flags
	}
	if !models {
		configs["types"] = []string{"models: true"} // a split layout's types
	}
	for base, flags := range configs {
		cfg := "package: matrix\ngenerate:\n  " + strings.Join(flags, "\n  ") + "\n"
		cfgFile := base + ".cfg.yaml"
		if err := os.WriteFile(filepath.Join(dir, cfgFile), []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
		oapi, err := oapiCodegen(t, dir, cfgFile, "openapi.yaml")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, base+".gen.go"), oapi, 0o644); err != nil {
			t.Fatal(err)
		}
		cg, _, err := generator.ParseCodegenConfig([]byte(cfg))
		if err != nil {
			t.Fatal(err)
		}
		files, err := generator.Generate(generator.Config{
			Spec: filepath.Join(dir, "openapi.yaml"), Source: "openapi.yaml", Codegen: cg, Output: base + ".idem.gen.go", Dir: dir,
		})
		if err != nil {
			t.Fatalf("%s, %s: %v", dir, cfgFile, err)
		}
		if err := os.WriteFile(filepath.Join(dir, files[0].Name), files[0].Content, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
