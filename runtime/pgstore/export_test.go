package pgstore

import (
	"context"

	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/internal/lanes"
)

// ReadReply is one reply of ReadBatch.
type ReadReply struct {
	Acq           idemstore.Acquisition
	Lapsed, Found bool
	Err           error
}

// ReadBatch sends reqs as one batch of the read lanes, as a lane does with
// the reads that queued while it was busy, and returns their replies in
// order.
func (s *Store) ReadBatch(ctx context.Context, reqs []idemstore.AcquireRequest) []ReadReply {
	calls := make([]*readCall, len(reqs))
	for i, req := range reqs {
		calls[i] = lanes.NewCall[idemstore.AcquireRequest, readReply](ctx, req)
	}
	s.newReadLanes(1).Send(calls)
	replies := make([]ReadReply, len(reqs))
	for i, c := range calls {
		c.Wait()
		replies[i] = ReadReply{c.Reply.acq, c.Reply.lapsed, c.Reply.found, c.Err}
	}
	return replies
}
