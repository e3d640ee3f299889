package idem

import (
	"errors"
	"net/http"
)

// KeyHeaderProblem is the answer to a key header name sent count times
// where it must be sent once: 400 missing-key for none, 400 invalid-key for
// several. Generated error handlers answer oapi-codegen's errors about a
// key header parameter with it, so that they say what the engine says.
func KeyHeaderProblem(name string, count int) *Problem {
	if count == 0 {
		return problemf(http.StatusBadRequest, CodeMissingKey, "the %s header is required", name)
	}
	return problemf(http.StatusBadRequest, CodeInvalidKey, "the %s header was sent more than once", name)
}

// RequestProblem is the answer of generated error handlers to an error of
// oapi-codegen's generated router or strict decoder: the *Problem that err
// wraps, or else 400 bad-request with err's text as its detail.
func RequestProblem(err error) *Problem {
	var p *Problem
	if errors.As(err, &p) {
		return p
	}
	return NewProblem(http.StatusBadRequest, CodeBadRequest, err.Error())
}
