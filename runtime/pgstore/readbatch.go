package pgstore

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/internal/lanes"
)

// maxReadBatch bounds the reads one lane sends in one round trip.
const maxReadBatch = 64

// errUnread is the answer of a batched read whose batch failed before its
// reply came.
var errUnread = errors.New("the batch of reads failed before this read's reply")

// The read lanes (runtime/internal/lanes) send the reads of concurrent
// acquires (AcquireRun's read-only SELECT) to the server together: a read
// that finds one of the lanes free is sent at once, alone, from its
// caller's goroutine; while every lane waits for the server, the reads
// that come queue, and the lane that comes free next sends them (up to
// maxReadBatch) pipelined in one round trip on a connection of the pool,
// and hands each its reply. Each read is still its own read-only
// statement (no lock, no transaction id, nothing written); what a batch
// shares is the round trip, the connection's system calls and the
// server's wake-ups, which are most of what a read costs the database
// (BENCHMARKS.md).

// readReply is a read's answer (Store.read).
type readReply struct {
	acq           idemstore.Acquisition
	lapsed, found bool
}

type readCall = lanes.Call[idemstore.AcquireRequest, readReply]

// newReadLanes returns the store's read lanes.
func (s *Store) newReadLanes(n int) *lanes.Lanes[idemstore.AcquireRequest, readReply] {
	alone := func(ctx context.Context, req idemstore.AcquireRequest) (readReply, error) {
		acq, lapsed, found, err := s.readOne(ctx, req)
		return readReply{acq, lapsed, found}, err
	}
	return lanes.New(n, maxReadBatch, alone, s.readBatch)
}

// readBatch reads calls in one round trip, each its reply.
func (s *Store) readBatch(ctx context.Context, calls []*readCall) {
	b := &pgx.Batch{QueuedQueries: make([]*pgx.QueuedQuery, 0, len(calls))}
	for _, c := range calls {
		c.Err = errUnread
		b.Queue(s.sql.read, c.Req.Key, c.Req.Fingerprint).QueryRow(func(row pgx.Row) error {
			c.Reply.acq, c.Reply.lapsed, c.Reply.found, c.Err = replyOf(scanRecord(row))
			return nil
		})
	}
	if err := s.pool.SendBatch(ctx, b).Close(); err != nil {
		for _, c := range calls {
			if c.Err == errUnread {
				c.Err = err
			}
		}
	}
}

// replyOf is scanRecord's answer as read returns it.
func replyOf(acq idemstore.Acquisition, lapsed bool, err error) (idemstore.Acquisition, bool, bool, error) {
	if errors.Is(err, pgx.ErrNoRows) {
		return idemstore.Acquisition{}, false, false, nil
	}
	return acq, lapsed, err == nil, err
}
