package idem

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/idemgen/idemgen/runtime/idemop"
	"github.com/idemgen/idemgen/runtime/internal/retryafter"
)

// Problem is an RFC 9457 problem detail as the engine answers it. It is also
// an error: a [ScopeFunc] or [Reconciler] may return one to choose the answer.
type Problem struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail"`
	Code   string `json:"code"`

	// RetryAfter, when positive, is sent as Retry-After in whole seconds
	// (rounded up). It is not part of the JSON body.
	RetryAfter time.Duration `json:"-"`
}

// Error implements error.
func (p *Problem) Error() string { return "idem: " + p.Code + ": " + p.Detail }

// NewProblem returns the problem of code with status and detail, its type
// ProblemTypePrefix + code and its title the status text. A [ScopeFunc] or
// [Reconciler] may return one to choose the answer.
func NewProblem(status int, code, detail string) *Problem {
	return &Problem{
		Type:   idemop.ProblemTypePrefix + code,
		Title:  http.StatusText(status),
		Status: status,
		Detail: detail,
		Code:   code,
	}
}

// problemf is newProblem with a formatted detail.
func problemf(status int, code, format string, args ...any) *Problem {
	return NewProblem(status, code, fmt.Sprintf(format, args...))
}

// Response renders p as an HTTP response. A zero Status is answered 500, an
// empty Type as "about:blank" and an empty Title as the status text.
func (p *Problem) Response() *Response {
	q := *p
	if q.Status < 100 || q.Status > 999 {
		q.Status = http.StatusInternalServerError
	}
	if q.Type == "" {
		q.Type = "about:blank"
	}
	if q.Title == "" {
		q.Title = http.StatusText(q.Status)
	}
	p = &q
	body, err := json.Marshal(p)
	if err != nil { // a struct of strings and an int always marshals
		panic(fmt.Errorf("idem: marshal problem: %w", err))
	}
	h := http.Header{}
	h.Set("Content-Type", idemop.ProblemContentType)
	h.Set("Cache-Control", "no-store")
	if p.RetryAfter > 0 {
		h.Set("Retry-After", retryafter.Format(p.RetryAfter))
	}
	return &Response{Status: p.Status, Header: h, Body: append(body, '\n')}
}

// Problems the engine answers.

// conflictProblem answers a duplicate while the original runs; wait is
// when the original is expected to finish (Engine.conflictRetryAfter).
func conflictProblem(wait time.Duration) *Problem {
	p := NewProblem(http.StatusConflict, idemop.CodeConflict,
		"a request with this idempotency key is still being processed; retry later")
	p.RetryAfter = max(wait, time.Second)
	return p
}

func mismatchProblem() *Problem {
	return NewProblem(http.StatusUnprocessableEntity, idemop.CodeFingerprintMismatch,
		"this idempotency key was already used for a different request")
}

func storeUnavailableProblem() *Problem {
	p := NewProblem(http.StatusServiceUnavailable, idemop.CodeStoreUnavailable,
		"the idempotency store is unavailable; retry later")
	p.RetryAfter = time.Second
	return p
}

// storeMisconfiguredProblem answers while the store is misconfigured. It has
// no Retry-After: the wait is for an operator, not for a blip to pass.
func storeMisconfiguredProblem() *Problem {
	return NewProblem(http.StatusServiceUnavailable, idemop.CodeStoreMisconfigured,
		"the idempotency store is misconfigured, so this request cannot be protected from running twice; it was not run")
}

func tooLargeProblem(limit int64) *Problem {
	return problemf(http.StatusRequestEntityTooLarge, idemop.CodePayloadTooLarge,
		"the request body exceeds the limit of %d bytes", limit)
}
