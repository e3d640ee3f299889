package generator_test

import (
	"bytes"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idemgen/idemgen/internal/cmdline"
	"github.com/idemgen/idemgen/internal/generator"
	"github.com/idemgen/idemgen/internal/textdiff"
)

var update = flag.Bool("update", false, "rewrite golden files (idemgen's and oapi-codegen's output, error.txt)")

// goldenRoot holds one folder per case: openapi.yaml (or .json), cfg.yaml,
// and either api.gen.go (oapi-codegen) + api.idem.gen.go (idemgen), or, for
// the cases named error-*, error.txt with the exact messages the command
// prints, every problem of the run. A case laid out as oapi-codegen's split
// configurations are has, instead of cfg.yaml, one NAME.cfg.yaml per
// configuration (types, server, client, ...), each generating NAME.gen.go
// and NAME.idem.gen.go into the one package.
const goldenRoot = "../../testdata/golden"

type goldenCase struct {
	name, dir, spec string
	units           []goldenUnit
}

// goldenUnit is one configuration of a case and what it generates.
type goldenUnit struct {
	cfgFile, oapiOut string
	cfg              generator.Config
}

func (c goldenCase) wantsError() bool { return strings.HasPrefix(c.name, "error-") }

func goldenCases(t *testing.T) []goldenCase {
	t.Helper()
	entries, err := os.ReadDir(goldenRoot)
	if err != nil {
		t.Fatal(err)
	}
	var cases []goldenCase
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		dir := filepath.Join(goldenRoot, e.Name())
		specs, _ := filepath.Glob(filepath.Join(dir, "openapi.*"))
		if len(specs) != 1 {
			t.Fatalf("%s: want exactly one openapi.yaml or openapi.json, have %v", dir, specs)
		}
		cfgs, _ := filepath.Glob(filepath.Join(dir, "*.cfg.yaml"))
		if len(cfgs) == 0 {
			cfgs = []string{filepath.Join(dir, "cfg.yaml")}
		}
		c := goldenCase{name: e.Name(), dir: dir, spec: specs[0]}
		for _, cfgPath := range cfgs {
			data, err := os.ReadFile(cfgPath)
			if err != nil {
				t.Fatal(err)
			}
			cg, _, err := generator.ParseCodegenConfig(data)
			if err != nil {
				t.Fatalf("%s: %v", cfgPath, err)
			}
			base := strings.TrimSuffix(filepath.Base(cfgPath), ".cfg.yaml")
			if base == "cfg.yaml" {
				base = "api"
			}
			c.units = append(c.units, goldenUnit{
				cfgFile: filepath.Base(cfgPath),
				oapiOut: base + ".gen.go",
				cfg: generator.Config{
					Spec:    specs[0],
					Source:  filepath.Base(specs[0]),
					Codegen: cg,
					Output:  base + ".idem.gen.go",
					Dir:     dir,
				},
			})
		}
		cases = append(cases, c)
	}
	return cases
}

// TestGolden generates every case and compares with the files beside it.
func TestGolden(t *testing.T) {
	for _, c := range goldenCases(t) {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			for _, u := range c.units {
				files, err := generator.Generate(u.cfg)
				if c.wantsError() {
					if err == nil {
						t.Fatal("generated without error; an error-* case expects one")
					}
					checkGolden(t, filepath.Join(c.dir, "error.txt"), []byte(cmdline.Message("idemgen: ", err)))
					return
				}
				if err != nil {
					t.Fatalf("generate %s: %v", u.cfgFile, err)
				}
				if len(files) != 1 || files[0].Name != u.cfg.Output {
					t.Fatalf("%s: files = %v, want one %s", u.cfgFile, files, u.cfg.Output)
				}
				checkGolden(t, filepath.Join(c.dir, u.cfg.Output), files[0].Content)
				if *update {
					oapi, err := oapiCodegen(t, c.dir, u.cfgFile, filepath.Base(c.spec))
					if err != nil {
						t.Fatal(err)
					}
					checkGolden(t, filepath.Join(c.dir, u.oapiOut), oapi)
				}
			}
		})
	}
}

// TestGoldenDeterministic generates one case twice in a row and in
// parallel with others: output is byte-identical whatever ran before.
func TestGoldenDeterministic(t *testing.T) {
	cases := goldenCases(t)
	for _, c := range cases {
		if c.wantsError() {
			continue
		}
		for _, u := range c.units {
			first, err := generator.Generate(u.cfg)
			if err != nil {
				t.Fatal(err)
			}
			second, err := generator.Generate(u.cfg)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(first[0].Content, second[0].Content) {
				t.Errorf("%s: %s: two runs differ", c.name, u.cfgFile)
			}
		}
	}
}

// TestGoldenBuild builds and vets every golden package: idemgen's output
// together with oapi-codegen's for the same spec and config.
func TestGoldenBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("go vet of the golden packages is slow; skipped with -short")
	}
	var pkgs []string
	for _, c := range goldenCases(t) {
		if !c.wantsError() {
			pkgs = append(pkgs, "./testdata/golden/"+c.name)
		}
	}
	if len(pkgs) == 0 {
		t.Fatal("no golden packages")
	}
	goVet(t, "../..", pkgs...)
}

// goVet runs go vet (which also type-checks) in dir on pkgs.
func goVet(t *testing.T, dir string, pkgs ...string) {
	t.Helper()
	cmd := exec.Command("go", append([]string{"vet"}, pkgs...)...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go vet %s: %v\n%s", strings.Join(pkgs, " "), err, out)
	}
}

// checkGolden compares got with the file at path, or writes it with -update.
func checkGolden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if d := textdiff.Short(path, "want", "got", want, got); d != "" {
		t.Errorf("the generated output differs from the golden file (go test -update rewrites it):\n%s", d)
	}
}
