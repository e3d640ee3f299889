package pgstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/internal/sqlfamily/sqlfamilytest"
	"github.com/idemgen/idemgen/runtime/pgstore"
	"github.com/idemgen/idemgen/runtime/pgstore/pgtest"
)

// TestReadsAfterClose: after Close, which closes the read lanes, reads go
// on in round trips of their own, on the caller's pool.
func TestReadsAfterClose(t *testing.T) {
	pool := pgtest.Pool(t, 1)
	s, _ := pgtest.Store(t, pool, pgstore.WithReadLanes(1))
	sqlfamilytest.Complete(t, s, "k", "the answer")
	s.Close()
	req := idemstore.AcquireRequest{Key: "k", Fingerprint: "fp", Token: "t", Lease: time.Minute}
	if acq, _, err := s.AcquireRun(context.Background(), req); err != nil || string(acq.Record.Body) != "the answer" {
		t.Errorf("a replay after Close: %+v, %v", acq, err)
	}
}
