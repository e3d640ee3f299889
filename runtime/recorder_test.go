package idem_test

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/idemgen/idemgen/runtime/idemop"
)

// deadlineWriter is a client writer that supports write deadlines and
// counts flushes.
type deadlineWriter struct {
	*httptest.ResponseRecorder
	deadline time.Time
	flushes  int
}

func (w *deadlineWriter) SetWriteDeadline(t time.Time) error { w.deadline = t; return nil }
func (w *deadlineWriter) Flush()                             { w.flushes++ }

func TestRecorderKeepsResponseController(t *testing.T) {
	h := newHarness(t, idemop.Operation{}, func(h *harness, w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		if err := rc.SetWriteDeadline(time.Unix(1e9, 0)); err != nil {
			t.Errorf("SetWriteDeadline through Unwrap: %v", err)
		}
		w.WriteHeader(http.StatusCreated)
		w.Write([]byte("part"))
		if err := rc.Flush(); err != nil {
			t.Errorf("Flush: %v", err)
		}
	})
	w := &deadlineWriter{ResponseRecorder: httptest.NewRecorder()}
	h.h.ServeHTTP(w, engineReq("POST", "/pets", `{}`, "Idempotency-Key", "k"))
	if !w.deadline.Equal(time.Unix(1e9, 0)) {
		t.Error("the deadline did not reach the client's writer")
	}
	if w.flushes != 0 {
		t.Error("a flush reached the client before the result was stored")
	}
	if w.Code != http.StatusCreated || w.Body.String() != "part" {
		t.Errorf("answer = %d %q", w.Code, w.Body)
	}
}
