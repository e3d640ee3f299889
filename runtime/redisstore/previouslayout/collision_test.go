package previouslayout_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemop"
	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/redisstore"
	"github.com/idemgen/idemgen/runtime/redisstore/previouslayout"
	"github.com/idemgen/idemgen/runtime/redisstore/redistest"
)

// collidingAPIs are two API identities whose OperationToken of
// CreatePayment collide: their records share a key.
var collidingAPIs = [2]string{"svc-36016340", "svc-37724004"}

// between is the store as the version between the key layouts used it:
// records under the current key, holding the request's fingerprint without
// the API identity.
type between struct{ idemstore.Store }

func (s between) Acquire(ctx context.Context, req idemstore.AcquireRequest) (idemstore.Acquisition, error) {
	req.Fingerprint, req.Origin = req.Origin.Request, nil
	return s.Store.Acquire(ctx, req)
}

// TestRecordsFingerprintedBeforeTheAPI: a record the version between the
// layouts stored (its fingerprint without the API identity) is replayed to
// a retry after the upgrade while the migration's window lasts, and
// another payload under its key is refused; once the window is over it is
// another request's, and so is it to the colliding API at any time but in
// the window: 422, never a replay of the other API's body. On real Redis.
func TestRecordsFingerprintedBeforeTheAPI(t *testing.T) {
	if a, b := idemstore.OperationToken(collidingAPIs[0], "CreatePayment"), idemstore.OperationToken(collidingAPIs[1], "CreatePayment"); a != b {
		t.Fatalf("tokens %s and %s: not a collision", a, b)
	}
	rdb := redistest.Real(t)
	for _, window := range []bool{true, false} {
		t.Run(map[bool]string{true: "in the window", false: "after the window"}[window], func(t *testing.T) {
			prefix := redistest.Prefix(t)
			var runs [2]atomic.Int32
			serve := func(i int, s idemstore.Store, body string) *httptest.ResponseRecorder {
				op := idemop.Operation{ID: "CreatePayment", API: collidingAPIs[i], Method: http.MethodPost, Path: "/payments", Lock: time.Minute}
				w := httptest.NewRecorder()
				idem.NewEngine(s).Serve(w, engineReq(http.MethodPost, "/payments", body, "Idempotency-Key", "k-1"), &op, func(w http.ResponseWriter, r *http.Request) {
					runs[i].Add(1)
					w.WriteHeader(http.StatusCreated)
					_, _ = w.Write([]byte("paid by " + collidingAPIs[i]))
				})
				return w
			}
			opts := []redisstore.Option{redisstore.WithPrefix(prefix), redisstore.WithLogger(nil)}
			if w := serve(0, between{redisstore.New(rdb, opts...)}, `{"amount":4200}`); w.Code != http.StatusCreated {
				t.Fatalf("the version between: %d %s", w.Code, w.Body)
			}
			if !window {
				past := time.Now().Add(-previouslayout.Rollout - idemstore.DefaultRetention - time.Hour).UnixMilli()
				if err := rdb.Set(context.Background(), prefix+":"+previouslayout.KeyLayoutMarker, strconv.FormatInt(past, 10), 0).Err(); err != nil {
					t.Fatal(err)
				}
			}
			store := previouslayout.New(rdb, 0, opts...)
			w := serve(0, store, `{"amount":4200}`)
			if window && (w.Code != http.StatusCreated || w.Header().Get(idemop.HeaderReplayed) != "true" || w.Body.String() != "paid by "+collidingAPIs[0]) {
				t.Errorf("retry in the window: %d %v %q; want the replay", w.Code, w.Header(), w.Body)
			}
			if !window && w.Code != http.StatusUnprocessableEntity {
				t.Errorf("retry after the window: %d %v %q; want 422", w.Code, w.Header(), w.Body)
			}
			if w := serve(0, store, `{"amount":1}`); w.Code != http.StatusUnprocessableEntity {
				t.Errorf("another payload: %d; want 422", w.Code)
			}
			if !window {
				if w := serve(1, store, `{"amount":4200}`); w.Code != http.StatusUnprocessableEntity {
					t.Errorf("the colliding API, same key and body: %d %v %q; want 422", w.Code, w.Header(), w.Body)
				}
			}
			if a, b := runs[0].Load(), runs[1].Load(); a != 1 || b != 0 {
				t.Errorf("runs %d, %d; want 1, 0", a, b)
			}
		})
	}
}
