package main

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestWireFreshModule: a fresh module (no go.work, -mod=mod) that imports
// the runtime, the Redis and PostgreSQL stores and an adapter, and holds the petstore's
// generated strict server, builds against this checkout after one run of
// the command, as the docs give it: go mod tidy and go build succeed, and
// the idemgen tool line runs from the checkout (-check finds the generated
// file fresh). Without the command, go mod tidy fails with 403 Forbidden
// from the module proxy once for each of idemgen's modules it reaches.
func TestWireFreshModule(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a module against the checkout (go mod tidy through the module proxy)")
	}
	checkout, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(name, text string) {
		t.Helper()
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	copyFile := func(from, to string) {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(checkout, from))
		if err != nil {
			t.Fatal(err)
		}
		write(to, string(b))
	}
	write("go.mod", "module example.com/fresh\n\ngo 1.25.0\n")
	copyFile("examples/petstore/api/openapi.yaml", "api/openapi.yaml")
	for _, f := range []string{"cfg.yaml", "api.gen.go", "api.idem.gen.go"} {
		copyFile("examples/petstore/api/strict/"+f, "api/strict/"+f)
	}
	write("main.go", `package main

import (
	"fmt"

	"github.com/idemgen/idemgen/runtime/idemecho"
	"github.com/idemgen/idemgen/runtime/idemop"
	"github.com/idemgen/idemgen/runtime/pgstore"
	"github.com/idemgen/idemgen/runtime/redisstore"

	strictapi "example.com/fresh/api/strict"
)

func main() {
	fmt.Println(idemop.MaxVersion, redisstore.New, pgstore.New, idemecho.ServeBody, strictapi.NewStrictHandlerWithIdempotency)
}
`)

	env := append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
	run := func(in string, args ...string) string {
		t.Helper()
		cmd := exec.Command(args[0], args[1:]...)
		cmd.Dir = in
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("in %s: %s: %v\n%s", in, strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	// As a user runs it: the file from their module's directory, the
	// checkout found from the file's own place.
	rel, err := filepath.Rel(dir, filepath.Join(checkout, "cmd/idemlocal/main.go"))
	if err != nil {
		t.Fatal(err)
	}
	t.Log(run(dir, "go", "run", rel))
	run(dir, "go", "mod", "tidy")
	run(dir, "go", "build", "./...")
	run(filepath.Join(dir, "api/strict"), "go", "tool", "idemgen", "-check", "-config", "cfg.yaml", "-o", "api.idem.gen.go", "../openapi.yaml")
}

// TestWireRefuses: a directory without go.mod, a checkout that is not
// idemgen's, and idemgen's own modules are refused, saying why.
func TestWireRefuses(t *testing.T) {
	checkout, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	notModule := t.TempDir()
	other := t.TempDir()
	if err := os.WriteFile(filepath.Join(other, "go.mod"), []byte("module example.com/other\n\ngo 1.25.0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ dir, checkout, want string }{
		{notModule, checkout, "has no go.mod"},
		{other, other, "is not a checkout of idemgen"},
		{filepath.Join(checkout, "runtime"), checkout, "is idemgen's own module github.com/idemgen/idemgen/runtime"},
		{other, "", "cannot tell where the checkout is"},
	} {
		err := wire(c.dir, c.checkout, io.Discard)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("wire(%s, %s) = %v, want an error saying %q", c.dir, c.checkout, err, c.want)
		}
	}
}
