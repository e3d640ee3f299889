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
	return find(t, "PayPal specs", "paypal/*.json")
}

// All returns the paths of every spec in ../shared/specs (*.json and *.yaml
// in its folders), or skips t (fails it under CI=true) when there are none.
func All(t testing.TB) []string {
	t.Helper()
	return find(t, "vendor specs", "*/*.json", "*/*.yaml")
}

// find returns the files of ../shared/specs that match patterns, or skips t
// (fails it under CI=true) when there are none; what names them in the
// message.
func find(t testing.TB, what string, patterns ...string) []string {
	t.Helper()
	dir := filepath.Join(moduleRoot(t), "..", "shared", "specs")
	var specs []string
	for _, p := range patterns {
		m, _ := filepath.Glob(filepath.Join(dir, p))
		specs = append(specs, m...)
	}
	if len(specs) == 0 {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s not found in %s; CI must have the shared folder beside the repository", what, dir)
		}
		t.Skipf("%s not found in %s (the shared folder is not beside this clone); skipping", what, dir)
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
