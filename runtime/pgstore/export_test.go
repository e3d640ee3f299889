package pgstore

import (
	"context"

	"github.com/idemgen/idemgen/runtime/idemstore"
)

// ReadReply is one reply of ReadBatch.
type ReadReply struct {
	Acq           idemstore.Acquisition
	Lapsed, Found bool
	Err           error
}

// ReadBatch sends reqs as one batch of a read lane, as a lane does with the
// reads that queued while it was busy, and returns their replies in order.
func (s *Store) ReadBatch(ctx context.Context, reqs []idemstore.AcquireRequest) []ReadReply {
	l := &readLanes{s: s}
	batch := make([]*batchedRead, len(reqs))
	for i, req := range reqs {
		batch[i] = &batchedRead{ctx: ctx, req: req, done: make(chan struct{})}
	}
	l.send(batch)
	replies := make([]ReadReply, len(reqs))
	for i, r := range batch {
		<-r.done
		replies[i] = ReadReply{r.acq, r.lapsed, r.found, r.err}
	}
	return replies
}
