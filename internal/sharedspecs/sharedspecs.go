// Package sharedspecs finds the real-world vendor specs that the project's
// shared folder keeps beside the repository (../shared/specs), for the
// conformance tests. The folder is not part of the repository: a test that
// needs it skips without it, except under CI=true, where CI provides it and
// its absence fails the test.
package sharedspecs

import (
	"os"
	"path/filepath"
	"testing"
)

// PayPal returns the paths of PayPal's published specs (*.json in
// ../shared/specs/paypal beside the module root), or skips t (fails it under
// CI=true) when there are none.
func PayPal(t testing.TB) []string {
	t.Helper()
	dir := filepath.Join(moduleRoot(t), "..", "shared", "specs", "paypal")
	specs, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	if len(specs) == 0 {
		if os.Getenv("CI") == "true" {
			t.Fatalf("PayPal specs not found in %s; CI must have the shared folder beside the repository", dir)
		}
		t.Skipf("PayPal specs not found in %s (the shared folder is not beside this clone); skipping", dir)
	}
	return specs
}

// moduleRoot returns the nearest directory at or above the working directory
// (a test's package directory) that holds go.mod.
func moduleRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod at or above the working directory")
		}
		dir = parent
	}
}
