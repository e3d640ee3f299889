package idem_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemgen"
	"github.com/idemgen/idemgen/runtime/idemop"
)

// TestProblemAnswer: a final answer of status >= 400 with a problem body
// given to Answer is a *ProblemError (the body decoded, the status filled
// in when the body lacks it); another content type, a 2xx, or a body not
// given to Answer is err == nil, as before.
func TestProblemAnswer(t *testing.T) {
	op := &idemop.ClientOperation{ID: "CreatePet"}
	answer := func(status int, ct, body string, viaAnswer bool) error {
		call := idem.NewCaller().Begin(op, idem.WithKey("k1"))
		return call.Run(context.Background(), func(context.Context) (*http.Response, error) {
			resp := &http.Response{StatusCode: status, Header: http.Header{"Content-Type": {ct}}, Body: io.NopCloser(strings.NewReader(""))}
			if !viaAnswer {
				return resp, nil
			}
			return call.Answer(resp, []byte(body))
		})
	}
	err := answer(422, "application/problem+json; charset=utf-8", `{"type":"urn:idemgen:problem:fingerprint-mismatch","title":"Unprocessable Entity","status":422,"detail":"the key was used for another request","code":"fingerprint-mismatch"}`, true)
	var pe *idem.ProblemError
	if !errors.As(err, &pe) || pe.Problem.Code != idemop.CodeFingerprintMismatch || pe.Key != "k1" || pe.Response == nil {
		t.Fatalf("422 problem: err = %#v", err)
	}
	if want := "idem: CreatePet answered 422 fingerprint-mismatch: the key was used for another request"; err.Error() != want {
		t.Errorf("Error() = %q, want %q", err.Error(), want)
	}
	if err = answer(400, "application/problem+json", `{"title":"Bad Request","detail":"name is required"}`, true); !errors.As(err, &pe) || pe.Problem.Status != 400 || pe.Problem.Detail != "name is required" {
		t.Errorf("400 problem without status member: err = %#v", err)
	}
	if err = answer(404, "application/problem+json", `not json`, true); !errors.As(err, &pe) || pe.Problem.Status != 404 {
		t.Errorf("undecodable problem: err = %#v", err)
	}
	for _, c := range []struct {
		status    int
		ct        string
		viaAnswer bool
	}{{400, "application/json", true}, {201, "application/problem+json", true}, {422, "application/problem+json", false}} {
		if err := answer(c.status, c.ct, `{"code":"x"}`, c.viaAnswer); err != nil {
			t.Errorf("%d %s (Answer: %v): err = %v, want nil", c.status, c.ct, c.viaAnswer, err)
		}
	}
}

// TestRequestEditorsTakeGeneratedType: an editor of a named type with
// oapi-codegen's RequestEditorFn shape is accepted as it is, runs before
// the key header is set, and cannot change the key.
func TestRequestEditorsTakeGeneratedType(t *testing.T) {
	type RequestEditorFn func(ctx context.Context, req *http.Request) error // as oapi-codegen declares it
	var order []string
	first := RequestEditorFn(func(_ context.Context, r *http.Request) error {
		order = append(order, "first")
		r.Header.Set("Idempotency-Key", "clobbered")
		return nil
	})
	second := RequestEditorFn(func(_ context.Context, r *http.Request) error {
		order = append(order, "second")
		r.Header.Set("X-Trace-Id", "t1")
		return nil
	})
	call := idem.NewCaller().Begin(&idemop.ClientOperation{ID: "CreatePet"}, idem.WithKey("k1"), idem.WithRequestEditors(first, second))
	req, _ := http.NewRequest("POST", "http://example.com/pets", nil)
	if err := idemgen.Editor(call)(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if strings.Join(order, ",") != "first,second" || req.Header.Get("X-Trace-Id") != "t1" || req.Header.Get("Idempotency-Key") != "k1" {
		t.Errorf("editors ran %v; headers %v", order, req.Header)
	}
}
