package cli_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/idemgen/idemgen/internal/cli"
	"github.com/idemgen/idemgen/internal/overlay"
)

func TestOverlayUsage(t *testing.T) {
	inCase(t, "headerkey")
	for _, tc := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"-h"}, cli.ExitOK, "-emit-overlay"},
		{[]string{"-config", "cfg.yaml", "-check", "openapi.yaml"}, cli.ExitUsage, "idemgen: -check needs -o or -emit-overlay"},
		{[]string{"-config", "cfg.yaml", "-emit-overlay", "idem.overlay.json", "openapi.yaml"}, cli.ExitError, `idemgen: overlay "idem.overlay.json": must be a .yaml or .yml file`},
	} {
		code, stdout, stderr := run(tc.args...)
		if code != tc.code || !strings.Contains(stderr, tc.msg) || stdout != "" {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want %d and %q", tc.args, code, stdout, stderr, tc.code, tc.msg)
		}
	}
	if _, err := os.Stat("idem.overlay.json"); !os.IsNotExist(err) {
		t.Errorf("a file was written despite the error")
	}
}

// TestOverlayWriteAndCheck writes the overlay alone (no Go code, not even
// on standard output), checks it, and finds it stale after an edit.
func TestOverlayWriteAndCheck(t *testing.T) {
	inCase(t, "headerkey")
	args := []string{"-config", "cfg.yaml", "-emit-overlay", "published/idem.overlay.yaml", "openapi.yaml"}

	if code, _, stderr := run(append([]string{"-check"}, args...)...); code != cli.ExitError || stderr != "idemgen: published/idem.overlay.yaml does not exist; run go generate\n" {
		t.Errorf("-check before generating: exit %d, stderr %q", code, stderr)
	}
	if code, stdout, stderr := run(args...); code != cli.ExitOK || stdout != "" || stderr != "" {
		t.Fatalf("generate: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	got := readFile(t, "published/idem.overlay.yaml")
	for _, s := range []string{
		overlay.Header + "\n# source: openapi.yaml\noverlay: 1.0.0\n",
		"  - target: $.paths['/pets'].post\n",
		"  - target: $.paths['/pets/{petId}/vaccinations'].post\n",
		"may carry a unique `X-Request-Id` header; without one it runs unprotected", // resolved settings: header, required: false
	} {
		if !strings.Contains(got, s) {
			t.Errorf("the overlay lacks %q:\n%s", s, got)
		}
	}
	if _, err := os.Stat("api.idem.gen.go"); !os.IsNotExist(err) {
		t.Errorf("-emit-overlay alone wrote a Go file")
	}
	if code, _, stderr := run(append([]string{"-check"}, args...)...); code != cli.ExitOK || stderr != "" {
		t.Errorf("-check when fresh: exit %d, stderr %q", code, stderr)
	}

	writeFile(t, "published/idem.overlay.yaml", strings.Replace(got, "kept for 24h", "kept for 25h", 1))
	code, _, stderr := run(append([]string{"-check"}, args...)...)
	if code != cli.ExitError {
		t.Errorf("-check when stale: exit %d", code)
	}
	for _, s := range []string{"--- published/idem.overlay.yaml (on disk)", "kept for 25h", "kept for 24h", "idemgen: published/idem.overlay.yaml is stale; run go generate\n"} {
		if !strings.Contains(stderr, s) {
			t.Errorf("-check stderr lacks %q:\n%s", s, stderr)
		}
	}
}

// TestOverlayWithGo writes both files in one run and checks both.
func TestOverlayWithGo(t *testing.T) {
	want := inCase(t, "headerkey")
	args := []string{"-config", "cfg.yaml", "-o", "api.idem.gen.go", "-emit-overlay", "idem.overlay.yaml", "openapi.yaml"}
	if code, stdout, stderr := run(args...); code != cli.ExitOK || stdout != "" || stderr != "" {
		t.Fatalf("generate: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	if got := readFile(t, "api.idem.gen.go"); got != string(want) {
		t.Errorf("the Go file differs from testdata/golden/headerkey/api.idem.gen.go")
	}
	ov := readFile(t, "idem.overlay.yaml")
	if !strings.HasPrefix(ov, overlay.Header+"\n") {
		t.Errorf("the overlay does not begin with the header:\n%s", ov)
	}
	if code, _, stderr := run(append([]string{"-check"}, args...)...); code != cli.ExitOK || stderr != "" {
		t.Errorf("-check when fresh: exit %d, stderr %q", code, stderr)
	}

	writeFile(t, "api.idem.gen.go", string(want)+"// edited\n")
	writeFile(t, "idem.overlay.yaml", ov+"# edited\n")
	code, _, stderr := run(append([]string{"-check"}, args...)...)
	for _, s := range []string{"idemgen: api.idem.gen.go is stale; run go generate\n", "idemgen: idem.overlay.yaml is stale; run go generate\n"} {
		if code != cli.ExitError || !strings.Contains(stderr, s) {
			t.Errorf("-check with both stale: exit %d, stderr lacks %q:\n%s", code, s, stderr)
		}
	}
}

// TestOverlayAfterUserOverlay builds the published overlay on the spec as
// the oapi-codegen config's own overlay leaves it, and refuses to write over
// that overlay.
func TestOverlayAfterUserOverlay(t *testing.T) {
	inCase(t, "headerkey")
	writeFile(t, "user.overlay.yaml", `overlay: 1.0.0
info: {title: user, version: 1.0.0}
actions:
  - target: $.paths['/pets'].post
    update:
      x-idempotent:
        key: {header: X-Pet-Key}
        retention: 1h
`)
	writeFile(t, "cfg.yaml", readFile(t, "cfg.yaml")+"output-options:\n  overlay:\n    path: user.overlay.yaml\n")

	if code, _, stderr := run("-config", "cfg.yaml", "-emit-overlay", "idem.overlay.yaml", "openapi.yaml"); code != cli.ExitOK || stderr != "" {
		t.Fatalf("generate: exit %d, stderr %q", code, stderr)
	}
	got := readFile(t, "idem.overlay.yaml")
	for _, s := range []string{"send a unique `X-Pet-Key` header", "kept for 1h", "- name: X-Pet-Key\n"} {
		if !strings.Contains(got, s) {
			t.Errorf("the overlay lacks %q, from the user's overlay:\n%s", s, got)
		}
	}

	code, _, stderr := run("-config", "cfg.yaml", "-emit-overlay", "./user.overlay.yaml", "openapi.yaml")
	if code != cli.ExitError || !strings.Contains(stderr, `idemgen: overlay "./user.overlay.yaml" is the overlay that the oapi-codegen config applies`) {
		t.Errorf("-emit-overlay over the config's overlay: exit %d, stderr %q", code, stderr)
	}
}

// TestOverlayNothingToPublish: when the spec (here through the config's
// overlay, which is a copy of the published one) declares everything, no
// overlay is written, one written earlier is removed, and -check reports it
// as stale.
func TestOverlayNothingToPublish(t *testing.T) {
	inCase(t, "headerkey")
	args := []string{"-config", "cfg.yaml", "-emit-overlay", "idem.overlay.yaml", "openapi.yaml"}
	if code, _, stderr := run(args...); code != cli.ExitOK {
		t.Fatalf("generate: exit %d, stderr %q", code, stderr)
	}
	writeFile(t, "user.overlay.yaml", readFile(t, "idem.overlay.yaml"))
	writeFile(t, "cfg.yaml", readFile(t, "cfg.yaml")+"output-options:\n  overlay:\n    path: user.overlay.yaml\n")
	const why = "openapi.yaml: nothing to publish: the document declares every idempotency detail already"

	code, _, stderr := run(append([]string{"-check"}, args...)...)
	if want := "idemgen: idem.overlay.yaml is stale: " + why + "; run go generate\n"; code != cli.ExitError || stderr != want {
		t.Errorf("-check with an overlay left over: exit %d, stderr\n%q\nwant\n%q", code, stderr, want)
	}
	code, _, stderr = run(args...)
	if want := "idemgen: " + why + "; removed idem.overlay.yaml, written earlier\n"; code != cli.ExitOK || stderr != want {
		t.Errorf("generate with an overlay left over: exit %d, stderr\n%q\nwant\n%q", code, stderr, want)
	}
	if _, err := os.Stat("idem.overlay.yaml"); !os.IsNotExist(err) {
		t.Errorf("the stale overlay is still there")
	}
	code, _, stderr = run(args...)
	if want := "idemgen: " + why + "; idem.overlay.yaml not written\n"; code != cli.ExitOK || stderr != want {
		t.Errorf("generate: exit %d, stderr\n%q\nwant\n%q", code, stderr, want)
	}
	if code, _, stderr := run(append([]string{"-check"}, args...)...); code != cli.ExitOK || stderr != "" {
		t.Errorf("-check without an overlay: exit %d, stderr %q", code, stderr)
	}

	writeFile(t, "idem.overlay.yaml", "# mine\n")
	code, _, stderr = run(args...)
	if want := "idemgen: " + why + ", and idem.overlay.yaml was not written by idemgen: not removed\n"; code != cli.ExitError || stderr != want {
		t.Errorf("generate over a file of the user's: exit %d, stderr\n%q\nwant\n%q", code, stderr, want)
	}
}

// TestOverlayNoOperations: a spec without x-idempotent has nothing to publish.
func TestOverlayNoOperations(t *testing.T) {
	inCase(t, "headerkey")
	spec := strings.ReplaceAll(readFile(t, "openapi.yaml"), "x-idempotent", "x-not-idempotent")
	writeFile(t, "openapi.yaml", spec)
	code, _, stderr := run("-config", "cfg.yaml", "-emit-overlay", "idem.overlay.yaml", "openapi.yaml")
	if want := "idemgen: openapi.yaml: nothing to publish: no operation is x-idempotent; idem.overlay.yaml not written\n"; code != cli.ExitOK || stderr != want {
		t.Errorf("exit %d, stderr\n%q\nwant\n%q", code, stderr, want)
	}
}

func readFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func writeFile(t *testing.T, name, content string) {
	t.Helper()
	if err := os.WriteFile(name, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestOverlayWithGoLoadsOnce: with -o and -emit-overlay, one load of the
// spec serves both files. A spec served over HTTP counts its reads: the Go
// file alone reads it once (oapi-codegen's model), the overlay alone twice
// (that model, and a copy that oapi-codegen has not pruned to build the
// overlay on), and both files together no more than the overlay alone.
func TestOverlayWithGoLoadsOnce(t *testing.T) {
	inCase(t, "headerkey")
	spec := readFile(t, "openapi.yaml")
	var reads atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reads.Add(1)
		_, _ = io.WriteString(w, spec)
	}))
	t.Cleanup(srv.Close)
	count := func(args ...string) int32 {
		t.Helper()
		reads.Store(0)
		args = append(append([]string{"-config", "cfg.yaml"}, args...), srv.URL+"/openapi.yaml")
		if code, _, stderr := run(args...); code != cli.ExitOK {
			t.Fatalf("%q: exit %d, stderr %q", args, code, stderr)
		}
		return reads.Load()
	}
	goOnly := count("-o", "api.idem.gen.go")
	overlayOnly := count("-emit-overlay", "idem.overlay.yaml")
	both := count("-o", "api.idem.gen.go", "-emit-overlay", "idem.overlay.yaml")
	if goOnly != 1 || overlayOnly != 2 || both != overlayOnly {
		t.Errorf("reads of the spec: %d for -o, %d for -emit-overlay, %d for both; want 1, 2 and 2 (one load for both files)", goOnly, overlayOnly, both)
	}
}
