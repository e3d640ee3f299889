package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	"golang.org/x/mod/semver"
	"golang.org/x/mod/zip"

	"github.com/idemgen/idemgen/internal/release/published"
)

// prefix is the path every module of the repository starts with.
const prefix = "github.com/idemgen/idemgen"

// release is one version of the repository's published modules.
type release struct {
	root      string            // the repository's root
	version   string            // canonical semver, such as v0.1.0
	published []string          // directories of the published modules, "." for the root
	paths     map[string]string // module directory -> module path, every module of the repository
	tracked   []string          // the files git tracks, slash-separated, relative to root
}

// open reads the repository at root for a release of version.
func open(root, version string) (*release, error) {
	if !semver.IsValid(version) || semver.Canonical(version) != version || semver.Build(version) != "" {
		return nil, fmt.Errorf("version %q is not a canonical semantic version such as v0.1.0", version)
	}
	if m := semver.Major(version); m != "v0" && m != "v1" {
		return nil, fmt.Errorf("version %s needs a /%s suffix on every module path, which the repository's modules do not have", version, m)
	}
	root, err := filepath.Abs(root)
	if err != nil {
		return nil, err
	}
	r := &release{root: root, version: version, paths: map[string]string{}}
	out, err := r.git("ls-files", "-z")
	if err != nil {
		return nil, err
	}
	for _, f := range strings.Split(strings.TrimRight(out, "\x00"), "\x00") {
		r.tracked = append(r.tracked, f)
		if path.Base(f) == "go.mod" {
			dir := path.Dir(f)
			data, err := os.ReadFile(filepath.Join(root, f))
			if err != nil {
				return nil, err
			}
			mp := modfile.ModulePath(data)
			if mp == "" {
				return nil, fmt.Errorf("%s: no module line", f)
			}
			r.paths[dir] = mp
		}
	}
	dirs, err := published.Dirs(root)
	if err != nil {
		return nil, err
	}
	for _, dir := range dirs {
		if _, ok := r.paths[dir]; !ok {
			return nil, fmt.Errorf("scripts/published-modules: %s has no go.mod that git tracks", dir)
		}
	}
	r.published = dirs
	return r, nil
}

// isPublished reports whether the module at path is one the release publishes.
func (r *release) isPublished(mp string) bool {
	for _, dir := range r.published {
		if r.paths[dir] == mp {
			return true
		}
	}
	return false
}

// goMod returns the go.mod of the module at dir as the release publishes
// it: every requirement of a module of this repository at the release's
// version, and no replace line for one. A requirement of a module the
// release does not publish (a test helper) is an error: no user could
// fetch it.
func (r *release) goMod(dir string) ([]byte, error) {
	name := path.Join(dir, "go.mod")
	data, err := os.ReadFile(filepath.Join(r.root, name))
	if err != nil {
		return nil, err
	}
	f, err := modfile.Parse(name, data, nil)
	if err != nil {
		return nil, err
	}
	for _, req := range f.Require {
		p := req.Mod.Path
		if p != prefix && !strings.HasPrefix(p, prefix+"/") {
			continue
		}
		if !r.isPublished(p) {
			return nil, fmt.Errorf("%s requires %s, which the release does not publish (scripts/published-modules): move what it is needed for where only tests reach it", name, p)
		}
		if err := f.AddRequire(p, r.version); err != nil {
			return nil, err
		}
	}
	for _, rep := range f.Replace {
		p := rep.Old.Path
		if p == prefix || strings.HasPrefix(p, prefix+"/") {
			if err := f.DropReplace(p, rep.Old.Version); err != nil {
				return nil, err
			}
		}
	}
	f.Cleanup()
	return modfile.Format(f.Syntax), nil
}

// files returns the files of the module at dir that a release zips: the
// tracked files under dir outside every other module's directory.
func (r *release) files(dir string) []string {
	var out []string
	for _, f := range r.tracked {
		rel := f
		if dir != "." {
			if !strings.HasPrefix(f, dir+"/") {
				continue
			}
			rel = strings.TrimPrefix(f, dir+"/")
		}
		if r.owner(f) == dir {
			out = append(out, rel)
		}
	}
	return out
}

// owner returns the directory of the module whose tree holds the file f:
// the deepest module directory above it.
func (r *release) owner(f string) string {
	for d := path.Dir(f); ; d = path.Dir(d) {
		if _, ok := r.paths[d]; ok {
			return d
		}
		if d == "." || d == "/" {
			return "."
		}
	}
}

// zipFile is one file of a module's zip: from disk, or go.mod's content as
// the release publishes it.
type zipFile struct {
	rel, abs string
	data     []byte // non-nil: the content, instead of abs's
}

func (f zipFile) Path() string { return f.rel }

func (f zipFile) Lstat() (fs.FileInfo, error) {
	info, err := os.Lstat(f.abs)
	if err != nil || f.data == nil {
		return info, err
	}
	return sizedInfo{info, int64(len(f.data))}, nil
}

func (f zipFile) Open() (io.ReadCloser, error) {
	if f.data != nil {
		return io.NopCloser(bytes.NewReader(f.data)), nil
	}
	return os.Open(f.abs)
}

// sizedInfo is a file's info with the size of the content that replaces it.
type sizedInfo struct {
	fs.FileInfo
	size int64
}

func (i sizedInfo) Size() int64 { return i.size }

// writeProxy writes every published module at the release's version into a
// module proxy at dir (the GOPROXY protocol's file layout).
func (r *release) writeProxy(dir string) error {
	info, err := json.Marshal(struct {
		Version string
		Time    time.Time
	}{r.version, time.Now().UTC().Truncate(time.Second)})
	if err != nil {
		return err
	}
	for _, d := range r.published {
		mp := r.paths[d]
		mod, err := r.goMod(d)
		if err != nil {
			return err
		}
		esc, err := module.EscapePath(mp)
		if err != nil {
			return err
		}
		at := filepath.Join(dir, filepath.FromSlash(esc), "@v")
		if err := os.MkdirAll(at, 0o755); err != nil {
			return err
		}
		var files []zip.File
		for _, rel := range r.files(d) {
			f := zipFile{rel: rel, abs: filepath.Join(r.root, filepath.FromSlash(path.Join(d, rel)))}
			if rel == "go.mod" {
				f.data = mod
			}
			files = append(files, f)
		}
		var buf bytes.Buffer
		if err := zip.Create(&buf, module.Version{Path: mp, Version: r.version}, files); err != nil {
			return fmt.Errorf("%s: %w", mp, err)
		}
		base := filepath.Join(at, r.version)
		for ext, data := range map[string][]byte{".info": info, ".mod": mod, ".zip": buf.Bytes()} {
			if err := os.WriteFile(base+ext, data, 0o644); err != nil {
				return err
			}
		}
		if err := addToList(filepath.Join(at, "list"), r.version); err != nil {
			return err
		}
		fmt.Printf("%s@%s: %d files, %d bytes\n", mp, r.version, len(files), buf.Len())
	}
	return nil
}

// addToList adds version to a proxy's list file, once.
func addToList(name, version string) error {
	data, err := os.ReadFile(name)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	versions := strings.Fields(string(data))
	for _, v := range versions {
		if v == version {
			return nil
		}
	}
	versions = append(versions, version)
	sort.Slice(versions, func(i, j int) bool { return semver.Compare(versions[i], versions[j]) < 0 })
	return os.WriteFile(name, []byte(strings.Join(versions, "\n")+"\n"), 0o644)
}

// tag rewrites the published go.mod files for the release, commits them and
// tags every published module at that commit. The checkout must be clean.
func (r *release) tag() error {
	if out, err := r.git("status", "--porcelain"); err != nil {
		return err
	} else if out != "" {
		return fmt.Errorf("the checkout has changes; a release is made from a clean checkout of the commit to release:\n%s", out)
	}
	var names []string
	for _, d := range r.published {
		mod, err := r.goMod(d)
		if err != nil {
			return err
		}
		name := path.Join(d, "go.mod")
		if err := os.WriteFile(filepath.Join(r.root, filepath.FromSlash(name)), mod, 0o644); err != nil {
			return err
		}
		names = append(names, name)
	}
	if _, err := r.git(append([]string{"commit", "-m", "release " + r.version, "--"}, names...)...); err != nil {
		return err
	}
	for _, t := range r.tagNames() {
		if _, err := r.git("tag", t); err != nil {
			return err
		}
		fmt.Println("tagged", t)
	}
	fmt.Printf("push the commit and the tags: git push origin HEAD %s\n", strings.Join(r.tagNames(), " "))
	return nil
}

// tagNames returns the release's tags, one per published module.
func (r *release) tagNames() []string {
	var out []string
	for _, d := range r.published {
		if d == "." {
			out = append(out, r.version)
		} else {
			out = append(out, d+"/"+r.version)
		}
	}
	return out
}

// git runs git in the repository and returns its output.
func (r *release) git(args ...string) (string, error) {
	cmd := exec.Command("git", append([]string{"-C", r.root}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return string(out), nil
}
