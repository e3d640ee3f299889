package idem

import (
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"
)

func TestWriteReplayIsReplayResponse(t *testing.T) {
	for _, rec := range []*Record{
		{Status: 201, Header: http.Header{"Content-Type": {"application/json"}, "Link": {"<a>", "<b>"}}, Body: []byte(`{}`)},
		{Status: 200, Header: http.Header{HeaderReplayed: {"no"}, "Location": nil}, Body: []byte("x"), BodyOmitted: true},
		{Status: 0},
		{Status: 204, Header: http.Header{}},
	} {
		want, got := httptest.NewRecorder(), httptest.NewRecorder()
		want.Header().Set("X-Before", "1")
		got.Header().Set("X-Before", "1")
		if err := replayResponse(rec).Write(want); err != nil {
			t.Fatal(err)
		}
		if err := writeReplay(got, rec); err != nil {
			t.Fatal(err)
		}
		if got.Code != want.Code || !reflect.DeepEqual(got.Header(), want.Header()) || got.Body.String() != want.Body.String() {
			t.Errorf("record %+v: writeReplay wrote %d %v %q; replayResponse %d %v %q",
				rec, got.Code, got.Header(), got.Body, want.Code, want.Header(), want.Body)
		}
	}
}
