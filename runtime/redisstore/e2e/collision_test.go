package e2e_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemop"
	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/redisstore"
	"github.com/idemgen/idemgen/runtime/redisstore/redistest"
)

// Two operations whose record keys collide: the 48-bit OperationToken of
// CreatePayment in two APIs, and of two operations in one API (found by
// brute force).
var (
	collidingAPIs = [2]string{"svc-36016340", "svc-37724004"}
	collidingOps  = [2]string{"op445019", "op5908189"}
)

// TestCollidingOperationTokensRefuse: two APIs (or two operations of one)
// whose record keys collide share a record for a client key sent to both;
// the second is refused 422, never answered the first's stored response.
// On real Redis.
func TestCollidingOperationTokensRefuse(t *testing.T) {
	if a, b := idemstore.OperationToken(collidingAPIs[0], "CreatePayment"), idemstore.OperationToken(collidingAPIs[1], "CreatePayment"); a != b {
		t.Fatalf("tokens %s and %s: not a collision", a, b)
	}
	if a, b := idemstore.OperationToken("shop", collidingOps[0]), idemstore.OperationToken("shop", collidingOps[1]); a != b {
		t.Fatalf("tokens %s and %s: not a collision", a, b)
	}
	rdb := redistest.Real(t)
	for _, tc := range []struct {
		name string
		ops  [2]idemop.Operation
	}{
		{"two APIs", [2]idemop.Operation{
			{ID: "CreatePayment", API: collidingAPIs[0], Method: http.MethodPost, Path: "/payments"},
			{ID: "CreatePayment", API: collidingAPIs[1], Method: http.MethodPost, Path: "/payments"},
		}},
		{"two operations", [2]idemop.Operation{
			{ID: collidingOps[0], API: "shop", Method: http.MethodPost, Path: "/payments"},
			{ID: collidingOps[1], API: "shop", Method: http.MethodPost, Path: "/payments"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prefix := redistest.Prefix(t)
			var runs [2]atomic.Int32
			for i := range 2 {
				e := idem.NewEngine(redisstore.New(rdb, redisstore.WithPrefix(prefix), redisstore.WithLogger(nil)))
				w := httptest.NewRecorder()
				e.Serve(w, engineReq(http.MethodPost, "/payments", `{"amount":4200}`, "Idempotency-Key", "k-1"), &tc.ops[i], func(w http.ResponseWriter, r *http.Request) {
					runs[i].Add(1)
					w.WriteHeader(http.StatusCreated)
					_, _ = w.Write([]byte(tc.ops[i].API + " " + tc.ops[i].ID))
				})
				if want := []int{http.StatusCreated, http.StatusUnprocessableEntity}[i]; w.Code != want {
					t.Errorf("%s %s: %d %v %q; want %d", tc.ops[i].API, tc.ops[i].ID, w.Code, w.Header(), w.Body, want)
				}
			}
			if runs[0].Load() != 1 || runs[1].Load() != 0 {
				t.Errorf("runs %d, %d; want 1, 0", runs[0].Load(), runs[1].Load())
			}
		})
	}
}

// fingerprintBeforeAPI is the fingerprint the engine gave the store, before
// fingerprints covered the API identity, for the request of
// TestRecordsFingerprintedBeforeTheAPIRefused.
const fingerprintBeforeAPI = "14ad496352b39f514170c621019faa4e5e6370a204f01e69c0dcc3d836f34b18"

// beforeAPIFingerprint is the store as the version between the key layouts
// used it: records under the current key, with the request's fingerprint
// without the API identity (fingerprintBeforeAPI, for the one request it
// serves).
type beforeAPIFingerprint struct{ idemstore.Store }

func (s beforeAPIFingerprint) Acquire(ctx context.Context, req idemstore.AcquireRequest) (idemstore.Acquisition, error) {
	req.Fingerprint = fingerprintBeforeAPI
	return s.Store.Acquire(ctx, req)
}

// TestRecordsFingerprintedBeforeTheAPIRefused: a record stored before the
// fingerprint covered the API identity (by the version between the key
// layouts) is another request's to the store a new deployment builds
// (redisstore.New, no migration): the colliding API's request with the same
// body and key is answered 422, never a replay of the other API's body, and
// its handler does not run. (Package previouslayout accepts such records
// while an upgrade's window lasts.) On real Redis.
func TestRecordsFingerprintedBeforeTheAPIRefused(t *testing.T) {
	rdb := redistest.Real(t)
	prefix := redistest.Prefix(t)
	var runs [2]atomic.Int32
	serve := func(i int, s idemstore.Store) *httptest.ResponseRecorder {
		op := idemop.Operation{ID: "CreatePayment", API: collidingAPIs[i], Method: http.MethodPost, Path: "/payments", Lock: time.Minute}
		w := httptest.NewRecorder()
		idem.NewEngine(s).Serve(w, engineReq(http.MethodPost, "/payments", `{"amount":4200}`, "Idempotency-Key", "k-1"), &op, func(w http.ResponseWriter, r *http.Request) {
			runs[i].Add(1)
			w.WriteHeader(http.StatusCreated)
			_, _ = w.Write([]byte("paid by " + collidingAPIs[i]))
		})
		return w
	}
	store := func() *redisstore.Store {
		return redisstore.New(rdb, redisstore.WithPrefix(prefix), redisstore.WithLogger(nil))
	}
	if w := serve(0, beforeAPIFingerprint{store()}); w.Code != http.StatusCreated {
		t.Fatalf("API 1 on the version between: %d %s", w.Code, w.Body)
	}
	if w := serve(1, store()); w.Code != http.StatusUnprocessableEntity {
		t.Errorf("API 2, same key and body, after the upgrade: %d %v %q; want 422", w.Code, w.Header(), w.Body)
	}
	if a, b := runs[0].Load(), runs[1].Load(); a != 1 || b != 0 {
		t.Errorf("runs %d, %d; want 1, 0", a, b)
	}
}
