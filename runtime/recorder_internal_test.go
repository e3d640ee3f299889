package idem

import (
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strconv"
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

// TestRecorderHeaderAsAtWriteHeader: the recorded header is the one the
// handler had set when it wrote its status, whatever it changes afterwards,
// as Header.Clone at WriteHeader would keep it; streamed or not.
func TestRecorderHeaderAsAtWriteHeader(t *testing.T) {
	many := http.Header{}
	for i := range snapFields + 1 {
		many.Add("X-Many", strconv.Itoa(i))
	}
	for _, tc := range []struct {
		name   string
		before http.Header
		after  func(h http.Header)
	}{
		{"unchanged", http.Header{"Content-Type": {"a/b"}, "Link": {"<a>", "<b>"}}, func(http.Header) {}},
		{"none", http.Header{}, func(http.Header) {}},
		{"none, then one", http.Header{}, func(h http.Header) { h.Set("X-Late", "1") }},
		{"set", http.Header{"Content-Type": {"a/b"}}, func(h http.Header) { h.Set("Content-Type", "c/d") }},
		{"set again", http.Header{"Content-Type": {"a/b"}}, func(h http.Header) { h.Set("Content-Type", "a/b") }},
		{"added", http.Header{"Link": {"<a>"}}, func(h http.Header) { h.Add("Link", "<b>") }},
		{"one of two gone", http.Header{"Link": {"<a>", "<b>"}}, func(h http.Header) { h["Link"] = h["Link"][:1] }},
		{"changed in place", http.Header{"Link": {"<a>", "<b>"}}, func(h http.Header) { h["Link"][1] = "<c>" }},
		{"deleted", http.Header{"Content-Type": {"a/b"}, "Etag": {"1"}}, func(h http.Header) { h.Del("Etag") }},
		{"replaced by another", http.Header{"Etag": {"1"}}, func(h http.Header) { h.Del("Etag"); h.Set("Location", "1") }},
		{"one more", http.Header{"Etag": {"1"}}, func(h http.Header) { h.Set("Location", "/x") }},
		{"nil values", http.Header{"Date": nil, "Etag": {"1"}}, func(h http.Header) {}},
		{"nil values set", http.Header{"Date": nil}, func(h http.Header) { h.Set("Date", "now") }},
		{"nil values emptied", http.Header{"Date": nil}, func(h http.Header) { h["Date"] = []string{} }},
		{"empty values", http.Header{"Date": {}}, func(h http.Header) {}},
		{"empty values nil", http.Header{"Date": {}}, func(h http.Header) { h["Date"] = nil }},
		{"more than noted", many, func(h http.Header) { h.Set("X-Many", "late") }},
		{"more than noted, unchanged", many, func(http.Header) {}},
	} {
		for _, stream := range []bool{false, true} {
			under := httptest.NewRecorder()
			rec := newRecorder(under)
			if stream {
				rec.streamPast(1)
			}
			for k, v := range tc.before {
				rec.Header()[k] = slices.Clone(v)
			}
			want := tc.before.Clone()
			rec.WriteHeader(http.StatusCreated)
			if stream {
				_, _ = rec.Write([]byte("past the limit"))
			}
			tc.after(rec.Header())
			if got := rec.response().Header; !reflect.DeepEqual(got, want) {
				t.Errorf("%s (streamed %v): recorded header %#v, want %#v", tc.name, stream, got, want)
			}
			if stream && !reflect.DeepEqual(under.Header(), want) {
				t.Errorf("%s: header sent %#v, want %#v", tc.name, under.Header(), want)
			}
		}
	}
}
