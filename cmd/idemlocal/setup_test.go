package main

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/idemgen/idemgen/runtime/redisstore/redistest"
)

// The set-up the README gives a new user (and docs/setup.md repeats) is
// run here exactly as written: its marked code blocks are read from the
// README, and each line of its command blocks runs as a command in a fresh
// module. A marked block is the fenced block after a line
// "<!-- setup:NAME ... -->".

// markedBlock returns the body of the fenced code block that follows the
// marker of name in doc.
func markedBlock(doc, name string) (string, error) {
	marker := "<!-- setup:" + name
	at := strings.Index(doc, marker)
	if at < 0 {
		return "", fmt.Errorf("no %q marker", marker)
	}
	if strings.Contains(doc[at+len(marker):], marker+" ") || strings.Contains(doc[at+len(marker):], marker+"-->") {
		return "", fmt.Errorf("two %q markers", marker)
	}
	rest := doc[at:]
	open := strings.Index(rest, "\n```")
	if open < 0 || strings.TrimSpace(rest[strings.Index(rest, "-->")+3:open]) != "" {
		return "", fmt.Errorf("marker %q is not followed by a code block", marker)
	}
	body := rest[open+4:]
	body = body[strings.Index(body, "\n")+1:] // past the fence's info string
	end := strings.Index(body, "```")
	if end < 0 {
		return "", fmt.Errorf("the code block of %q does not end", marker)
	}
	return body[:end], nil
}

// commands returns the command lines of a shell block: one command a line,
// blank lines and comments left out.
func commands(block string) [][]string {
	var out [][]string
	for _, line := range strings.Split(block, "\n") {
		if i := strings.Index(line, "#"); i >= 0 {
			line = line[:i]
		}
		if f := strings.Fields(line); len(f) > 0 {
			out = append(out, f)
		}
	}
	return out
}

// TestSetupAsDocumented: in a fresh module beside a checkout (../idemgen,
// a link to this one), the README's set-up commands, run exactly as
// written and in their order, with the README's generate.go lines and
// cfg.yaml, generate a marked operation's server that builds, serves on a
// real Redis, runs a request once and replays its retry. docs/setup.md has
// the same command blocks. No go.work, and no -mod=mod: a command that
// needs go.mod updated fails, as it does for a user.
func TestSetupAsDocumented(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a module against the checkout (the module proxy)")
	}
	rdb := redistest.Real(t)
	checkout, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join(checkout, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	setup, err := os.ReadFile(filepath.Join(checkout, "docs/setup.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks := map[string]string{}
	for _, name := range []string{"install", "generate.go", "cfg.yaml", "build"} {
		b, err := markedBlock(string(readme), name)
		if err != nil {
			t.Fatalf("README.md: %v", err)
		}
		blocks[name] = b
	}
	for _, name := range []string{"install", "build"} {
		b, err := markedBlock(string(setup), name)
		if err != nil {
			t.Fatalf("docs/setup.md: %v", err)
		}
		if b != blocks[name] {
			t.Errorf("docs/setup.md's setup:%s block differs from the README's:\n%s\nREADME:\n%s", name, b, blocks[name])
		}
	}

	root := t.TempDir()
	if err := os.Symlink(checkout, filepath.Join(root, "idemgen")); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "shop")
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
	write("openapi.yaml", shopSpec)
	write("api/cfg.yaml", blocks["cfg.yaml"])
	write("api/generate.go", "package api\n\n"+blocks["generate.go"])
	write("main.go", shopMain)

	// As a user's shell runs them: no go.work, and GOFLAGS without -mod.
	env := []string{"GOWORK=off"}
	var flags []string
	for _, f := range strings.Fields(os.Getenv("GOFLAGS")) {
		if !strings.HasPrefix(f, "-mod=") {
			flags = append(flags, f)
		}
	}
	env = append(append(os.Environ(), env...), "GOFLAGS="+strings.Join(flags, " "))
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(args[0], args[1:]...)
		cmd.Dir = dir
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	run("go", "mod", "init", "example.com/shop")
	var last string
	for _, name := range []string{"install", "build"} {
		for _, c := range commands(blocks[name]) {
			out := run(c...)
			t.Logf("$ %s\n%s", strings.Join(c, " "), out)
			if c[0] == "go" && c[1] == "run" {
				lines := strings.Split(strings.TrimSpace(out), "\n")
				last = lines[len(lines)-1]
			}
		}
	}
	// idemlocal's last line gives the order of the build block.
	var order []string
	for _, c := range commands(blocks["build"]) {
		order = append(order, strings.Join(c, " "))
	}
	if want := strings.Join(order, " && "); !strings.HasSuffix(last, want) {
		t.Errorf("idemlocal's last line %q does not give the documented order %q", last, want)
	}
	if _, err := os.Stat(filepath.Join(dir, "api/api.idem.gen.go")); err != nil {
		t.Fatalf("the documented commands generated no idemgen file: %v", err)
	}

	// The generated server builds, and serves the marked operation.
	bin := filepath.Join(root, "shop-server")
	run("go", "build", "-o", bin, ".")
	opt := rdb.Options()
	prefix := redistest.Prefix(t)
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), fmt.Sprintf("SHOP_REDIS=redis://%s/%d", opt.Addr, opt.DB), "SHOP_PREFIX="+prefix)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	lines := bufio.NewScanner(stdout)
	if !lines.Scan() || !strings.HasPrefix(lines.Text(), "listening ") {
		t.Fatalf("the shop did not start: %q; stderr:\n%s", lines.Text(), stderr.String())
	}
	url := "http://" + strings.TrimPrefix(lines.Text(), "listening ") + "/pets"
	hc := &http.Client{Timeout: time.Minute} // a safety net, not a measurement
	for i, wantReplayed := range []string{"", "true"} {
		req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"name":"Rex"}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", "setup-test-1")
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated || resp.Header.Get("Idempotent-Replayed") != wantReplayed || !strings.Contains(string(body), `"id":1`) {
			t.Errorf("request %d: %d %q (Idempotent-Replayed %q), want 201 with pet 1, replayed %q",
				i+1, resp.StatusCode, body, resp.Header.Get("Idempotent-Replayed"), wantReplayed)
		}
	}
	_ = cmd.Process.Kill() // its stdout ends; Wait (in Cleanup) comes after the reading
	runs := 0
	for lines.Scan() {
		if strings.HasPrefix(lines.Text(), "run ") {
			runs++
		}
	}
	if runs != 1 {
		t.Errorf("the handler ran %d times for one key, want 1", runs)
	}
}

// shopSpec is the fresh module's spec: one operation marked x-idempotent.
const shopSpec = `openapi: 3.0.3
info: {title: shop, version: 1.0.0}
paths:
  /pets:
    post:
      operationId: createPet
      x-idempotent: true
      requestBody:
        required: true
        content:
          application/json:
            schema: {$ref: "#/components/schemas/NewPet"}
      responses:
        "201":
          description: The pet
          content:
            application/json:
              schema: {$ref: "#/components/schemas/Pet"}
components:
  schemas:
    NewPet:
      type: object
      required: [name]
      properties:
        name: {type: string}
    Pet:
      type: object
      required: [id, name]
      properties:
        id: {type: integer}
        name: {type: string}
`

// shopMain serves the generated strict server on Redis ($SHOP_REDIS,
// prefix $SHOP_PREFIX), as the README's "Wire the server" does, on a free
// loopback port that it prints; each run of the handler prints a line.
const shopMain = `package main

import (
	"context"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"sync/atomic"

	"github.com/go-chi/chi/v5"
	"github.com/redis/go-redis/v9"

	"github.com/idemgen/idemgen/runtime/redisstore"

	"example.com/shop/api"
)

type shop struct{ pets atomic.Int64 }

func (s *shop) CreatePet(_ context.Context, req api.CreatePetRequestObject) (api.CreatePetResponseObject, error) {
	id := s.pets.Add(1)
	fmt.Println("run", id)
	return api.CreatePet201JSONResponse{Id: int(id), Name: req.Body.Name}, nil
}

func main() {
	opt, err := redis.ParseURL(os.Getenv("SHOP_REDIS"))
	if err != nil {
		log.Fatal(err)
	}
	opt.ContextTimeoutEnabled = true
	store := redisstore.New(redis.NewClient(opt), redisstore.WithPrefix(os.Getenv("SHOP_PREFIX")))
	if err := store.Check(context.Background()); err != nil {
		log.Fatal(err)
	}
	h := api.HandlerFromMux(api.NewStrictHandlerWithIdempotency(&shop{}, nil, store), chi.NewRouter())
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("listening", l.Addr())
	log.Fatal(http.Serve(l, h))
}
`
