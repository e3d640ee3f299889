package pgstore

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/idemgen/idemgen/runtime/idemstore"
)

// maxReadBatch bounds the reads one lane sends in one round trip.
const maxReadBatch = 64

// errUnread is the answer of a batched read whose batch failed before its
// reply came.
var errUnread = errors.New("the batch of reads failed before this read's reply")

// readLanes sends the reads of concurrent acquires (AcquireRun's read-only
// SELECT) to the server together, in natural batches: each of its lanes
// takes one read and whatever others are waiting then (up to
// maxReadBatch), sends them in one pipelined round trip on a connection of
// the pool, and hands each its reply. Reads that find a lane free wait for
// nothing: batches form only while every lane has a round trip in flight,
// so a batch holds the reads that came during the one before it. Each
// read is still its own read-only statement (no lock, no transaction id,
// nothing written); what the batch shares is the round trip, the
// connection's syscalls and the server's wake-ups, which are most of what a
// read costs the database (BENCHMARKS.md).
//
// A batch's round trip ends at the latest deadline of its reads; a read
// whose context ends first returns at once with its context's error.
type readLanes struct {
	s     *Store
	lanes int
	queue chan *batchedRead // unbuffered: a send succeeds only into a live lane
	once  sync.Once
}

// batchedRead is one read in readLanes.
type batchedRead struct {
	ctx  context.Context
	req  idemstore.AcquireRequest
	done chan struct{} // closed once the fields below hold the reply

	acq    idemstore.Acquisition
	lapsed bool
	found  bool
	err    error
}

// read is Store.read through a lane: its reply, or ctx's error once ctx
// ends first. After Close, it reads on its own.
func (l *readLanes) read(ctx context.Context, req idemstore.AcquireRequest) (acq idemstore.Acquisition, lapsed, found bool, err error) {
	l.once.Do(l.start)
	r := &batchedRead{ctx: ctx, req: req, done: make(chan struct{})}
	select {
	case l.queue <- r:
	case <-ctx.Done():
		return idemstore.Acquisition{}, false, false, ctx.Err()
	case <-l.s.stop:
		return l.s.readOne(ctx, req)
	}
	select {
	case <-r.done:
		return r.acq, r.lapsed, r.found, r.err
	case <-ctx.Done():
		return idemstore.Acquisition{}, false, false, ctx.Err()
	}
}

func (l *readLanes) start() {
	for range l.lanes {
		go l.lane()
	}
}

// lane sends batches of reads until the store is closed.
func (l *readLanes) lane() {
	batch := make([]*batchedRead, 0, maxReadBatch)
	for {
		select {
		case r := <-l.queue:
			batch = append(batch[:0], r)
		case <-l.s.stop:
			return
		}
	more:
		for len(batch) < maxReadBatch {
			select {
			case r := <-l.queue:
				batch = append(batch, r)
			default:
				break more
			}
		}
		l.send(batch)
		clear(batch) // drop the replies, which their readers hold
	}
}

// send reads batch in one round trip (a lone read as Store.readOne does)
// and hands each read its reply.
func (l *readLanes) send(batch []*batchedRead) {
	live := batch[:0:0]
	var last time.Time // the latest deadline; zero if a read has none
	bounded := true
	for _, r := range batch {
		if err := r.ctx.Err(); err != nil { // its reader has gone
			r.err = err
			close(r.done)
			continue
		}
		live = append(live, r)
		if d, ok := r.ctx.Deadline(); !ok {
			bounded = false
		} else if d.After(last) {
			last = d
		}
	}
	switch len(live) {
	case 0:
		return
	case 1:
		r := live[0]
		r.acq, r.lapsed, r.found, r.err = l.s.readOne(r.ctx, r.req)
		close(r.done)
		return
	}
	ctx := context.Background()
	if bounded {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, last)
		defer cancel()
	}
	b := &pgx.Batch{QueuedQueries: make([]*pgx.QueuedQuery, 0, len(live))}
	for _, r := range live {
		r.err = errUnread
		b.Queue(l.s.sql.read, r.req.Key, r.req.Fingerprint).QueryRow(func(row pgx.Row) error {
			r.acq, r.lapsed, r.found, r.err = replyOf(scanRecord(row))
			return nil
		})
	}
	err := l.s.pool.SendBatch(ctx, b).Close()
	for _, r := range live {
		if err != nil && r.err == errUnread {
			r.err = err
		}
		close(r.done)
	}
}

// replyOf is scanRecord's answer as read returns it.
func replyOf(acq idemstore.Acquisition, lapsed bool, err error) (idemstore.Acquisition, bool, bool, error) {
	if errors.Is(err, pgx.ErrNoRows) {
		return idemstore.Acquisition{}, false, false, nil
	}
	return acq, lapsed, err == nil, err
}
