package idem_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	idem "github.com/idemgen/idemgen/runtime"
)

type petBody struct {
	Name string         `json:"name"`
	Key  string         `json:"idempotency_key,omitempty"`
	Meta map[string]any `json:"meta,omitempty"`
}

// strictRun returns a run function that counts its calls and captures a
// 201 JSON response, the way generated strict wrappers do.
func strictRun(runs *atomic.Int64) func(ctx context.Context) (*idem.Response, error) {
	return func(ctx context.Context) (*idem.Response, error) {
		n := runs.Add(1)
		info, _ := idem.FromContext(ctx)
		return idem.Capture(func(w http.ResponseWriter) error {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Set-Cookie", "a=b")
			w.WriteHeader(http.StatusCreated)
			_, err := io.WriteString(w, `{"run":`+string(rune('0'+n))+`,"fence":`+string(rune('0'+info.Fence))+`}`)
			return err
		})
	}
}

func TestServeStrict(t *testing.T) {
	e := idem.NewEngine(newMemStore())
	op := &idem.Operation{ID: "CreatePet"}
	var runs atomic.Int64
	r := engineReq("POST", "/pets", "", "Idempotency-Key", "k")
	resp, err := e.ServeStrict(context.Background(), r, op, idem.JSONBody(&petBody{Name: "rex"}), strictRun(&runs))
	if err != nil || resp.Status != http.StatusCreated || string(resp.Body) != `{"run":1,"fence":1}` {
		t.Fatalf("first = %+v, %v", resp, err)
	}
	resp, err = e.ServeStrict(context.Background(), r, op, idem.JSONBody(&petBody{Name: "rex"}), strictRun(&runs))
	if err != nil || resp.Status != http.StatusCreated || resp.Header.Get(idem.HeaderReplayed) != "true" ||
		string(resp.Body) != `{"run":1,"fence":1}` || resp.Header.Get("Set-Cookie") != "" {
		t.Fatalf("replay = %+v, %v", resp, err)
	}
	resp, err = e.ServeStrict(context.Background(), r, op, idem.JSONBody(&petBody{Name: "fido"}), strictRun(&runs))
	if err != nil || resp.Status != http.StatusUnprocessableEntity || resp.Header.Get("Content-Type") != idem.ProblemContentType {
		t.Fatalf("mismatch = %+v, %v", resp, err)
	}
	resp, err = e.ServeStrict(context.Background(), engineReq("POST", "/pets", ""), op, idem.JSONBody(&petBody{}), strictRun(&runs))
	if err != nil || resp.Status != http.StatusBadRequest {
		t.Fatalf("missing key = %+v, %v", resp, err)
	}
	if runs.Load() != 1 {
		t.Errorf("runs = %d", runs.Load())
	}
}

func TestServeStrictErrorReleases(t *testing.T) {
	store := newMemStore()
	e := idem.NewEngine(store)
	op := &idem.Operation{ID: "CreatePet"}
	r := engineReq("POST", "/pets", "", "Idempotency-Key", "k")
	boom := errors.New("boom")
	resp, err := e.ServeStrict(context.Background(), r, op, idem.NoBody(), func(context.Context) (*idem.Response, error) { return nil, boom })
	if err != boom || resp != nil {
		t.Fatalf("got %+v, %v; want the handler's error unchanged", resp, err)
	}
	if _, ok := store.get(idem.RecordKey("CreatePet", "", "k")); ok || store.count("release") != 1 {
		t.Fatal("the lease was not released")
	}
	var runs atomic.Int64
	if resp, err := e.ServeStrict(context.Background(), r, op, idem.NoBody(), strictRun(&runs)); err != nil || resp.Status != http.StatusCreated {
		t.Fatalf("retry = %+v, %v", resp, err)
	}
}

func TestServeStrictBodies(t *testing.T) {
	var runs atomic.Int64
	t.Run("body key in typed body", func(t *testing.T) {
		e := idem.NewEngine(newMemStore())
		op := &idem.Operation{ID: "Pay", KeyPointer: "/idempotency_key"}
		r := engineReq("POST", "/pay", "")
		resp, _ := e.ServeStrict(context.Background(), r, op, idem.JSONBody(&petBody{Name: "a", Key: "k"}), strictRun(&runs))
		if resp.Status != http.StatusCreated {
			t.Fatalf("first = %+v", resp)
		}
		resp, _ = e.ServeStrict(context.Background(), r, op, idem.JSONBody(&petBody{Name: "a", Key: "k"}), strictRun(&runs))
		if resp.Header.Get(idem.HeaderReplayed) != "true" {
			t.Fatalf("second = %+v", resp)
		}
		resp, _ = e.ServeStrict(context.Background(), r, op, idem.JSONBody(&petBody{Name: "a"}), strictRun(&runs))
		if resp.Status != http.StatusBadRequest {
			t.Fatalf("missing body key = %+v", resp)
		}
		resp, _ = e.ServeStrict(context.Background(), r, op, idem.JSONBody((*petBody)(nil)), strictRun(&runs))
		if resp.Status != http.StatusBadRequest {
			t.Fatalf("nil body = %+v", resp)
		}
	})
	t.Run("ignored pointer in typed body", func(t *testing.T) {
		e := idem.NewEngine(newMemStore())
		op := &idem.Operation{ID: "CreatePet", FingerprintIgnore: []string{"/meta/trace"}}
		r := engineReq("POST", "/pets", "", "Idempotency-Key", "k")
		e.ServeStrict(context.Background(), r, op, idem.JSONBody(&petBody{Name: "a", Meta: map[string]any{"trace": 1}}), strictRun(&runs))
		resp, _ := e.ServeStrict(context.Background(), r, op, idem.JSONBody(&petBody{Name: "a", Meta: map[string]any{"trace": 2}}), strictRun(&runs))
		if resp.Header.Get(idem.HeaderReplayed) != "true" {
			t.Fatalf("second = %+v", resp)
		}
	})
	t.Run("reader body is restored", func(t *testing.T) {
		e := idem.NewEngine(newMemStore(), idem.WithBodyLimit(8))
		op := &idem.Operation{ID: "Upload"}
		r := engineReq("POST", "/upload", "", "Idempotency-Key", "k")
		var body io.Reader = strings.NewReader("12345678")
		resp, err := e.ServeStrict(context.Background(), r, op, idem.ReaderBody(&body), func(ctx context.Context) (*idem.Response, error) {
			b, _ := io.ReadAll(body)
			return &idem.Response{Status: http.StatusCreated, Body: b}, nil
		})
		if err != nil || string(resp.Body) != "12345678" {
			t.Fatalf("got %+v, %v", resp, err)
		}
		body = strings.NewReader("123456789")
		resp, _ = e.ServeStrict(context.Background(), r, op, idem.ReaderBody(&body), strictRun(&runs))
		if resp.Status != http.StatusRequestEntityTooLarge {
			t.Fatalf("over the limit = %+v", resp)
		}
	})
	t.Run("raw body", func(t *testing.T) {
		e := idem.NewEngine(newMemStore())
		op := &idem.Operation{ID: "Note"}
		r := engineReq("POST", "/notes", "", "Idempotency-Key", "k")
		e.ServeStrict(context.Background(), r, op, idem.RawBody([]byte("a b")), strictRun(&runs))
		resp, _ := e.ServeStrict(context.Background(), r, op, idem.RawBody([]byte("a  b")), strictRun(&runs))
		if resp.Status != http.StatusUnprocessableEntity {
			t.Fatalf("other raw body = %+v", resp)
		}
	})
	t.Run("optional key absent", func(t *testing.T) {
		store := newMemStore()
		e := idem.NewEngine(store)
		op := &idem.Operation{ID: "CreatePet", Optional: true}
		resp, err := e.ServeStrict(context.Background(), engineReq("POST", "/pets", ""), op, idem.NoBody(), strictRun(&runs))
		if err != nil || resp.Status != http.StatusCreated || store.count("acquire") != 0 {
			t.Fatalf("got %+v, %v", resp, err)
		}
	})
	t.Run("fail open", func(t *testing.T) {
		store := newMemStore()
		store.setErr(errStoreDown)
		e := idem.NewEngine(store, idem.WithFailOpen(true))
		r := engineReq("POST", "/pets", "", "Idempotency-Key", "k")
		resp, err := e.ServeStrict(context.Background(), r, &idem.Operation{ID: "CreatePet"}, idem.NoBody(), strictRun(&runs))
		if err != nil || resp.Status != http.StatusCreated || resp.Header.Get(idem.HeaderDegraded) != "true" {
			t.Fatalf("got %+v, %v", resp, err)
		}
	})
	t.Run("store down", func(t *testing.T) {
		store := newMemStore()
		store.setErr(errStoreDown)
		e := idem.NewEngine(store)
		r := engineReq("POST", "/pets", "", "Idempotency-Key", "k")
		resp, err := e.ServeStrict(context.Background(), r, &idem.Operation{ID: "CreatePet"}, idem.NoBody(), strictRun(&runs))
		if err != nil || resp.Status != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "1" {
			t.Fatalf("got %+v, %v", resp, err)
		}
	})
}

func TestCaptureAndWrite(t *testing.T) {
	resp, err := idem.Capture(func(w http.ResponseWriter) error {
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
	if resp, err := idem.Capture(func(http.ResponseWriter) error { return wantErr }); resp != nil || err != wantErr {
		t.Errorf("Capture with a failing visit = %+v, %v", resp, err)
	}
}

func TestServeStrictNoResponse(t *testing.T) {
	store := newMemStore()
	e := idem.NewEngine(store)
	r := engineReq("POST", "/pets", "", "Idempotency-Key", "k")
	resp, err := e.ServeStrict(context.Background(), r, &idem.Operation{ID: "CreatePet"}, idem.NoBody(),
		func(context.Context) (*idem.Response, error) { return nil, nil })
	if resp != nil || err == nil || store.count("release") != 1 {
		t.Fatalf("got %+v, %v; want an error and a released lease", resp, err)
	}
}
