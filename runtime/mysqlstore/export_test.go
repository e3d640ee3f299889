package mysqlstore

import (
	"context"

	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/internal/lanes"
)

// ReadReply is one reply of ReadBatch.
type ReadReply struct {
	Acq   idemstore.Acquisition
	Claim bool
	Err   error
}

// ReadBatch reads keys[i] with fingerprints[i] as one batch of the read
// lanes, as a lane does with the reads that queued while it was busy, and
// returns their replies in order.
func (s *Store) ReadBatch(ctx context.Context, keys, fingerprints []string) []ReadReply {
	calls := make([]*readCall, len(keys))
	for i := range keys {
		calls[i] = lanes.NewCall[readReq, readReply](ctx, readReq{keys[i], fingerprints[i]})
	}
	s.newReadLanes(1).Send(calls)
	replies := make([]ReadReply, len(keys))
	for i, c := range calls {
		c.Wait()
		replies[i] = ReadReply{c.Reply.acq, c.Reply.how != answered, c.Err}
	}
	return replies
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
