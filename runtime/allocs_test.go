package idem_test

import (
	"cmp"
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemgen"
	"github.com/idemgen/idemgen/runtime/idemstore"
)

// TestServeAllocations: a first request and a replay through
// Engine.Serve, and through the strict server (ServeBody and ServeStrict),
// over a store that allocates nothing, allocate no more than
// they do now (under load the garbage collector's share of the CPU is a
// visible part of a request's cost), so that a change which adds
// an allocation to every request fails here instead of going unnoticed.
// Lower the bounds when a change saves one.
func TestServeAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation bounds are measured without -race (its instrumentation allocates)")
	}
	// The body read (1), the keyed request (1), its storage key (1), its
	// fingerprints and owner token (1), the lease with its recorder (1),
	// the recorder's header map and its first group (2), the handler's
	// header value (1, as without the engine), the recorded body (1) and
	// the handler's request (http.Request.WithContext, 1).
	const maxFirst = 10
	// The body read, the keyed request, its storage key, its fingerprints
	// and owner token, and the replay's header values (1 each).
	const maxReplay = 5
	// The strict server's first request: the body read (1), ServeBody's
	// state, with the decoder's context and body reader (1), the decoder's
	// request (1), the keyed request and its two strings (3), the lease
	// with its recorder (1), the recorder's header map and first group
	// (2), the handler's header value (1), the recorded body (1) and the
	// header values the generated code writes (Response.Write, 1).
	const maxStrictFirst = 12
	// The strict server's replay: the body read, ServeBody's state and
	// the decoder's request, the keyed request and its two strings, the
	// replay Response, its header map, first group and values (4), and
	// the values written (1).
	const maxStrictReplay = 11
	for _, c := range []struct {
		name   string
		strict bool   // the strict server's two steps, as generated code runs them
		keep   bool   // replay the stored record, instead of forgetting it at completion
		typ    string // the request's Content-Type; JSON if empty
		max    float64
	}{
		{"first", false, false, "", maxFirst},
		{"replay", false, true, "", maxReplay},
		{"first-raw-body", false, false, "application/octet-stream", maxFirst}, // fingerprinted as sent
		{"replay-raw-body", false, true, "application/octet-stream", maxReplay},
		{"strict-first", true, false, "", maxStrictFirst},
		{"strict-replay", true, true, "", maxStrictReplay},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := &oneKeyStore{keep: c.keep}
			e := idem.NewEngine(s, idem.WithLogger(nil))
			h := e.Middleware(benchOp)(benchHandler)
			if c.strict {
				h = strictAllocHandler(e)
			}
			typ := cmp.Or(c.typ, "application/json")
			serve := requestServer(h, typ)
			run := func() {
				if status := serve(benchOneKey(0)); status != http.StatusCreated {
					t.Fatalf("status %d, want 201", status)
				}
			}
			run() // the record to replay; the pools and the heartbeat's queue warm
			n := testing.AllocsPerRun(1000, run)
			if n > c.max {
				t.Errorf("%s allocates %v times, want at most %v", c.name, n, c.max)
			}
		})
	}
}

// strictAllocHandler serves benchOp through e's strict server as the
// generated code does (ServeBody in front of the decoder, ServeStrict in
// the strict middleware, CaptureContext of the response object's visit),
// with a visit that answers as benchHandler does.
func strictAllocHandler(e *idem.Engine) http.Handler {
	op := benchOp
	visit := func(w http.ResponseWriter) error {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, err := w.Write(benchRespBody)
		return err
	}
	run := func(ctx context.Context) (*idem.Response, error) { return idemgen.CaptureContext(ctx, visit) }
	strict := func(w http.ResponseWriter, r *http.Request) {
		resp, err := e.ServeStrict(r.Context(), r, &op, run)
		if err != nil {
			panic(err)
		}
		_ = resp.Write(w)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { idemgen.ServeBody(e, w, r, &op, strict) })
}

// oneKeyStore is a Store of one record that allocates nothing once it
// holds one: a completed record is forgotten (the next acquire is a first
// run again) unless keep is set, when it is kept, copied, and replayed.
type oneKeyStore struct {
	keep bool

	mu          sync.Mutex // guards the fields below
	held        bool       // a record exists
	done        bool       // ... and is completed: rec
	token, fp   string
	rec         idemstore.Record
	body        []byte
	header      http.Header
	fence       int64
	leaseLapses time.Time
}

// Acquire implements idemstore.Store.
func (s *oneKeyStore) Acquire(_ context.Context, req idemstore.AcquireRequest) (idemstore.Acquisition, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case !s.held:
		s.held, s.done, s.token, s.fp = true, false, req.Token, req.Fingerprint
		s.fence++
		return idemstore.Acquisition{Outcome: idemstore.OutcomeFirstRun, Fence: s.fence}, nil
	case s.fp != req.Fingerprint:
		return idemstore.Acquisition{Outcome: idemstore.OutcomeMismatch}, nil
	case s.done:
		return idemstore.Acquisition{Outcome: idemstore.OutcomeReplay, Record: &s.rec}, nil
	}
	return idemstore.Acquisition{Outcome: idemstore.OutcomeConflict, Remaining: time.Second}, nil
}

// Complete implements idemstore.Store.
func (s *oneKeyStore) Complete(_ context.Context, _, token string, rec *idemstore.Record, _ time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.held || s.done || s.token != token {
		return idemstore.ErrNotOwner
	}
	if !s.keep {
		s.held = false
		return nil
	}
	s.body = append(s.body[:0], rec.Body...)
	s.header = rec.Header.Clone()
	s.rec = idemstore.Record{Status: rec.Status, Header: s.header, Body: s.body, BodyOmitted: rec.BodyOmitted}
	s.done = true
	return nil
}

// Release implements idemstore.Store.
func (s *oneKeyStore) Release(_ context.Context, _, token string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.held || s.done || s.token != token {
		return idemstore.ErrNotOwner
	}
	s.held = false
	return nil
}

// Extend implements idemstore.Store.
func (s *oneKeyStore) Extend(_ context.Context, _, token string, lease time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.held || s.done || s.token != token {
		return idemstore.ErrNotOwner
	}
	s.leaseLapses = time.Now().Add(lease)
	return nil
}
