package idem

import (
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"

	"github.com/idemgen/idemgen/runtime/idemstore"
)

func TestWriteReplayIsReplayResponse(t *testing.T) {
	for _, rec := range []*idemstore.Record{
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

// TestCredentialHeadersNeverStored: credentials, cookies and hop-by-hop
// headers are dropped from the stored record even when the allow-list
// names them.
func TestCredentialHeadersNeverStored(t *testing.T) {
	never := []string{"Authorization", "Proxy-Authorization", "WWW-Authenticate", "Proxy-Authenticate",
		"Set-Cookie", "Connection", "Keep-Alive", "Transfer-Encoding", "Upgrade", "Te", "Trailer"}
	allow := replayAllowList(append([]string{"X-Request-Id"}, never...))
	h := http.Header{"Content-Type": {"application/json"}, "X-Request-Id": {"r1"}}
	for _, n := range never {
		h.Set(n, "secret")
	}
	rec := newRecord(&Response{Status: 201, Header: h}, allow, 1<<20)
	for _, n := range never {
		if v := rec.Header.Values(n); len(v) > 0 {
			t.Errorf("%s stored as %q", n, v)
		}
	}
	if rec.Header.Get("X-Request-Id") != "r1" || rec.Header.Get("Content-Type") != "application/json" {
		t.Errorf("allow-listed headers lost: %v", rec.Header)
	}
}
