package idem

import (
	"net/http"

	"github.com/idemgen/idemgen/runtime/idemop"
)

// keyHeaderProblem is the answer to a key header name sent count times
// where it must be sent once: 400 missing-key for none, 400 invalid-key for
// several. Generated error handlers answer oapi-codegen's errors about a
// key header parameter with it (idemgen.KeyHeaderProblem), so that they
// say what the engine says.
func keyHeaderProblem(name string, count int) *Problem {
	if count == 0 {
		return problemf(http.StatusBadRequest, idemop.CodeMissingKey, "the %s header is required", name)
	}
	return problemf(http.StatusBadRequest, idemop.CodeInvalidKey, "the %s header was sent more than once", name)
}
