package idem

import (
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"
	"time"
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
	h := newHarness(t, Operation{}, func(h *harness, w http.ResponseWriter, r *http.Request) {
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

func TestRecorderIgnoresInformational(t *testing.T) {
	rec := newRecorder(nil)
	rec.WriteHeader(http.StatusEarlyHints)
	rec.WriteHeader(http.StatusAccepted)
	rec.WriteHeader(http.StatusOK) // superfluous: ignored
	if got := rec.response(); got.Status != http.StatusAccepted {
		t.Errorf("status = %d", got.Status)
	}
}

func TestNewRecordKeepsAllowedHeaders(t *testing.T) {
	allow := replayAllowList(nil)
	for _, tc := range []struct {
		name string
		h    http.Header
		want http.Header
	}{
		{"nil", nil, http.Header{}},
		{"empty", http.Header{}, http.Header{}},
		{"allowed only", http.Header{"Content-Type": {"a/b"}, "Location": {"/x"}}, http.Header{"Content-Type": {"a/b"}, "Location": {"/x"}}},
		{"unlisted", http.Header{"Content-Type": {"a/b"}, "X-Other": {"1"}}, http.Header{"Content-Type": {"a/b"}}},
		{"cookie", http.Header{"Set-Cookie": {"s=1"}, "Etag": {`"1"`}}, http.Header{"Etag": {`"1"`}}},
		{"no values", http.Header{"Content-Type": {"a/b"}, "Location": {}}, http.Header{"Content-Type": {"a/b"}}},
		{"nil values", http.Header{"Location": nil}, http.Header{}},
		{"not canonical", http.Header{"content-type": {"a/b"}}, http.Header{}},
	} {
		rec := newRecord(&Response{Status: 201, Header: tc.h, Body: []byte("b")}, allow, 10)
		if rec.Header == nil || !reflect.DeepEqual(rec.Header, tc.want) {
			t.Errorf("%s: stored header %#v, want %#v", tc.name, rec.Header, tc.want)
		}
		if rec.Status != 201 || string(rec.Body) != "b" || rec.BodyOmitted {
			t.Errorf("%s: record %+v", tc.name, rec)
		}
	}
	if rec := newRecord(&Response{Status: 200, Body: []byte("too long")}, allow, 3); rec.Body != nil || !rec.BodyOmitted {
		t.Errorf("over the limit: record %+v", rec)
	}
}
