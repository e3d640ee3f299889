package idem_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestClientLinksNoDriver: a program that only uses a generated client (the
// petstore's) links package idem but neither go-redis nor the Lua scripts,
// which only runtime/redisstore imports, nor OpenTelemetry, which only
// runtime/idemotel imports, nor a web framework (echo, gin), which only
// runtime/idemecho and runtime/idemgin import, nor pgx, which only
// runtime/pgstore imports. Of the runtime's packages it links only
// runtime/internal/..., the store contract, runtime/idemstore, which
// imports the standard library alone, the operation description,
// runtime/idemop, which imports only idemstore, and the plumbing of
// generated code, runtime/idemgen, which imports only those and idem. The
// same holds for a chi server (the
// petstore's plain one).
func TestClientLinksNoDriver(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	for _, pkg := range []string{
		"github.com/idemgen/idemgen/runtime",
		"github.com/idemgen/idemgen/examples/petstore/api/client",
		"github.com/idemgen/idemgen/examples/petstore/api/plain",
	} {
		out, err := exec.Command("go", "list", "-deps", pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps %s: %v\n%s", pkg, err, out)
		}
		deps := strings.Fields(string(out))
		if !slices.Contains(deps, "github.com/idemgen/idemgen/runtime") {
			t.Fatalf("go list -deps %s does not list the runtime: %s", pkg, out)
		}
		for _, dep := range deps {
			if strings.HasPrefix(dep, "github.com/redis/") || dep == "github.com/idemgen/idemgen/lua" ||
				strings.HasPrefix(dep, "go.opentelemetry.io/") ||
				strings.HasPrefix(dep, "github.com/labstack/") || strings.HasPrefix(dep, "github.com/gin-gonic/") ||
				strings.HasPrefix(dep, "github.com/jackc/") ||
				(strings.HasPrefix(dep, "github.com/idemgen/idemgen/runtime/") && !strings.HasPrefix(dep, "github.com/idemgen/idemgen/runtime/internal/") &&
					dep != "github.com/idemgen/idemgen/runtime/idemstore" && dep != "github.com/idemgen/idemgen/runtime/idemop" &&
					dep != "github.com/idemgen/idemgen/runtime/idemgen") {
				t.Errorf("%s depends on %s", pkg, dep)
			}
		}
	}
}

// TestStoreContractIsALeaf: runtime/idemstore, which every store imports,
// imports the standard library alone; the stores import it and not the
// engine.
func TestStoreContractIsALeaf(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	for pkg, allowed := range map[string][]string{
		"./idemstore":  {"github.com/idemgen/idemgen/runtime/idemstore"},
		"./idemop":     {"github.com/idemgen/idemgen/runtime/idemstore", "github.com/idemgen/idemgen/runtime/idemop"},
		"./redisstore": {"github.com/idemgen/idemgen/runtime/idemstore", "github.com/idemgen/idemgen/lua", "github.com/idemgen/idemgen/runtime/redisstore"},
	} {
		out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps %s: %v\n%s", pkg, err, out)
		}
		for _, dep := range strings.Fields(string(out)) {
			if strings.HasPrefix(dep, "github.com/idemgen/") && !slices.Contains(allowed, dep) {
				t.Errorf("%s depends on %s", pkg, dep)
			}
		}
	}
}

// TestEngineTestsDoNotLinkRedis: the engine's own tests run on the
// reference store (idemstore/memstore), as database/sql's run on its fake
// driver: `go list -deps -test` of the engine lists no Redis store, no
// Redis driver or test server and no Redis test helper. The engine's tests
// on Redis live in runtime/redisstore/e2e. CI runs this test.
func TestEngineTestsDoNotLinkRedis(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	out, err := exec.Command("go", "list", "-deps", "-test", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps -test: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if !slices.Contains(deps, "github.com/idemgen/idemgen/runtime/idemstore/memstore") {
		t.Errorf("the engine's tests do not link the reference store: %s", out)
	}
	for _, dep := range deps {
		switch {
		case dep == "github.com/idemgen/idemgen/runtime/redisstore", dep == "github.com/idemgen/idemgen/runtime/redisstore/embedredis",
			dep == "github.com/idemgen/idemgen/lua",
			strings.HasPrefix(dep, "github.com/idemgen/idemgen/runtime/redisstore/redistest"),
			strings.HasPrefix(dep, "github.com/redis/"), strings.HasPrefix(dep, "github.com/alicebob/miniredis"):
			t.Errorf("the engine's tests depend on %s", dep)
		}
	}
}
