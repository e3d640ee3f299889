package mysqlstore_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/internal/sqlfamily/sqlfamilytest"
	"github.com/idemgen/idemgen/runtime/mysqlstore"
	"github.com/idemgen/idemgen/runtime/mysqlstore/mysqltest"
)

// TestClosed: Close closes the store's prepared statements, and a call
// after it fails, saying the store is closed, instead of preparing them
// again (which would stay open on the pool's connections until the pool
// closed).
func TestClosed(t *testing.T) {
	db := mysqltest.DB(t, 0)
	s, _ := mysqltest.Store(t, db, mysqlstore.WithPurgeInterval(-1))
	ctx := context.Background()
	sqlfamilytest.Acquire(t, s, "before", "t", "fp")
	s.ReadBatch(ctx, []idemstore.AcquireRequest{{Key: "before", Fingerprint: "fp"}, {Key: "other", Fingerprint: "fp"}})
	if n := s.OpenStatements(); n != 2 {
		t.Fatalf("%d sets of statements prepared before Close, want 2 (the common path's and a batch's)", n)
	}
	_, open, err := s.AcquireRun(ctx, idemstore.AcquireRequest{Key: "open", Token: "t", Fingerprint: "fp"})
	if err != nil || open == nil {
		t.Fatalf("acquire run before Close: %v", err)
	}
	s.Close()
	cerr := open.Commit(ctx, &idemstore.Record{Status: http.StatusCreated}, time.Hour)
	_, aerr := s.Acquire(ctx, idemstore.AcquireRequest{Key: "after", Token: "t", Fingerprint: "fp"})
	_, run, rerr := s.AcquireRun(ctx, idemstore.AcquireRequest{Key: "after", Token: "t", Fingerprint: "fp"})
	if run != nil {
		_ = run.Rollback(ctx)
	}
	batch := s.ReadBatch(ctx, []idemstore.AcquireRequest{{Key: "after", Fingerprint: "fp"}, {Key: "other", Fingerprint: "fp"}})
	for name, err := range map[string]error{"acquire": aerr, "acquire run": rerr, "batched read": batch[0].Err, "commit of a run open at Close": cerr} {
		if !errors.Is(err, idemstore.ErrStoreUnavailable) || !strings.Contains(err.Error(), "store is closed") {
			t.Errorf("%s after Close = %v, want ErrStoreUnavailable saying the store is closed", name, err)
		}
	}
	if n := s.OpenStatements(); n != 0 {
		t.Errorf("%d sets of statements prepared after Close, want none", n)
	}
}
