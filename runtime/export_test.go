package idem

import (
	"net/http"

	"github.com/idemgen/idemgen/runtime/idemop"
)

// Internals that the external tests (package idem_test) reach, the way
// net/http's export_test.go exposes its own.
var KeyHash = keyHash

// Fingerprint returns the fingerprint e computes for r under op, or the
// problem it answers instead. r's body is read.
func (e *Engine) Fingerprint(r *http.Request, op *idemop.Operation) (string, *Problem) {
	k, _, prob := e.identifyHTTP(r, op)
	if prob != nil {
		return "", prob
	}
	return k.fingerprint, nil
}

// Buffered is how many bytes of response body the recorder w holds room
// for (its buffer's capacity); -1 when w is not a recorder.
func Buffered(w http.ResponseWriter) int {
	if rec, ok := w.(*recorder); ok {
		return cap(rec.body)
	}
	return -1
}
