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
	checkout, readme := readme(t)
	setup, err := os.ReadFile(filepath.Join(checkout, "docs/setup.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"install", "build"} {
		b, err := markedBlock(string(setup), name)
		if err != nil {
			t.Fatalf("docs/setup.md: %v", err)
		}
		if b != readme[name] {
			t.Errorf("docs/setup.md's setup:%s block differs from the README's:\n%s\nREADME:\n%s", name, b, readme[name])
		}
	}
	root := t.TempDir()
	if err := os.Symlink(checkout, filepath.Join(root, "idemgen")); err != nil {
		t.Fatal(err)
	}
	m := newUserModule(t, root, readme, nil)
	var last string
	for _, name := range []string{"install", "build"} {
		for _, out := range m.runBlock(readme[name]) {
			if out.cmd[0] == "go" && out.cmd[1] == "run" {
				lines := strings.Split(strings.TrimSpace(out.output), "\n")
				last = lines[len(lines)-1]
			}
		}
	}
	// idemlocal's last line gives the order of the build block.
	var order []string
	for _, c := range commands(readme["build"]) {
		order = append(order, strings.Join(c, " "))
	}
	if want := strings.Join(order, " && "); !strings.HasSuffix(last, want) {
		t.Errorf("idemlocal's last line %q does not give the documented order %q", last, want)
	}
	m.serves()
}

// TestReleaseInstallsAsDocumented rehearses a release: internal/release
// writes this checkout's published modules, as a release at a version
// would publish them, into a module proxy on disk; then, in a fresh module
// whose GOPROXY serves that proxy first, the README's install commands for
// a published release (setup:release) and its build commands, run exactly
// as written, generate a marked operation's server that builds, serves on
// a real Redis, runs a request once and replays its retry. So the README's
// commands and the modules a release publishes cannot disagree.
func TestReleaseInstallsAsDocumented(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a module proxy and a module from it")
	}
	checkout, readme := readme(t)
	root := t.TempDir()
	proxy := filepath.Join(root, "proxy")
	rel := exec.Command("go", "run", ".", "-C", checkout, "-version", "v0.1.0", "-proxy", proxy)
	rel.Dir = filepath.Join(checkout, "internal/release")
	if out, err := rel.CombinedOutput(); err != nil {
		t.Fatalf("internal/release: %v\n%s", err, out)
	}
	// The release's modules come from the proxy on disk, everything else
	// from this machine's module cache first (itself a module proxy's
	// layout), then from GOPROXY; a private module cache keeps the
	// rehearsal's v0.1.0 out of the machine's, where it would outlive it.
	cache := strings.TrimSpace(goEnv(t, "GOMODCACHE"))
	env := []string{
		"GOPROXY=file://" + filepath.ToSlash(proxy) + ",file://" + filepath.ToSlash(filepath.Join(cache, "cache/download")) + "," + strings.TrimSpace(goEnv(t, "GOPROXY")),
		"GONOSUMDB=github.com/idemgen/idemgen",
		"GOMODCACHE=" + filepath.Join(root, "modcache"),
		"GOFLAGS=-modcacherw",
	}
	m := newUserModule(t, root, readme, env)
	m.runBlock(readme["release"])
	m.runBlock(readme["build"])
	if mods := m.run("go", "list", "-m", "github.com/idemgen/idemgen/..."); !strings.Contains(mods, "github.com/idemgen/idemgen/runtime v0.1.0") {
		t.Errorf("the module does not use the release's runtime:\n%s", mods)
	}
	m.serves()
}

// readme returns the checkout's directory and the README's set-up blocks.
func readme(t *testing.T) (string, map[string]string) {
	t.Helper()
	checkout, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join(checkout, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks := map[string]string{}
	for _, name := range []string{"release", "install", "generate.go", "cfg.yaml", "build"} {
		b, err := markedBlock(string(doc), name)
		if err != nil {
			t.Fatalf("README.md: %v", err)
		}
		blocks[name] = b
	}
	return checkout, blocks
}

// goEnv returns `go env name`.
func goEnv(t *testing.T, name string) string {
	t.Helper()
	out, err := exec.Command("go", "env", name).Output()
	if err != nil {
		t.Fatalf("go env %s: %v", name, err)
	}
	return string(out)
}

// userModule is a fresh module, root/shop, with the shop's spec and
// program and the README's generate.go and cfg.yaml, in which commands
// run as a user's shell runs them: no go.work, GOFLAGS without -mod.
type userModule struct {
	t         *testing.T
	root, dir string
	env       []string
}

// newUserModule makes the module, with env added to the commands'.
func newUserModule(t *testing.T, root string, readme map[string]string, env []string) *userModule {
	m := &userModule{t: t, root: root, dir: filepath.Join(root, "shop")}
	write := func(name, text string) {
		t.Helper()
		path := filepath.Join(m.dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("openapi.yaml", shopSpec)
	write("api/cfg.yaml", readme["cfg.yaml"])
	write("api/generate.go", "package api\n\n"+readme["generate.go"])
	write("main.go", shopMain)
	var flags []string
	for _, f := range strings.Fields(os.Getenv("GOFLAGS")) {
		if !strings.HasPrefix(f, "-mod=") {
			flags = append(flags, f)
		}
	}
	m.env = append(append(os.Environ(), "GOWORK=off", "GOFLAGS="+strings.Join(flags, " ")), env...)
	m.run("go", "mod", "init", "example.com/shop")
	return m
}

// run runs a command in the module and returns its output; a failure
// fails the test.
func (m *userModule) run(args ...string) string {
	m.t.Helper()
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Dir = m.dir
	cmd.Env = m.env
	out, err := cmd.CombinedOutput()
	if err != nil {
		m.t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// ran is a command of a block and its output.
type ran struct {
	cmd    []string
	output string
}

// runBlock runs each command of a shell block, in order.
func (m *userModule) runBlock(block string) []ran {
	m.t.Helper()
	var out []ran
	for _, c := range commands(block) {
		o := m.run(c...)
		m.t.Logf("$ %s\n%s", strings.Join(c, " "), o)
		out = append(out, ran{c, o})
	}
	return out
}

// serves checks that the commands generated the idemgen file, and that the
// module's server builds and serves the marked operation on a real Redis:
// 201, then the replay, one run of the handler.
func (m *userModule) serves() {
	t := m.t
	t.Helper()
	if _, err := os.Stat(filepath.Join(m.dir, "api/api.idem.gen.go")); err != nil {
		t.Fatalf("the documented commands generated no idemgen file: %v", err)
	}
	rdb := redistest.Real(t)
	bin := filepath.Join(m.root, "shop-server")
	m.run("go", "build", "-o", bin, ".")
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
