package sqlfamilytest

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemop"
	"github.com/idemgen/idemgen/runtime/idemstore"
)

// testMisconfiguredTable: a records table the store's statements fail on,
// at acquire or at completion, or on which it cannot keep its promise (the
// dialect's [Misconfiguration]s, and a missing table), is misconfigured:
// Check says what is wrong and what to change, and every request, retries
// included, is answered 503 store-misconfigured without its handler
// running.
func testMisconfiguredTable(t *testing.T, d Dialect) {
	db := d.Open(t, d.DSN(t), 0)
	missing := Misconfiguration{Name: "missing table", Alter: func(t testing.TB, db DB, table string) []string {
		db.Exec(t, "DROP TABLE "+d.Quote(table))
		return []string{"does not exist", "CreateSchema"}
	}}
	for _, tc := range append(d.Misconfigurations(), missing) {
		t.Run(tc.Name, func(t *testing.T) {
			s, table := db.Store(t, StoreConfig{})
			wants := tc.Alter(t, db, table)
			err := s.Check(context.Background())
			if !errors.Is(err, idemstore.ErrStoreMisconfigured) {
				t.Errorf("Check = %v, want ErrStoreMisconfigured", err)
			} else {
				for _, want := range wants {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("Check = %v\nwant it to say %q", err, want)
					}
				}
			}
			RefusedWithoutRunning(t, db.NewStore(table))
		})
	}
}

// RefusedWithoutRunning serves three requests of one key on s (a fresh
// store, as a new process has) and checks that each is answered 503
// store-misconfigured without the handler running.
func RefusedWithoutRunning(t *testing.T, s Store) {
	t.Helper()
	defer s.Close()
	var runs atomic.Int64
	h := func(w http.ResponseWriter, r *http.Request) {
		runs.Add(1)
		w.WriteHeader(http.StatusCreated)
	}
	op := PayOp()
	srv := httptest.NewServer(Serve(idem.NewEngine(s, idem.WithLogger(nil)), &op, h))
	defer srv.Close()
	for i := range 3 {
		st, body := Post(t, srv.Client(), srv.URL, "A-key-longer-than-twenty-four-bytes")
		if st != http.StatusServiceUnavailable || ProblemCode(body) != idemop.CodeStoreMisconfigured {
			t.Errorf("request %d: %d %s; want 503 store-misconfigured", i+1, st, body)
		}
	}
	if n := runs.Load(); n != 0 {
		t.Errorf("the handler ran %d times; want 0", n)
	}
}

// testTriggerAddedUnderARunningStore: a trigger that refuses the
// completion, added after the store verified its table, lets the first
// request's handler run (nothing could tell before) and rolls its writes
// back, answered 500 store-completion-failed, but its retries are refused
// 503 store-misconfigured without running it again, and Check names the
// trigger.
func testTriggerAddedUnderARunningStore(t *testing.T, d Dialect) {
	db := d.Open(t, d.DSN(t), 0)
	s, table := db.Store(t, StoreConfig{})
	pay := db.Payments(t)
	var runs atomic.Int64
	op := PayOp()
	srv := httptest.NewServer(Serve(idem.NewEngine(s, idem.WithLogger(nil)), &op, PaymentHandler(d, pay, func(context.Context) { runs.Add(1) })))
	defer srv.Close()
	if st, body := Post(t, srv.Client(), srv.URL, "before"); st != http.StatusCreated {
		t.Fatalf("before the trigger: %d %s", st, body)
	}
	want := d.AddRefusingTrigger(t, db, table)
	if st, body := Post(t, srv.Client(), srv.URL, "after"); st != http.StatusInternalServerError || ProblemCode(body) != idemop.CodeStoreCompletionFailed {
		t.Errorf("first request after the trigger: %d %s; want 500 store-completion-failed", st, body)
	}
	for i := range 3 {
		if st, body := Post(t, srv.Client(), srv.URL, "after"); st != http.StatusServiceUnavailable || ProblemCode(body) != idemop.CodeStoreMisconfigured {
			t.Errorf("retry %d: %d %s; want 503 store-misconfigured", i+1, st, body)
		}
	}
	if n := runs.Load(); n != 2 {
		t.Errorf("the handler ran %d times; want 2 (before, and the first request after the trigger)", n)
	}
	if n := db.Count(t, pay, "true"); n != 1 {
		t.Errorf("%d payment rows; want 1: the refused completion rolls the handler's write back", n)
	}
	if err := s.Check(context.Background()); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Check = %v; want it to name the trigger (%q)", err, want)
	}
}
