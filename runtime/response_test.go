package idem

import (
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/idemgen/idemgen/runtime/idemop"
	"github.com/idemgen/idemgen/runtime/idemstore"
)

func TestWriteReplayIsReplayResponse(t *testing.T) {
	for _, rec := range []*idemstore.Record{
		{Status: 201, Header: http.Header{"Content-Type": {"application/json"}, "Link": {"<a>", "<b>"}}, Body: []byte(`{}`)},
		{Status: 200, Header: http.Header{idemop.HeaderReplayed: {"no"}, "Location": nil}, Body: []byte("x"), BodyOmitted: true},
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

// TestCopyHeaderValuesOfTheirOwn: copyHeader's values, one array for all
// of them, are the source's, nil and empty kept apart, and each name's
// are its own: appending to or changing one name's values reaches
// neither another name's nor the source's.
func TestCopyHeaderValuesOfTheirOwn(t *testing.T) {
	src := http.Header{"A": {"a1"}, "B": {"b1", "b2", "b3"}, "C": {"c1"}, "Date": nil, "E": {}}
	want := src.Clone()
	dst := http.Header{"A": {"old"}, "Z": {"z"}}
	copyHeader(dst, src)
	if got := dst.Clone(); !reflect.DeepEqual(got, http.Header{"A": {"a1"}, "B": {"b1", "b2", "b3"}, "C": {"c1"}, "Date": nil, "E": {}, "Z": {"z"}}) {
		t.Fatalf("copied %#v", got)
	}
	if dst["Date"] != nil || dst["E"] == nil {
		t.Fatalf("nil and empty values not kept apart: Date %#v, E %#v", dst["Date"], dst["E"])
	}
	for k := range src {
		dst[k] = append(dst[k], "added")
		if len(dst[k]) > 1 {
			dst[k][0] = "changed"
		}
	}
	if !reflect.DeepEqual(src, want) {
		t.Errorf("changing the copies changed the source: %#v, want %#v", src, want)
	}
	for k, v := range dst {
		if k == "Z" {
			continue
		}
		if v[len(v)-1] != "added" || strings.Count(strings.Join(v, ","), "added") != 1 {
			t.Errorf("%s: %q, want its own values and one added", k, v)
		}
	}
}
