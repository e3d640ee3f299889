package idem

import (
	"net/http"
	"reflect"
	"testing"
)

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
