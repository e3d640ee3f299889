package previouslayout_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemop"
	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/redisstore"
	"github.com/idemgen/idemgen/runtime/redisstore/previouslayout"
	"github.com/idemgen/idemgen/runtime/redisstore/redistest"
)

// TestLayerOffInTheWindow: a process started without the migration
// (redisstore.New) on a server whose window is open, while records of the
// previous layout live there, refuses every request (503
// store-misconfigured, the handler never runs) instead of running the
// retries of requests the previous version answered again; its Check names
// the window's end, which the migrating processes recorded: the marker's
// time, a day of rollout and the longest retention any of them was given.
// Once an operator ends the window (the marker at 0), a store started
// afterwards serves.
func TestLayerOffInTheWindow(t *testing.T) {
	ctx := context.Background()
	rdb := redistest.Real(t)
	prefix := redistest.Prefix(t)
	op := idemop.Operation{ID: "CreateOrder", API: "shop", Method: http.MethodPost, Path: "/orders", Lock: time.Minute}
	runs := map[string]int{}
	serve := func(s idemstore.Store, key string) *httptest.ResponseRecorder {
		w := httptest.NewRecorder()
		idem.NewEngine(s, idem.WithLogger(nil)).Serve(w, engineReq(http.MethodPost, "/orders", `{"n":1}`, "Idempotency-Key", key), &op,
			func(w http.ResponseWriter, _ *http.Request) {
				runs[key]++
				w.WriteHeader(http.StatusCreated)
			})
		return w
	}
	// The previous version answers five requests.
	old := previousLayout{redisstore.New(rdb, previousVersion(prefix)...), op.API, op.ID}
	keys := make([]string, 5)
	for i := range keys {
		keys[i] = fmt.Sprintf("k-%d", i)
		if w := serve(old, keys[i]); w.Code != http.StatusCreated {
			t.Fatalf("previous version: %d %s", w.Code, w.Body)
		}
	}
	// The upgrade: processes with the migration on, given three retentions.
	opts := []redisstore.Option{redisstore.WithPrefix(prefix), redisstore.WithLogger(nil)}
	var since time.Time
	for _, retention := range []time.Duration{0, 96 * time.Hour, time.Hour} {
		store := previouslayout.New(rdb, retention, opts...)
		if w := serve(store, "k-new"); w.Code != http.StatusCreated {
			t.Fatalf("migrating process (retention %v): %d %s", retention, w.Code, w.Body)
		}
		since, _ = store.KeyLayoutSince()
	}
	wantEnd := since.Add(previouslayout.Rollout + 96*time.Hour)

	// A process started without the migration.
	plain := redisstore.New(rdb, opts...)
	var log syncBuffer
	plainEngine := idem.NewEngine(plain, idem.WithLogger(slog.New(slog.NewTextHandler(&log, nil))))
	for _, k := range keys {
		w := httptest.NewRecorder()
		plainEngine.Serve(w, engineReq(http.MethodPost, "/orders", `{"n":1}`, "Idempotency-Key", k), &op, func(w http.ResponseWriter, _ *http.Request) {
			runs[k]++
			w.WriteHeader(http.StatusCreated)
		})
		if w.Code != http.StatusServiceUnavailable || !strings.Contains(w.Body.String(), "store-misconfigured") {
			t.Errorf("retry of %s without the migration: %d %s; want 503 store-misconfigured", k, w.Code, w.Body)
		}
		if runs[k] != 1 {
			t.Errorf("%s ran %d times", k, runs[k])
		}
	}
	end := wantEnd.UTC().Format(time.RFC3339)
	if !strings.Contains(log.String(), "until "+end) || !strings.Contains(log.String(), "previouslayout.New") {
		t.Errorf("the log does not say until when, and what to change:\n%s", log.String())
	}
	if err := plain.Check(ctx); !errors.Is(err, idemstore.ErrStoreMisconfigured) || !strings.Contains(err.Error(), "until "+end) {
		t.Errorf("Check = %v; want the open window, until %s", err, end)
	}
	l, err := plain.KeyLayout(ctx)
	if err != nil || !l.Open() || l.Estimated || !l.WindowEnd.Equal(wantEnd) || !l.Since.Equal(since) {
		t.Errorf("KeyLayout = %+v, %v; want open since %v until %v, recorded", l, err, since, wantEnd)
	}

	// The window ended by hand: a process started afterwards serves.
	if err := rdb.Set(ctx, prefix+":"+previouslayout.KeyLayoutMarker, "0", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if w := serve(redisstore.New(rdb, opts...), "k-after"); w.Code != http.StatusCreated {
		t.Errorf("after the window: %d %s", w.Code, w.Body)
	}
}

// TestEstimatedWindowEnd: a marker that no process recorded the end of (a
// release before the end was recorded wrote it) is taken to end a day of
// rollout (previouslayout.Rollout) and the default retention after it.
func TestEstimatedWindowEnd(t *testing.T) {
	rdb := redistest.Real(t)
	prefix := redistest.Prefix(t)
	since := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	if err := rdb.Set(context.Background(), prefix+":"+previouslayout.KeyLayoutMarker, strconv.FormatInt(since.UnixMilli(), 10), 0).Err(); err != nil {
		t.Fatal(err)
	}
	l, err := redisstore.New(rdb, redisstore.WithPrefix(prefix)).KeyLayout(context.Background())
	if want := since.Add(previouslayout.Rollout + idemstore.DefaultRetention); err != nil || !l.Estimated || !l.WindowEnd.Equal(want) {
		t.Errorf("KeyLayout = %+v, %v; want an estimated end at %v", l, err, want)
	}
}
