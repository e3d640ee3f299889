package pgstore

import (
	"context"

	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/internal/sqlfamily/sqlfamilytest"
)

// ReadBatch sends reqs as one batch of the read lanes, as a lane does with
// the reads that queued while it was busy, and returns their replies in
// order: a read that found no record, or one whose lease lapsed, goes on
// to claim the key.
func (s *Store) ReadBatch(ctx context.Context, reqs []idemstore.AcquireRequest) []sqlfamilytest.Read {
	same := func(req idemstore.AcquireRequest) idemstore.AcquireRequest { return req }
	return sqlfamilytest.SendReads(ctx, s.newReadLanes(1), reqs, same, func(r readReply, err error) sqlfamilytest.Read {
		return sqlfamilytest.Read{Acq: r.acq, Claim: !r.found || r.lapsed, Lapsed: r.lapsed, Err: err}
	})
}
