package idem

import "net/http"

// Internals that the external tests (package idem_test) reach, the way
// net/http's export_test.go exposes its own.
var KeyHash = keyHash

// Fingerprint returns the fingerprint e computes for r under op, or the
// problem it answers instead. r's body is read.
func (e *Engine) Fingerprint(r *http.Request, op *Operation) (string, *Problem) {
	k, _, prob := e.identifyHTTP(r, op)
	if prob != nil {
		return "", prob
	}
	return k.fingerprint, nil
}
