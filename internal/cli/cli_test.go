package cli_test

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idemgen/idemgen/internal/cli"
)

// CI passes -update to every package under internal/ when it rewrites
// golden files; this package compares with testdata/golden but never writes.
var _ = flag.Bool("update", false, "unused here")

// inCase copies a golden case's spec and config into a temporary directory
// and makes it the working directory, so paths are relative as under
// go generate.
func inCase(t *testing.T, name string) (want []byte) {
	t.Helper()
	src := filepath.Join("..", "..", "testdata", "golden", name)
	dir := t.TempDir()
	for _, f := range []string{"openapi.yaml", "cfg.yaml"} {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, _ = os.ReadFile(filepath.Join(src, "api.idem.gen.go"))
	t.Chdir(dir)
	return want
}

func run(args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	code = cli.Run(context.Background(), args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		msg  string
	}{
		{nil, cli.ExitUsage, "exactly one OpenAPI document"},
		{[]string{"a.yaml", "b.yaml"}, cli.ExitUsage, "exactly one OpenAPI document"},
		{[]string{"openapi.yaml"}, cli.ExitUsage, "-config is required"},
		{[]string{"-config", "cfg.yaml", "-check", "openapi.yaml"}, cli.ExitUsage, "-check needs -o"},
		{[]string{"-bogus"}, cli.ExitUsage, "flag provided but not defined"},
		{[]string{"-h"}, cli.ExitOK, "usage: idemgen"},
	} {
		code, _, stderr := run(tc.args...)
		if code != tc.code || !strings.Contains(stderr, tc.msg) {
			t.Errorf("%q: exit %d, stderr %q; want %d and %q", tc.args, code, stderr, tc.code, tc.msg)
		}
	}
}

func TestWriteAndCheck(t *testing.T) {
	want := inCase(t, "headerkey")
	args := []string{"-config", "cfg.yaml", "-o", "gen/api.idem.gen.go", "openapi.yaml"}

	if code, _, stderr := run(append([]string{"-check"}, args...)...); code != cli.ExitError || !strings.Contains(stderr, "does not exist; run go generate") {
		t.Errorf("-check before generating: exit %d, stderr %q", code, stderr)
	}
	if code, stdout, stderr := run(args...); code != cli.ExitOK || stdout != "" || stderr != "" {
		t.Fatalf("generate: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	got, err := os.ReadFile("gen/api.idem.gen.go")
	if err != nil {
		t.Fatal(err)
	}
	// The header names the spec relative to the generated file's directory.
	want = bytes.Replace(want, []byte("// source: openapi.yaml\n"), []byte("// source: ../openapi.yaml\n"), 1)
	if !bytes.Equal(got, want) {
		t.Errorf("written file differs from testdata/golden/headerkey/api.idem.gen.go but for its source line")
	}
	if code, _, stderr := run(append([]string{"-check"}, args...)...); code != cli.ExitOK || stderr != "" {
		t.Errorf("-check when fresh: exit %d, stderr %q", code, stderr)
	}

	stale := bytes.Replace(got, []byte("Lock:      30 * time.Second"), []byte("Lock:      31 * time.Second"), 1)
	if err := os.WriteFile("gen/api.idem.gen.go", stale, 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := run(append([]string{"-check"}, args...)...)
	if code != cli.ExitError {
		t.Errorf("-check when stale: exit %d", code)
	}
	for _, s := range []string{"--- gen/api.idem.gen.go (on disk)", "-\tLock:      31 * time.Second,", "+\tLock:      30 * time.Second,", "idemgen: gen/api.idem.gen.go is stale; run go generate"} {
		if !strings.Contains(stderr, s) {
			t.Errorf("-check stderr lacks %q:\n%s", s, stderr)
		}
	}
}

func TestStdout(t *testing.T) {
	want := inCase(t, "headerkey")
	code, stdout, stderr := run("-config", "cfg.yaml", "openapi.yaml")
	if code != cli.ExitOK || stdout != string(want) || stderr != "" {
		t.Errorf("exit %d, stderr %q, stdout equal to golden: %v", code, stderr, stdout == string(want))
	}
}

func TestSpecError(t *testing.T) {
	inCase(t, "headerkey")
	spec, err := os.ReadFile("openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	bad := strings.Replace(string(spec), "      x-idempotent: true\n", "      x-idempotent:\n        lock: 10\n", 1)
	if err := os.WriteFile("openapi.yaml", []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := run("-config", "cfg.yaml", "-o", "api.idem.gen.go", "openapi.yaml")
	want := "idemgen: openapi.yaml:22: operation createPet: x-idempotent.lock: must be a duration string such as \"30s\", got number 10\n"
	if code != cli.ExitError || stderr != want {
		t.Errorf("exit %d, stderr\n%q\nwant\n%q", code, stderr, want)
	}
	if _, err := os.Stat("api.idem.gen.go"); !os.IsNotExist(err) {
		t.Errorf("a file was written despite the error")
	}
}

func TestMissingConfig(t *testing.T) {
	inCase(t, "headerkey")
	code, _, stderr := run("-config", "nope.yaml", "openapi.yaml")
	if code != cli.ExitError || !strings.HasPrefix(stderr, "idemgen: open nope.yaml:") {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
}

// TestEveryError: a spec with several problems gets every one reported, one
// a line, sorted by line, and exit 1 with nothing written.
func TestEveryError(t *testing.T) {
	src := filepath.Join("..", "..", "testdata", "golden", "error-several")
	want, err := os.ReadFile(filepath.Join(src, "error.txt"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, f := range []string{"openapi.yaml", "cfg.yaml"} {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Chdir(dir)
	code, _, stderr := run("-config", "cfg.yaml", "-o", "api.idem.gen.go", "openapi.yaml")
	if code != cli.ExitError || stderr != string(want) {
		t.Errorf("exit %d, stderr\n%s\nwant\n%s", code, stderr, want)
	}
	if n := strings.Count(stderr, "\nidemgen: ") + 1; n < 8 {
		t.Errorf("%d errors reported, want every one of the 8", n)
	}
	if _, err := os.Stat("api.idem.gen.go"); !os.IsNotExist(err) {
		t.Errorf("a file was written despite the errors")
	}
}

// TestOutputDoesNotDependOnWorkingDirectory: a file generated by go generate
// in the package directory (spec ../openapi.yaml) is fresh for -check run
// from the module root (spec api/openapi.yaml), and the other way round,
// because the header names the spec relative to the generated file.
func TestOutputDoesNotDependOnWorkingDirectory(t *testing.T) {
	inCase(t, "headerkey")
	if err := os.Mkdir("api", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename("cfg.yaml", "api/cfg.yaml"); err != nil {
		t.Fatal(err)
	}
	root, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	fromPackage := []string{"-config", "cfg.yaml", "-o", "api.idem.gen.go", "../openapi.yaml"}
	fromRoot := []string{"-config", "api/cfg.yaml", "-o", "api/api.idem.gen.go", "openapi.yaml"}

	t.Chdir("api")
	if code, _, stderr := run(fromPackage...); code != cli.ExitOK {
		t.Fatalf("generate in the package directory: exit %d, %s", code, stderr)
	}
	got, err := os.ReadFile("api.idem.gen.go")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(got), "\n// source: ../openapi.yaml\n") {
		t.Errorf("header does not name the spec relative to the generated file:\n%s", got[:120])
	}
	t.Chdir(root)
	if code, _, stderr := run(append([]string{"-check"}, fromRoot...)...); code != cli.ExitOK {
		t.Errorf("-check from the module root of a file generated in the package directory: exit %d\n%s", code, stderr)
	}
	if code, _, stderr := run(fromRoot...); code != cli.ExitOK {
		t.Fatalf("generate from the module root: exit %d, %s", code, stderr)
	}
	again, err := os.ReadFile("api/api.idem.gen.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, again) {
		t.Errorf("generating from the module root gives another file than from the package directory")
	}
	t.Chdir("api")
	if code, _, stderr := run(append([]string{"-check"}, fromPackage...)...); code != cli.ExitOK {
		t.Errorf("-check from the package directory: exit %d\n%s", code, stderr)
	}
}

// TestWrapsNothingNote: a config asking for a server and client, whose
// filter leaves out every marked operation, gets the golden file (which
// compiles, TestGoldenBuild) and a note saying why it wraps nothing; a
// models-only config gets the file and no note.
func TestWrapsNothingNote(t *testing.T) {
	want := inCase(t, "bare-filtered")
	code, _, stderr := run("-config", "cfg.yaml", "-o", "api.idem.gen.go", "openapi.yaml")
	if code != cli.ExitOK || !strings.Contains(stderr, "idemgen: note: api.idem.gen.go wraps no operation: the spec marks 2 operations x-idempotent, and this configuration's filters") {
		t.Errorf("exit %d, stderr %q; want a note", code, stderr)
	}
	if got, _ := os.ReadFile("api.idem.gen.go"); !bytes.Equal(got, want) {
		t.Errorf("the file differs from the golden bare-filtered/api.idem.gen.go:\n%s", got)
	}
	if code, _, stderr = run("-config", "cfg.yaml", "-o", "api.idem.gen.go", "-check", "openapi.yaml"); code != cli.ExitOK || stderr != "" {
		t.Errorf("-check: exit %d, stderr %q; want 0 and silence", code, stderr)
	}
	if err := os.WriteFile("models.yaml", []byte("package: filtered\ngenerate:\n  models: true\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr = run("-config", "models.yaml", "-o", "models.idem.gen.go", "openapi.yaml"); code != cli.ExitOK || stderr != "" {
		t.Errorf("models-only: exit %d, stderr %q; want 0 and no note", code, stderr)
	}
}
