package mysqlstore

import (
	"context"

	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/internal/sqlfamily/sqlfamilytest"
)

// ReadBatch sends reqs as one batch of the read lanes, as a lane does with
// the reads that queued while it was busy, and returns their replies in
// order: a read that found no record, an expired one, or one whose lease
// lapsed (a recovery), goes on to claim the key.
func (s *Store) ReadBatch(ctx context.Context, reqs []idemstore.AcquireRequest) []sqlfamilytest.Read {
	read := func(req idemstore.AcquireRequest) readReq { return readReq{req.Key, req.Fingerprint} }
	return sqlfamilytest.SendReads(ctx, s.newReadLanes(1), reqs, read, func(r readReply, err error) sqlfamilytest.Read {
		claim := r.how != answered
		return sqlfamilytest.Read{Acq: r.acq, Claim: claim, Lapsed: claim && r.acq.Outcome == idemstore.OutcomeRecovered, Err: err}
	})
}

// OpenStatements counts the statements the store holds prepared: its
// common path's (as one) and its batched reads'.
func (s *Store) OpenStatements() int {
	n := 0
	if s.prep.Load() != nil {
		n++
	}
	for i := range s.batchRead {
		if s.batchRead[i].Load() != nil {
			n++
		}
	}
	return n
}

// RowsOf is rowsOf, for the test of database/sql's row's shape.
var RowsOf = rowsOf
