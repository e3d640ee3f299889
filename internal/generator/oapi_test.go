package generator_test

import (
	"bytes"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// oapiCodegenTool is the path of oapi-codegen's command at the version
// go.mod pins, built once (go tool -n builds it into the build cache and
// prints its path), so that it can run outside the module too.
var oapiCodegenTool = sync.OnceValues(func() (string, error) {
	cmd := exec.Command("go", "tool", "-n", "oapi-codegen")
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go tool -n oapi-codegen: %w", err)
	}
	return strings.TrimSpace(string(out)), nil
})

// oapiCodegen runs oapi-codegen's own command in dir with the config file
// cfg and the spec (both relative to dir, or absolute), and returns what it
// writes: the config must not name an output file. An error is
// oapi-codegen's own failure. It runs in a process of its own because
// oapi-codegen keeps its state in package variables that the generator
// drives too.
func oapiCodegen(t *testing.T, dir, cfg, spec string) ([]byte, error) {
	t.Helper()
	tool, err := oapiCodegenTool()
	if err != nil {
		t.Fatal(err)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(tool, "-config", cfg, spec)
	cmd.Dir = abs
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("oapi-codegen -config %s %s: %v\n%s", cfg, spec, err, stderr.Bytes())
	}
	if stdout.Len() == 0 {
		t.Fatalf("oapi-codegen -config %s %s wrote nothing to standard output; does the config name an output file?", cfg, spec)
	}
	return stdout.Bytes(), nil
}
