package idem_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemgen"
	"github.com/idemgen/idemgen/runtime/idemop"
	"github.com/idemgen/idemgen/runtime/idemstore"
)

// strictRun returns a run function that counts its calls and captures a
// 201 JSON response, the way generated strict wrappers do.
func strictRun(runs *atomic.Int64) func(ctx context.Context) (*idem.Response, error) {
	return func(ctx context.Context) (*idem.Response, error) {
		n := runs.Add(1)
		info, _ := idem.FromContext(ctx)
		return idemgen.CaptureContext(context.Background(), func(w http.ResponseWriter) error {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Set-Cookie", "a=b")
			w.WriteHeader(http.StatusCreated)
			_, err := io.WriteString(w, `{"run":`+string(rune('0'+n))+`,"fence":`+string(rune('0'+info.Fence))+`}`)
			return err
		})
	}
}

// strictServe runs r through both steps of the strict server, the way the
// generated code does: ServeBody in front of the (here absent) decoder, then
// ServeStrict with run in the strict middleware. It returns what either
// answered.
func strictServe(e *idem.Engine, r *http.Request, op *idemop.Operation, run func(ctx context.Context) (*idem.Response, error)) (*idem.Response, error) {
	var resp *idem.Response
	var err error
	w := httptest.NewRecorder()
	next := false
	idemgen.ServeBody(e, w, r, op, func(_ http.ResponseWriter, r *http.Request) {
		next = true
		resp, err = e.ServeStrict(r.Context(), r, op, run)
	})
	if !next {
		return &idem.Response{Status: w.Code, Header: w.Header(), Body: w.Body.Bytes()}, nil
	}
	return resp, err
}

func TestServeStrict(t *testing.T) {
	e := idem.NewEngine(newMemStore())
	op := &idemop.Operation{ID: "CreatePet"}
	var runs atomic.Int64
	req := func(body string, headers ...string) *http.Request {
		return engineReq("POST", "/pets", body, headers...)
	}
	resp, err := strictServe(e, req(`{"name":"rex"}`, "Idempotency-Key", "k"), op, strictRun(&runs))
	if err != nil || resp.Status != http.StatusCreated || string(resp.Body) != `{"run":1,"fence":1}` {
		t.Fatalf("first = %+v, %v", resp, err)
	}
	resp, err = strictServe(e, req(`{ "name": "rex" }`, "Idempotency-Key", "k"), op, strictRun(&runs))
	if err != nil || resp.Status != http.StatusCreated || resp.Header.Get(idemop.HeaderReplayed) != "true" ||
		string(resp.Body) != `{"run":1,"fence":1}` || resp.Header.Get("Set-Cookie") != "" {
		t.Fatalf("replay = %+v, %v", resp, err)
	}
	// Members a typed body would drop, or fold by case, are part of the
	// body as sent.
	for _, body := range []string{`{"name":"fido"}`, `{"name":"rex","junk":1}`, `{"NAME":"rex"}`} {
		resp, err = strictServe(e, req(body, "Idempotency-Key", "k"), op, strictRun(&runs))
		if err != nil || resp.Status != http.StatusUnprocessableEntity || resp.Header.Get("Content-Type") != idemop.ProblemContentType {
			t.Fatalf("%s: mismatch = %+v, %v", body, resp, err)
		}
	}
	resp, err = strictServe(e, req(`{}`), op, strictRun(&runs))
	if err != nil || resp.Status != http.StatusBadRequest {
		t.Fatalf("missing key = %+v, %v", resp, err)
	}
	if runs.Load() != 1 {
		t.Errorf("runs = %d", runs.Load())
	}
}

// TestServeStrictWithoutServeBody: a strict middleware that runs without
// the router step in front does not guess the body from the decoded one: it
// answers 500 and logs the call that is missing.
func TestServeStrictWithoutServeBody(t *testing.T) {
	var log bytes.Buffer
	e := idem.NewEngine(newMemStore(), idem.WithLogger(slog.New(slog.NewTextHandler(&log, nil))))
	op := &idemop.Operation{ID: "CreatePet"}
	var runs atomic.Int64
	r := engineReq("POST", "/pets", `{"name":"rex"}`, "Idempotency-Key", "k")
	resp, err := e.ServeStrict(r.Context(), r, op, strictRun(&runs))
	if err != nil || resp.Status != http.StatusInternalServerError || !strings.Contains(string(resp.Body), `"code":"server-misconfigured"`) ||
		!strings.Contains(string(resp.Body), "NewStrictHandlerWithIdempotency") {
		t.Fatalf("got %+v (%s), %v; want 500 server-misconfigured naming the constructor", resp, resp.Body, err)
	}
	if !strings.Contains(log.String(), "NewStrictHandlerWithIdempotency") || !strings.Contains(log.String(), "level=ERROR") {
		t.Errorf("log %q does not name the missing call", log.String())
	}
	// The body ServeBody read for another operation is not this one's.
	other := &idemop.Operation{ID: "AdoptPet"}
	idemgen.ServeBody(e, httptest.NewRecorder(), r, other, func(_ http.ResponseWriter, r *http.Request) {
		resp, err = e.ServeStrict(r.Context(), r, op, strictRun(&runs))
	})
	if err != nil || resp.Status != http.StatusInternalServerError {
		t.Fatalf("another operation's body: %+v, %v", resp, err)
	}
	if runs.Load() != 0 {
		t.Errorf("the handler ran %d times", runs.Load())
	}
}

func TestServeStrictErrorReleases(t *testing.T) {
	store := newMemStore()
	e := idem.NewEngine(store)
	op := &idemop.Operation{ID: "CreatePet"}
	boom := errors.New("boom")
	resp, err := strictServe(e, engineReq("POST", "/pets", "", "Idempotency-Key", "k"), op, func(context.Context) (*idem.Response, error) { return nil, boom })
	if err != boom || resp != nil {
		t.Fatalf("got %+v, %v; want the handler's error unchanged", resp, err)
	}
	if _, ok := store.get(idemstore.RecordKey("CreatePet", "", "k")); ok || store.count("release") != 1 {
		t.Fatal("the lease was not released")
	}
	var runs atomic.Int64
	if resp, err := strictServe(e, engineReq("POST", "/pets", "", "Idempotency-Key", "k"), op, strictRun(&runs)); err != nil || resp.Status != http.StatusCreated {
		t.Fatalf("retry = %+v, %v", resp, err)
	}
}

func TestServeStrictBodies(t *testing.T) {
	var runs atomic.Int64
	t.Run("body key", func(t *testing.T) {
		e := idem.NewEngine(newMemStore())
		op := &idemop.Operation{ID: "Pay", KeyPointer: "/idempotency_key"}
		pay := func(body string) *idem.Response {
			resp, _ := strictServe(e, engineReq("POST", "/pay", body), op, strictRun(&runs))
			return resp
		}
		if resp := pay(`{"name":"a","idempotency_key":"k"}`); resp.Status != http.StatusCreated {
			t.Fatalf("first = %+v", resp)
		}
		if resp := pay(`{"idempotency_key":"k","name":"a"}`); resp.Header.Get(idemop.HeaderReplayed) != "true" {
			t.Fatalf("second = %+v", resp)
		}
		for _, body := range []string{`{"name":"a"}`, `{"name":"a","IDEMPOTENCY_KEY":"k"}`, ""} {
			if resp := pay(body); resp.Status != http.StatusBadRequest {
				t.Fatalf("%q: missing body key = %+v", body, resp)
			}
		}
	})
	t.Run("ignored pointer", func(t *testing.T) {
		e := idem.NewEngine(newMemStore())
		op := &idemop.Operation{ID: "CreatePet", FingerprintIgnore: []string{"/meta/trace"}}
		strictServe(e, engineReq("POST", "/pets", `{"name":"a","meta":{"trace":1}}`, "Idempotency-Key", "k"), op, strictRun(&runs))
		resp, _ := strictServe(e, engineReq("POST", "/pets", `{"name":"a","meta":{"trace":2}}`, "Idempotency-Key", "k"), op, strictRun(&runs))
		if resp.Header.Get(idemop.HeaderReplayed) != "true" {
			t.Fatalf("second = %+v", resp)
		}
	})
	t.Run("the body is restored for the decoder and bounded", func(t *testing.T) {
		e := idem.NewEngine(newMemStore(), idem.WithBodyLimit(8))
		op := &idemop.Operation{ID: "Upload"}
		upload := func(body string) (*idem.Response, string, bool) {
			r := engineReq("POST", "/upload", "", "Idempotency-Key", "k")
			r.Body, r.ContentLength = io.NopCloser(strings.NewReader(body)), -1
			r.Header.Set("Content-Type", "application/octet-stream")
			w := httptest.NewRecorder()
			var seen string
			next := false
			idemgen.ServeBody(e, w, r, op, func(_ http.ResponseWriter, r *http.Request) {
				next = true
				b, _ := io.ReadAll(r.Body) // oapi-codegen's decoder
				seen = string(b)
			})
			return &idem.Response{Status: w.Code, Body: w.Body.Bytes()}, seen, next
		}
		if _, seen, next := upload("12345678"); !next || seen != "12345678" {
			t.Fatalf("the decoder read %q (next called: %v)", seen, next)
		}
		if resp, _, next := upload("123456789"); next || resp.Status != http.StatusRequestEntityTooLarge {
			t.Fatalf("over the limit = %+v (next called: %v)", resp, next)
		}
	})
	t.Run("raw body", func(t *testing.T) {
		e := idem.NewEngine(newMemStore())
		op := &idemop.Operation{ID: "Note"}
		note := func(body string) *idem.Response {
			r := engineReq("POST", "/notes", body, "Idempotency-Key", "k")
			r.Header.Set("Content-Type", "text/plain")
			resp, _ := strictServe(e, r, op, strictRun(&runs))
			return resp
		}
		note("a b")
		if resp := note("a  b"); resp.Status != http.StatusUnprocessableEntity {
			t.Fatalf("other raw body = %+v", resp)
		}
	})
	t.Run("optional key absent", func(t *testing.T) {
		store := newMemStore()
		e := idem.NewEngine(store)
		op := &idemop.Operation{ID: "CreatePet", Optional: true}
		resp, err := strictServe(e, engineReq("POST", "/pets", `{}`), op, strictRun(&runs))
		if err != nil || resp.Status != http.StatusCreated || store.count("acquire") != 0 {
			t.Fatalf("got %+v, %v", resp, err)
		}
	})
	t.Run("fail open", func(t *testing.T) {
		store := newMemStore()
		store.setErr(errStoreDown)
		e := idem.NewEngine(store, idem.WithFailOpen(true))
		resp, err := strictServe(e, engineReq("POST", "/pets", "", "Idempotency-Key", "k"), &idemop.Operation{ID: "CreatePet"}, strictRun(&runs))
		if err != nil || resp.Status != http.StatusCreated || resp.Header.Get(idemop.HeaderDegraded) != "true" {
			t.Fatalf("got %+v, %v", resp, err)
		}
	})
	t.Run("store down", func(t *testing.T) {
		store := newMemStore()
		store.setErr(errStoreDown)
		e := idem.NewEngine(store)
		resp, err := strictServe(e, engineReq("POST", "/pets", "", "Idempotency-Key", "k"), &idemop.Operation{ID: "CreatePet"}, strictRun(&runs))
		if err != nil || resp.Status != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "1" {
			t.Fatalf("got %+v, %v", resp, err)
		}
	})
}

func TestCaptureAndWrite(t *testing.T) {
	resp, err := idemgen.CaptureContext(context.Background(), func(w http.ResponseWriter) error {
		w.Header().Set("Location", "/x")
		w.WriteHeader(http.StatusAccepted)
		w.Header().Set("X-Late", "ignored") // after WriteHeader: not sent
		_, err := w.Write([]byte("ok"))
		return err
	})
	if err != nil || resp.Status != http.StatusAccepted || string(resp.Body) != "ok" ||
		resp.Header.Get("Location") != "/x" || resp.Header.Get("X-Late") != "" {
		t.Fatalf("captured %+v, %v", resp, err)
	}
	w := httptest.NewRecorder()
	if err := resp.Write(w); err != nil {
		t.Fatal(err)
	}
	if w.Code != resp.Status || !bytes.Equal(w.Body.Bytes(), resp.Body) || w.Header().Get("Location") != "/x" {
		t.Errorf("written %d %v %q", w.Code, w.Header(), w.Body)
	}
	wantErr := errors.New("visit failed")
	if resp, err := idemgen.CaptureContext(context.Background(), func(http.ResponseWriter) error { return wantErr }); resp != nil || err != wantErr {
		t.Errorf("CaptureContext with a failing visit = %+v, %v", resp, err)
	}
}

func TestServeStrictNoResponse(t *testing.T) {
	store := newMemStore()
	e := idem.NewEngine(store)
	r := engineReq("POST", "/pets", "", "Idempotency-Key", "k")
	resp, err := strictServe(e, r, &idemop.Operation{ID: "CreatePet"},
		func(context.Context) (*idem.Response, error) { return nil, nil })
	if resp != nil || err == nil || store.count("release") != 1 {
		t.Fatalf("got %+v, %v; want an error and a released lease", resp, err)
	}
}
