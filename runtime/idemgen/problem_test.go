package idemgen_test

import (
	"errors"
	"fmt"
	"net/http"
	"testing"

	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemgen"
	"github.com/idemgen/idemgen/runtime/idemop"
)

// TestRequestProblem: a generated error handler answers the problem an
// error wraps as it is, and any other error 400 bad-request.
func TestRequestProblem(t *testing.T) {
	p := idem.NewProblem(http.StatusConflict, idemop.CodeConflict, "running")
	if got := idemgen.RequestProblem(fmt.Errorf("bind: %w", p)); got != p {
		t.Errorf("wrapped problem answered %+v, want it as it is", got)
	}
	got := idemgen.RequestProblem(errors.New("invalid format for parameter petId"))
	if got.Status != http.StatusBadRequest || got.Code != idemop.CodeBadRequest || got.Detail != "invalid format for parameter petId" {
		t.Errorf("plain error answered %+v, want 400 bad-request with its text", got)
	}
}

// TestKeyHeaderProblem: the generated error handler's answer to a key
// header parameter sent no or several times is the engine's.
func TestKeyHeaderProblem(t *testing.T) {
	for count, code := range map[int]string{0: idemop.CodeMissingKey, 2: idemop.CodeInvalidKey} {
		if p := idemgen.KeyHeaderProblem("Idempotency-Key", count); p.Status != http.StatusBadRequest || p.Code != code {
			t.Errorf("sent %d times: %d %s, want 400 %s", count, p.Status, p.Code, code)
		}
	}
}
