package generator_test

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/oapi-codegen/oapi-codegen/v2/pkg/util"

	"github.com/idemgen/idemgen/internal/generator"
	"github.com/idemgen/idemgen/internal/sharedspecs"
)

// TestPayPal runs oapi-codegen and idemgen on every one of PayPal's specs,
// each twice: with the curated overlay of testdata/paypal, which marks the
// operations declaring the PayPal-Request-Id header as x-idempotent with
// that header as key, and with an overlay that marks every operation
// x-idempotent (so every path parameter name PayPal uses meets the
// generated code's own names), each with chi, strict-server and client. It
// builds and vets the result. A spec that oapi-codegen itself cannot
// generate is skipped with a message; one that it can must go through
// idemgen. It skips when the shared specs are absent, except under CI=true.
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
		spec, err := filepath.Abs(spec)
		if err != nil {
			t.Fatal(err)
		}
		name := strings.TrimSuffix(filepath.Base(spec), ".json")
		if _, err := os.Stat(filepath.Join(dir, name+".cfg.yaml")); err == nil {
			pkgs = append(pkgs, paypalPackage(t, spec, dir, name+".cfg.yaml", out, 0)...)
		} else {
			t.Errorf("%s has no curated config %s.cfg.yaml in %s (the PayPal-Request-Id operations)", name, name, dir)
		}
		every := t.TempDir()
		n := writeEveryOperationConfig(t, spec, every, packageName(name)+"all")
		pkgs = append(pkgs, paypalPackage(t, spec, every, "cfg.yaml", out, n)...)
	}
	if len(pkgs) == 0 {
		t.Fatal("oapi-codegen generated none of the PayPal specs")
	}
	goVet(t, "../..", pkgs...)
}

// paypalPackage runs oapi-codegen and idemgen on spec with the config file
// cfg in dir, writes both outputs into a package below out and returns its
// import path relative to the module root, or nothing when oapi-codegen
// itself cannot generate the spec. It expects wantOps idempotent operations,
// or at least one when wantOps is 0.
func paypalPackage(t *testing.T, spec, dir, cfg, out string, wantOps int) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, cfg))
	if err != nil {
		t.Fatal(err)
	}
	cg, _, err := generator.ParseCodegenConfig(data)
	if err != nil {
		t.Fatal(err)
	}
	name := filepath.Base(spec) + " with " + cg.PackageName
	oapi, err := oapiCodegen(t, dir, cfg, spec)
	if err != nil {
		t.Logf("%s: skipped, oapi-codegen itself cannot generate it: %v", name, err)
		return nil
	}
	c := generator.Config{Spec: spec, Source: filepath.Base(spec), Codegen: cg, Dir: dir}
	files, err := generator.Generate(c)
	if err != nil {
		t.Errorf("%s: oapi-codegen generates it, idemgen does not: %v", name, err)
		return nil
	}
	ops := strings.Count(string(files[0].Content), "= idemop.Operation{")
	if ops == 0 || wantOps > 0 && ops != wantOps {
		t.Errorf("%s: %d idempotent operations generated, want %d; is the overlay applied?", name, ops, wantOps)
	}
	t.Logf("%s: %d idempotent operations", name, ops)
	pkgDir := filepath.Join(out, cg.PackageName)
	if err := os.MkdirAll(pkgDir, 0o755); err != nil {
		t.Fatal(err)
	}
	for file, content := range map[string][]byte{"api.gen.go": oapi, "api.idem.gen.go": files[0].Content} {
		if err := os.WriteFile(filepath.Join(pkgDir, file), content, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return []string{"./testdata/paypal/out/" + cg.PackageName}
}

// writeEveryOperationConfig writes into dir an oapi-codegen config (chi,
// strict-server, client) for package pkg, with an overlay that marks every
// operation of spec x-idempotent, and returns the number of operations.
func writeEveryOperationConfig(t *testing.T, spec, dir, pkg string) int {
	t.Helper()
	doc, err := util.LoadSwagger(spec)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	var o strings.Builder
	o.WriteString("overlay: 1.0.0\ninfo:\n  title: every operation is x-idempotent\n  version: 1.0.0\nactions:\n")
	for _, path := range slices.Sorted(maps.Keys(doc.Paths.Map())) {
		for _, method := range slices.Sorted(maps.Keys(doc.Paths.Value(path).Operations())) {
			fmt.Fprintf(&o, "  - target: $.paths['%s'].%s\n    update:\n      x-idempotent: true\n", path, strings.ToLower(method))
			n++
		}
	}
	cfg := "package: " + pkg + "\ngenerate:\n  models: true\n  chi-server: true\n  strict-server: true\n  client: true\n" +
		"output-options:\n  overlay:\n    path: overlay.yaml\n"
	for file, content := range map[string]string{"overlay.yaml": o.String(), "cfg.yaml": cfg} {
		if err := os.WriteFile(filepath.Join(dir, file), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return n
}

// packageName makes a Go package name of a spec's file name.
func packageName(name string) string {
	return strings.Map(func(r rune) rune {
		if 'a' <= r && r <= 'z' || '0' <= r && r <= '9' {
			return r
		}
		return -1
	}, strings.ToLower(name))
}
