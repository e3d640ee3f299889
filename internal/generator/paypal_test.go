package generator_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idemgen/idemgen/internal/generator"
	"github.com/idemgen/idemgen/internal/load"
	"github.com/idemgen/idemgen/internal/sharedspecs"
)

// TestPayPal runs oapi-codegen and idemgen on PayPal's specs, with overlays
// (testdata/paypal) that mark every operation declaring the PayPal-Request-Id
// header as x-idempotent with that header as key, and builds and vets the
// result. It skips when the shared specs are absent, except under CI=true.
func TestPayPal(t *testing.T) {
	specs := sharedspecs.PayPal(t)
	if testing.Short() {
		t.Skip("building the PayPal packages is slow; skipped with -short")
	}
	const dir = "../../testdata/paypal"
	out := filepath.Join(dir, "out") // git-ignored
	if err := os.RemoveAll(out); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(out) })

	var pkgs []string
	for _, spec := range specs {
		name := strings.TrimSuffix(filepath.Base(spec), ".json")
		data, err := os.ReadFile(filepath.Join(dir, name+".cfg.yaml"))
		if err != nil {
			t.Fatalf("%s has no config in %s: %v", spec, dir, err)
		}
		cg, _, err := generator.ParseCodegenConfig(data)
		if err != nil {
			t.Fatal(err)
		}
		cfg := generator.Config{Spec: spec, Source: filepath.Base(spec), Codegen: cg, Dir: dir}
		files, err := generator.Generate(cfg)
		if err != nil {
			t.Fatalf("idemgen %s: %v", name, err)
		}
		ops := strings.Count(string(files[0].Content), "= idem.Operation{")
		if ops == 0 {
			t.Errorf("%s: no idempotent operation generated; is the overlay applied?", name)
		}
		t.Logf("%s: %d idempotent operations", name, ops)
		oapi, err := load.OapiCodegen(spec, cfg.Overlay(), cg, oapiVersion(t))
		if err != nil {
			t.Fatalf("oapi-codegen %s: %v", name, err)
		}
		pkgDir := filepath.Join(out, cg.PackageName)
		if err := os.MkdirAll(pkgDir, 0o755); err != nil {
			t.Fatal(err)
		}
		for file, content := range map[string][]byte{"api.gen.go": oapi, "api.idem.gen.go": files[0].Content} {
			if err := os.WriteFile(filepath.Join(pkgDir, file), content, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		pkgs = append(pkgs, "./testdata/paypal/out/"+cg.PackageName)
	}
	goVet(t, "../..", pkgs...)
}
