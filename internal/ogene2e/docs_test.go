package ogene2e_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idemgen/idemgen/runtime/redisstore/redistest"
)

// docBlock returns the fenced code block after docs/ogen.md's marker
// "<!-- ogen:NAME".
func docBlock(t *testing.T, doc, name string) string {
	t.Helper()
	_, rest, ok := strings.Cut(doc, "<!-- ogen:"+name+" ")
	if !ok {
		_, rest, ok = strings.Cut(doc, "<!-- ogen:"+name+"-->")
	}
	_, body, fenced := strings.Cut(rest, "-->\n```")
	_, body, _ = strings.Cut(body, "\n") // past the fence's info string
	body, _, closed := strings.Cut(body, "```")
	if !ok || !fenced || !closed {
		t.Fatalf("docs/ogen.md: no code block after the marker ogen:%s", name)
	}
	return body
}

// TestOgenDocAsWritten: in a fresh module beside a checkout (../idemgen, a
// link to this one), docs/ogen.md's commands, run as written and in their
// order, with its spec, generate.go and main.go, build a program that
// serves on a real Redis and calls itself twice with one key: one run, the
// same answer twice. No go.work and no -mod=mod, as for a user.
func TestOgenDocAsWritten(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a module against the checkout (the module proxy)")
	}
	rdb, prefix := redistest.Keyspace(t)
	checkout, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	text, err := os.ReadFile(filepath.Join(checkout, "docs/ogen.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(text)
	root := t.TempDir()
	if err := os.Symlink(checkout, filepath.Join(root, "idemgen")); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "shop")
	for name, content := range map[string]string{
		"openapi.yaml":    docBlock(t, doc, "openapi.yaml"),
		"api/generate.go": "package api\n\n" + docBlock(t, doc, "generate.go"),
		"main.go":         docBlock(t, doc, "main.go"),
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var flags []string
	for _, f := range strings.Fields(os.Getenv("GOFLAGS")) {
		if !strings.HasPrefix(f, "-mod=") {
			flags = append(flags, f)
		}
	}
	opt := rdb.Options()
	env := append(os.Environ(), "GOWORK=off", "GOFLAGS="+strings.Join(flags, " "),
		fmt.Sprintf("REDIS_URL=redis://%s/%d", opt.Addr, opt.DB), "SHOP_PREFIX="+prefix)
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(args[0], args[1:]...)
		cmd.Dir, cmd.Env = dir, env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("$ %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	run("go", "mod", "init", "example.com/shop")
	for _, block := range []string{"install", "build"} {
		for _, line := range strings.Split(docBlock(t, doc, block), "\n") {
			if f := strings.Fields(line); len(f) > 0 && !strings.HasPrefix(f[0], "#") {
				run(f...)
			}
		}
	}
	bin := filepath.Join(root, "shop-bin")
	run("go", "build", "-o", bin, ".")
	prog := exec.Command(bin)
	prog.Env = env
	var stderr strings.Builder
	prog.Stderr = &stderr
	got, err := prog.Output()
	if err != nil {
		t.Fatalf("the program: %v\n%s", err, stderr.String())
	}
	if want := "order-1 book book-1\norder-1 book book-1\n"; string(got) != want {
		t.Errorf("the program printed %q, want %q: one run, its answer twice", got, want)
	}
}
