package cli_test

import (
	"os"
	"strings"
	"testing"

	"github.com/idemgen/idemgen/internal/cli"
)

func TestOgenUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"-target", "ogen", "openapi.yaml"}, "-target ogen takes -package"},
		{[]string{"-target", "ogen", "-package", "api", "-config", "cfg.yaml", "openapi.yaml"}, "-target ogen takes -package, the package name given to ogen, and no -config"},
		{[]string{"-package", "api", "-config", "cfg.yaml", "openapi.yaml"}, "-package, -no-server and -no-client are for -target ogen"},
		{[]string{"-no-client", "-config", "cfg.yaml", "openapi.yaml"}, "-package, -no-server and -no-client are for -target ogen"},
	} {
		code, _, stderr := run(tc.args...)
		if code != cli.ExitUsage || !strings.Contains(stderr, tc.msg) {
			t.Errorf("%q: exit %d, stderr %q; want %d and %q", tc.args, code, stderr, cli.ExitUsage, tc.msg)
		}
	}
}

func TestOgenWriteAndCheck(t *testing.T) {
	inCase(t, "headerkey")
	args := []string{"-target", "ogen", "-package", "api", "-o", "api/api.idem.gen.go", "openapi.yaml"}
	if code, _, stderr := run(args...); code != cli.ExitOK || stderr != "" {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	src, err := os.ReadFile("api/api.idem.gen.go")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(src), "package api\n") || !strings.Contains(string(src), "// source: ../openapi.yaml\n") ||
		!strings.Contains(string(src), "func WithIdempotency(s *Server,") {
		t.Errorf("the file for ogen:\n%s", src)
	}
	if code, _, stderr := run(append([]string{"-check"}, args...)...); code != cli.ExitOK {
		t.Errorf("-check after writing: exit %d, stderr %q", code, stderr)
	}
}

func TestOgenNoClient(t *testing.T) {
	inCase(t, "headerkey")
	code, stdout, stderr := run("-target", "ogen", "-package", "api", "-no-client", "openapi.yaml")
	if code != cli.ExitOK || stderr != "" {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	if !strings.Contains(stdout, "func WithIdempotency(") || strings.Contains(stdout, "Client") {
		t.Errorf("the file for ogen --no-client:\n%s", stdout)
	}
}
