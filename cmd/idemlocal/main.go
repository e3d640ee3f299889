// Command idemlocal wires a Go module to a local checkout of idemgen: it
// adds a replace line for every module of the checkout that the module can
// end up requiring (the generator, the runtime, the stores, the adapters, and
// the checkout's modules those require), requires the generator, and adds
// the idemgen and idemctl tool lines. Run it in your module's directory:
//
//	go run ../idemgen/cmd/idemlocal/main.go
//	go mod tidy
//	go generate ./...
//	go mod tidy
//
// The first go mod tidy records the sums of the modules the idemgen tool is
// built from (go generate fails with "updates to go.mod needed" without
// it); the second adds what the generated files import. idemlocal prints
// that order as its last line.
//
// idemgen's modules are not on the module proxy under the versions a
// checkout's go.mod files name (v0.0.0), so without every replace `go mod
// tidy` fails with "403 Forbidden" once for each module it has not seen
// yet, and `go get -tool` cannot use a checkout at all. idemlocal runs
// `go mod edit` with those lines; it prints the command and changes nothing
// else.
//
// It is one file that imports the standard library only, so that `go run`
// can build it from any module (a package directory outside the main module
// cannot be run). The checkout is the one this file is in; an argument names
// another: go run .../main.go [-C dir] [checkout].
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
)

// rootModule is the module path of the checkout's root: the generator.
const rootModule = "github.com/idemgen/idemgen"

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	flags := flag.NewFlagSet("idemlocal", flag.ContinueOnError)
	flags.SetOutput(stderr)
	dir := flags.String("C", ".", "the directory of the module to wire")
	flags.Usage = func() {
		fmt.Fprintln(stderr, "usage: go run /path/to/idemgen/cmd/idemlocal/main.go [-C dir] [checkout]")
		flags.PrintDefaults()
	}
	if err := flags.Parse(args); err != nil {
		return 2
	}
	if flags.NArg() > 1 {
		flags.Usage()
		return 2
	}
	checkout := flags.Arg(0)
	if checkout == "" {
		checkout = thisCheckout()
	}
	if err := wire(*dir, checkout, stdout); err != nil {
		fmt.Fprintln(stderr, "idemlocal:", err)
		return 1
	}
	return 0
}

// thisCheckout is the checkout this file was compiled from, "" when the
// build did not record it (-trimpath).
func thisCheckout() string {
	_, file, _, ok := runtime.Caller(0)
	if !ok || !filepath.IsAbs(file) {
		return ""
	}
	return filepath.Dir(filepath.Dir(filepath.Dir(file)))
}

// wire edits the go.mod in dir to use the idemgen checkout.
func wire(dir, checkout string, stdout io.Writer) error {
	if checkout == "" {
		return errors.New("cannot tell where the checkout is: name it, go run .../cmd/idemlocal/main.go /path/to/idemgen")
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	if checkout, err = filepath.Abs(checkout); err != nil {
		return err
	}
	// A checkout reached through a symbolic link (../idemgen linking to
	// it) is walked at its real place: WalkDir does not follow a link.
	if real, err := filepath.EvalSymlinks(checkout); err == nil {
		checkout = real
	}
	if _, err := os.Stat(filepath.Join(dir, "go.mod")); err != nil {
		return fmt.Errorf("%s has no go.mod: run go mod init first, or give the module's directory with -C", dir)
	}
	mods, err := checkoutModules(checkout)
	if err != nil {
		return err
	}
	if root, ok := mods[rootModule]; !ok || root.dir != checkout {
		return fmt.Errorf("%s is not a checkout of idemgen: its go.mod is not module %s", checkout, rootModule)
	}
	if mod, err := modFile(filepath.Join(dir, "go.mod")); err == nil && strings.HasPrefix(mod.Module.Path+"/", rootModule+"/") {
		return fmt.Errorf("%s is idemgen's own module %s: run idemlocal in a module that uses idemgen", dir, mod.Module.Path)
	}
	args := []string{"-require=" + rootModule + "@v0.0.0"}
	for _, path := range needed(mods) {
		rel, err := filepath.Rel(dir, mods[path].dir)
		if err != nil {
			rel = mods[path].dir
		} else if !strings.HasPrefix(rel, "..") {
			rel = "." + string(filepath.Separator) + rel
		}
		args = append(args, "-replace="+path+"="+filepath.ToSlash(rel))
	}
	args = append(args, "-tool="+rootModule+"/cmd/idemgen", "-tool="+rootModule+"/cmd/idemctl")
	fmt.Fprintln(stdout, "go mod edit "+strings.Join(args, " \\\n  "))
	if err := goCmd(dir, append([]string{"mod", "edit"}, args...)...); err != nil {
		return err
	}
	fmt.Fprintln(stdout, nextSteps)
	return nil
}

// nextSteps is idemlocal's last line: the order that works after it (the
// README's and docs/setup.md's setup:build block, which
// TestSetupAsDocumented runs).
const nextSteps = "Now run, in this order: go mod tidy && go generate ./... && go mod tidy"

// module is one module of the checkout.
type module struct {
	dir      string
	requires []string // the checkout's modules its go.mod requires
}

// checkoutModules reads every go.mod of the checkout whose module is one of
// idemgen's, by module path.
func checkoutModules(checkout string) (map[string]module, error) {
	mods := map[string]module{}
	err := filepath.WalkDir(checkout, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != checkout && strings.HasPrefix(d.Name(), ".") {
			return filepath.SkipDir
		}
		if d.IsDir() || d.Name() != "go.mod" {
			return nil
		}
		f, err := modFile(path)
		if err != nil {
			return err
		}
		if !isIdemgen(f.Module.Path) {
			return nil
		}
		m := module{dir: filepath.Dir(path)}
		for _, r := range f.Require {
			if isIdemgen(r.Path) {
				m.requires = append(m.requires, r.Path)
			}
		}
		mods[f.Module.Path] = m
		return nil
	})
	return mods, err
}

// needed returns, sorted, the modules a user's module can end up requiring:
// the generator, the runtime and every module under runtime/ (stores,
// adapters), and every module of the checkout that those require, directly
// or not.
func needed(mods map[string]module) []string {
	seen := map[string]bool{}
	var visit func(path string)
	visit = func(path string) {
		if seen[path] {
			return
		}
		if _, ok := mods[path]; !ok {
			return
		}
		seen[path] = true
		for _, r := range mods[path].requires {
			visit(r)
		}
	}
	for path := range mods {
		if path == rootModule || path == rootModule+"/runtime" || strings.HasPrefix(path, rootModule+"/runtime/") {
			visit(path)
		}
	}
	out := make([]string, 0, len(seen))
	for path := range seen {
		out = append(out, path)
	}
	slices.Sort(out)
	return out
}

func isIdemgen(path string) bool {
	return path == rootModule || strings.HasPrefix(path, rootModule+"/")
}

// goMod is the part of `go mod edit -json` that idemlocal reads.
type goMod struct {
	Module  struct{ Path string }
	Require []struct{ Path string }
}

func modFile(path string) (goMod, error) {
	var f goMod
	out, err := exec.Command("go", "mod", "edit", "-json", path).Output()
	if err != nil {
		return f, fmt.Errorf("go mod edit -json %s: %w", path, commandError(err))
	}
	if err := json.Unmarshal(out, &f); err != nil {
		return f, fmt.Errorf("go mod edit -json %s: %w", path, err)
	}
	return f, nil
}

func goCmd(dir string, args ...string) error {
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go %s: %w: %s", args[0]+" "+args[1], err, strings.TrimSpace(stderr.String()))
	}
	return nil
}

// commandError adds a failed command's stderr to its error.
func commandError(err error) error {
	var exit *exec.ExitError
	if errors.As(err, &exit) && len(exit.Stderr) > 0 {
		return fmt.Errorf("%w: %s", err, strings.TrimSpace(string(exit.Stderr)))
	}
	return err
}
