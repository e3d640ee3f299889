package idem_test

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemgen"
	"github.com/idemgen/idemgen/runtime/idemop"
)

// fakeClock is the injected clock of the client tests: sleeping records the
// wait and advances the time at once, so no test waits for real.
type fakeClock struct {
	mu    sync.Mutex
	t     time.Time
	waits []time.Duration
}

func newFakeClock() *fakeClock {
	return &fakeClock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
}

func (f *fakeClock) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.t
}

func (f *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.waits = append(f.waits, d)
	f.t = f.t.Add(d)
	return nil
}

func (f *fakeClock) Advance(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.t = f.t.Add(d)
}

func (f *fakeClock) Waits() []time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]time.Duration(nil), f.waits...)
}

// seen is one request as the test server read it.
type seen struct {
	key  string // the raw key header
	body []byte
}

// step answers one request of a script.
type step func(s *scriptServer, w http.ResponseWriter, r *http.Request)

// scriptServer answers its i-th request with steps[i], and 201 once the
// script is done. It records every request it read in full.
type scriptServer struct {
	*httptest.Server
	release chan struct{} // closed when the test ends, ending blocked handlers
	mu      sync.Mutex
	reqs    []seen
}

func newScriptServer(t *testing.T, steps ...step) *scriptServer {
	t.Helper()
	s := &scriptServer{release: make(chan struct{})}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return // the client gave up while sending
		}
		s.mu.Lock()
		i := len(s.reqs)
		s.reqs = append(s.reqs, seen{key: r.Header.Get(idemop.DefaultKeyHeader), body: body})
		s.mu.Unlock()
		if i < len(steps) {
			steps[i](s, w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, `{"id":1}`)
	}))
	t.Cleanup(func() {
		close(s.release)
		s.Close() // waits for the handlers
	})
	return s
}

func (s *scriptServer) Requests() []seen {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]seen(nil), s.reqs...)
}

// client returns an HTTP client without keep-alives. With keep-alives,
// net/http itself replays a request that carries an Idempotency-Key header
// when a reused connection breaks, and the server would see attempts that
// Run did not make (AttemptInfo.Sent counts them; TestClientCountsTransportResend).
func (s *scriptServer) client() *http.Client {
	tr := s.Client().Transport.(*http.Transport).Clone()
	tr.DisableKeepAlives = true
	return &http.Client{Transport: tr}
}

func answer(status int, header ...string) step {
	return func(_ *scriptServer, w http.ResponseWriter, _ *http.Request) {
		for i := 0; i+1 < len(header); i += 2 {
			w.Header().Set(header[i], header[i+1])
		}
		w.WriteHeader(status)
		io.WriteString(w, `{"code":"x"}`)
	}
}

// retryAfterDate answers status with an HTTP-date Retry-After d after the
// fake clock's now.
func retryAfterDate(status int, clock *fakeClock, d time.Duration) step {
	return func(s *scriptServer, w http.ResponseWriter, r *http.Request) {
		answer(status, "Retry-After", clock.Now().Add(d).Format(http.TimeFormat))(s, w, r)
	}
}

// reset hijacks the connection and closes it with SO_LINGER 0, so the
// client gets a TCP RST (connection reset by peer) instead of a response.
func reset(t *testing.T) step {
	return func(_ *scriptServer, w http.ResponseWriter, _ *http.Request) {
		conn, _, err := w.(http.Hijacker).Hijack()
		if err != nil {
			t.Errorf("hijack: %v", err)
			return
		}
		if tc, ok := conn.(*net.TCPConn); ok {
			tc.SetLinger(0)
		}
		conn.Close()
	}
}

// block holds the request until the test ends and releases it; the
// client's per-attempt timeout cuts it off.
func block(s *scriptServer, _ http.ResponseWriter, _ *http.Request) { <-s.release }

// sender returns the attempt function that generated code builds: a fresh
// reader over the same bytes, the call's editor, the whole body read and
// closed before returning (as oapi-codegen's ClientWithResponses does).
func sender(hc *http.Client, url string, call *idem.Call, body []byte) func(ctx context.Context) (*http.Response, error) {
	return func(ctx context.Context) (*http.Response, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
		if err != nil {
			return nil, err
		}
		req.Header.Set("Content-Type", "application/json")
		if err := idemgen.Editor(call)(ctx, req); err != nil {
			return nil, err
		}
		resp, err := hc.Do(req)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		if _, err := io.ReadAll(resp.Body); err != nil {
			return nil, err
		}
		return resp, nil
	}
}

// hookLog collects the attempt hook's reports.
type hookLog struct {
	mu    sync.Mutex
	infos []idem.AttemptInfo
}

func (h *hookLog) hook(info idem.AttemptInfo) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.infos = append(h.infos, info)
}

func (h *hookLog) Infos() []idem.AttemptInfo {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]idem.AttemptInfo(nil), h.infos...)
}

// checkSameRequest checks that every request the server read carried the
// call's key and exactly the marshalled body.
func checkSameRequest(t *testing.T, reqs []seen, key string, body []byte) {
	t.Helper()
	for i, r := range reqs {
		if r.key != key {
			t.Errorf("request %d: key header %s, want %s", i+1, r.key, key)
		}
		if !bytes.Equal(r.body, body) {
			t.Errorf("request %d: body %s, want %s", i+1, r.body, body)
		}
	}
}

var createPet = &idemop.ClientOperation{ID: "CreatePet", KeyHeader: idemop.DefaultKeyHeader}

type pet struct {
	Name string `json:"name"`
	Tag  string `json:"tag,omitempty"`
}
