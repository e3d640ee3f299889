// Command apifile lists the exported API of every published module, one
// declaration a line, in the manner of the Go project's api/ files, and
// compares it with the files checked in under api/.
//
//	go run ./internal/release/apifile          # compare; exit 1 on a difference
//	go run ./internal/release/apifile -w       # write api/*.txt
//
// A change to a published package's exported names, signatures, struct
// fields or interface methods then shows in a review as a change to
// api/*.txt, and the test command fails until the file is rewritten on
// purpose (docs/upgrading.md says what a release may change).
package main

import (
	"bytes"
	"flag"
	"fmt"
	"go/types"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/tools/go/packages"

	"github.com/idemgen/idemgen/internal/release/published"
)

func main() {
	write := flag.Bool("w", false, "write api/*.txt instead of comparing")
	root := flag.String("C", ".", "the repository's root")
	flag.Parse()
	if err := run(*root, *write); err != nil {
		fmt.Fprintln(os.Stderr, "apifile:", err)
		os.Exit(1)
	}
}

func run(root string, write bool) error {
	dirs, err := published.Dirs(root)
	if err != nil {
		return err
	}
	differ := false
	for _, dir := range dirs {
		api, err := moduleAPI(filepath.Join(root, dir))
		if err != nil {
			return fmt.Errorf("%s: %w", dir, err)
		}
		name := filepath.Join(root, "api", fileName(dir))
		if write {
			if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
				return err
			}
			if err := os.WriteFile(name, api, 0o644); err != nil {
				return err
			}
			continue
		}
		have, err := os.ReadFile(name)
		if err != nil {
			return fmt.Errorf("%w (write it with: go run ./internal/release/apifile -w)", err)
		}
		if !bytes.Equal(have, api) {
			differ = true
			fmt.Printf("%s: the exported API of module %s changed:\n%s", filepath.Join("api", fileName(dir)), dir, diff(have, api))
		}
	}
	if differ {
		return fmt.Errorf("the published API differs from api/*.txt: if the change is meant, rewrite them with: go run ./internal/release/apifile -w")
	}
	return nil
}

// fileName is a module directory's API file: "idemgen.txt" for the root,
// "runtime-pgstore.txt" for runtime/pgstore.
func fileName(dir string) string {
	if dir == "." {
		return "idemgen.txt"
	}
	return strings.ReplaceAll(dir, "/", "-") + ".txt"
}

// moduleAPI lists the exported API of the module's packages outside
// internal directories, sorted.
func moduleAPI(dir string) ([]byte, error) {
	cfg := &packages.Config{Mode: packages.NeedName | packages.NeedTypes | packages.NeedModule, Dir: dir}
	pkgs, err := packages.Load(cfg, "./...")
	if err != nil {
		return nil, err
	}
	var lines []string
	for _, p := range pkgs {
		if len(p.Errors) > 0 {
			return nil, fmt.Errorf("%s: %v", p.PkgPath, p.Errors[0])
		}
		if p.Module == nil || p.Module.Dir != dir && !sameDir(p.Module.Dir, dir) || isInternal(p.PkgPath) || p.Name == "main" {
			continue
		}
		lines = append(lines, packageAPI(p.Types)...)
	}
	sort.Strings(lines)
	return []byte(strings.Join(lines, "\n") + "\n"), nil
}

func sameDir(a, b string) bool {
	x, _ := filepath.Abs(a)
	y, _ := filepath.Abs(b)
	return x == y
}

func isInternal(path string) bool {
	return strings.Contains(path+"/", "/internal/")
}

// packageAPI lists a package's exported declarations.
func packageAPI(pkg *types.Package) []string {
	q := func(other *types.Package) string {
		if other == pkg {
			return ""
		}
		return other.Path()
	}
	prefix := "pkg " + pkg.Path() + ", "
	var out []string
	scope := pkg.Scope()
	for _, name := range scope.Names() {
		obj := scope.Lookup(name)
		if !obj.Exported() {
			continue
		}
		switch o := obj.(type) {
		case *types.Const:
			out = append(out, prefix+"const "+name+" "+types.TypeString(o.Type(), q))
		case *types.Var:
			out = append(out, prefix+"var "+name+" "+types.TypeString(o.Type(), q))
		case *types.Func:
			out = append(out, prefix+"func "+name+strings.TrimPrefix(types.TypeString(o.Type(), q), "func"))
		case *types.TypeName:
			out = append(out, typeAPI(prefix, o, q)...)
		}
	}
	return out
}

// typeAPI lists an exported type: its kind, exported fields or interface
// methods, and its exported methods.
func typeAPI(prefix string, o *types.TypeName, q types.Qualifier) []string {
	name := o.Name()
	if tp, ok := o.Type().(*types.Named); ok && tp.TypeParams().Len() > 0 {
		var ps []string
		for i := 0; i < tp.TypeParams().Len(); i++ {
			p := tp.TypeParams().At(i)
			ps = append(ps, p.Obj().Name()+" "+types.TypeString(p.Constraint(), q))
		}
		name += "[" + strings.Join(ps, ", ") + "]"
	}
	var out []string
	if o.IsAlias() {
		return []string{prefix + "type " + name + " = " + types.TypeString(types.Unalias(o.Type()), q)}
	}
	switch u := o.Type().Underlying().(type) {
	case *types.Struct:
		out = append(out, prefix+"type "+name+" struct")
		for i := 0; i < u.NumFields(); i++ {
			if f := u.Field(i); f.Exported() {
				emb := ""
				if f.Embedded() {
					emb = "embedded "
				}
				out = append(out, prefix+"type "+name+" struct, "+emb+f.Name()+" "+types.TypeString(f.Type(), q))
			}
		}
	case *types.Interface:
		out = append(out, prefix+"type "+name+" interface")
		for i := 0; i < u.NumMethods(); i++ {
			if m := u.Method(i); m.Exported() {
				out = append(out, prefix+"type "+name+" interface, "+m.Name()+strings.TrimPrefix(types.TypeString(m.Type(), q), "func"))
			}
		}
	default:
		out = append(out, prefix+"type "+name+" "+types.TypeString(u, q))
	}
	if named, ok := o.Type().(*types.Named); ok {
		for i := 0; i < named.NumMethods(); i++ {
			m := named.Method(i)
			if !m.Exported() {
				continue
			}
			sig := m.Type().(*types.Signature)
			recv := o.Name()
			if _, ptr := sig.Recv().Type().(*types.Pointer); ptr {
				recv = "*" + recv
			}
			out = append(out, prefix+"method ("+recv+") "+m.Name()+strings.TrimPrefix(types.TypeString(sig, q), "func"))
		}
	}
	return out
}

// diff lists the lines only one side has, "-" for the checked-in file's,
// "+" for the code's.
func diff(have, want []byte) string {
	h := map[string]bool{}
	for _, l := range strings.Split(string(have), "\n") {
		h[l] = true
	}
	w := map[string]bool{}
	for _, l := range strings.Split(string(want), "\n") {
		w[l] = true
	}
	var b strings.Builder
	for _, l := range strings.Split(string(have), "\n") {
		if l != "" && !w[l] {
			fmt.Fprintf(&b, "  - %s\n", l)
		}
	}
	for _, l := range strings.Split(string(want), "\n") {
		if l != "" && !h[l] {
			fmt.Fprintf(&b, "  + %s\n", l)
		}
	}
	return b.String()
}
