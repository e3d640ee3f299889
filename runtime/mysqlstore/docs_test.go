package mysqlstore_test

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/idemgen/idemgen/runtime/mysqlstore/mysqltest"
)

// TestDocProgram follows docs/mysql.md: its program, taken from the doc as
// it is, is built in a fresh module (no go.work) beside the example
// petstore's generated strict server, wired to this checkout by
// cmd/idemlocal as docs/setup.md says, and run against a private MariaDB.
// A payment sent twice with one key is one row, and the retry is the
// replay of the first answer.
func TestDocProgram(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a fresh module against the checkout")
	}
	checkout, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join(checkout, "docs/mysql.md"))
	if err != nil {
		t.Fatal(err)
	}
	program := docProgram(t, string(doc))
	dir := t.TempDir()
	write := func(name string, b []byte) {
		t.Helper()
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", []byte("module example.com/shop\n\ngo 1.25.0\n"))
	write("main.go", []byte(program))
	for _, f := range []string{"cfg.yaml", "api.gen.go", "api.idem.gen.go"} {
		b, err := os.ReadFile(filepath.Join(checkout, "examples/petstore/api/strict", f))
		if err != nil {
			t.Fatal(err)
		}
		write("api/strict/"+f, b)
	}
	env := append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
	run := func(args ...string) {
		t.Helper()
		cmd := exec.Command(args[0], args[1:]...)
		cmd.Dir, cmd.Env = dir, env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	run("go", "run", filepath.Join(checkout, "cmd/idemlocal/main.go"))
	run("go", "mod", "tidy")
	run("go", "build", "-o", "shop", ".")

	srv := mysqltest.StartServer(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	shop := exec.Command(filepath.Join(dir, "shop"))
	shop.Env = append(os.Environ(), "MYSQL_DSN="+srv.DSN(), "ADDR="+addr, "IDEM_SCOPE_SECRET=a-secret-of-the-test")
	var out bytes.Buffer
	shop.Stdout, shop.Stderr = &out, &out
	if err := shop.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = shop.Process.Kill(); _ = shop.Wait() })
	for deadline := time.Now().Add(30 * time.Second); ; {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			_ = c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the doc's program did not listen on %s: %v\n%s", addr, err, out.String())
		}
		time.Sleep(50 * time.Millisecond) // waiting for an external process to come up, not test synchronisation
	}
	pay := func() (int, string, string) {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, "http://"+addr+"/payments",
			strings.NewReader(`{"amount":2500,"currency":"EUR","idempotency_key":"doc-1"}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-API-Key", "caller-1")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), resp.Header.Get("Idempotent-Replayed")
	}
	st, body, _ := pay()
	if st != http.StatusCreated {
		t.Fatalf("first payment: %d %s\n%s", st, body, out.String())
	}
	st2, body2, replayed := pay()
	if st2 != st || body2 != body || replayed != "true" {
		t.Fatalf("retry: %d %s (Idempotent-Replayed %q), want the replay of %d %s", st2, body2, replayed, st, body)
	}
	db := mysqltest.DBOf(t, srv.DSN(), 1)
	if n := mysqltest.Count(t, db, "payments", "true"); n != 1 {
		t.Fatalf("%d payment rows, want 1", n)
	}
}

// docProgram is the doc's Go code block that is a program.
func docProgram(t *testing.T, doc string) string {
	t.Helper()
	for rest := doc; ; {
		_, after, ok := strings.Cut(rest, "```go\n")
		if !ok {
			t.Fatal("docs/mysql.md has no Go program (a ```go block with package main)")
		}
		block, tail, ok := strings.Cut(after, "```")
		if !ok {
			t.Fatal("docs/mysql.md: a ```go block is not closed")
		}
		if strings.HasPrefix(block, "package main\n") {
			return block
		}
		rest = tail
	}
}
