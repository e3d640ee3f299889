package mysqlstore

import (
	"bytes"
	"context"
	"database/sql"

	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/internal/lanes"
)

// The read lanes (runtime/internal/lanes) send the reads of concurrent
// acquires to the server together: a read that finds one of the lanes
// free is sent at once, alone, from its caller's goroutine; while every
// lane waits for the server, the reads that come queue, and the lane that
// comes free next reads their keys (up to the largest of batchSizes) in
// one statement, SELECT ... WHERE key IN (...), one probe of the primary
// key each; a key asked twice is read once. Like the one-key read, the
// batch is a consistent read: no lock, no transaction id, nothing
// written.

// batchSizes are the key counts of the batched reads' statements, each
// prepared once: a batch takes the least that holds its keys, the last
// key repeated to fill it.
var batchSizes = [...]int{2, 4, 8, 16, 32, 64}

// readReq is one read: a key and the request's fingerprint.
type readReq struct{ key, fingerprint string }

// readReply is a read's answer (Store.read).
type readReply struct {
	acq idemstore.Acquisition
	how claimHow
}

type readCall = lanes.Call[readReq, readReply]

// newReadLanes returns the store's read lanes.
func (s *Store) newReadLanes(n int) *lanes.Lanes[readReq, readReply] {
	alone := func(ctx context.Context, q readReq) (readReply, error) {
		acq, how, err := s.readOne(ctx, q.key, q.fingerprint)
		return readReply{acq, how}, err
	}
	return lanes.New(n, batchSizes[len(batchSizes)-1], alone, s.readBatch)
}

// readBatch reads the keys of calls in one statement and answers each.
func (s *Store) readBatch(ctx context.Context, calls []*readCall) {
	fail := func(err error) {
		for _, c := range calls {
			c.Err = err
		}
	}
	class := 0 // the least of batchSizes that holds the calls' keys
	for batchSizes[class] < len(calls) {
		class++
	}
	size := batchSizes[class]
	st, err := s.batchStatement(ctx, class)
	if err != nil {
		fail(err)
		return
	}
	args := make([]any, size)
	for i := range args {
		args[i] = calls[min(i, len(calls)-1)].Req.key
	}
	rows, err := st.QueryContext(ctx, args...)
	if err != nil {
		fail(s.core.Refused("acquire", dialect.StoreError("acquire", err)))
		return
	}
	defer rows.Close()
	type read struct {
		record
		used bool
	}
	found := make(map[string]*read, len(calls))
	for rows.Next() {
		var key string
		r := &read{}
		if err := rows.Scan(append([]any{&key}, r.dest()...)...); err != nil {
			fail(dialect.StoreError("acquire", err))
			return
		}
		found[key] = r
	}
	if err := rows.Err(); err != nil {
		fail(s.core.Refused("acquire", dialect.StoreError("acquire", err)))
		return
	}
	for _, c := range calls {
		r, ok := found[c.Req.key]
		if !ok {
			c.Reply = readReply{how: claimNew}
			continue
		}
		rec := r.record
		if r.used { // a second request of the key: a body of its own
			rec.row.Body = bytes.Clone(rec.row.Body)
		}
		r.used = true
		c.Reply.acq, c.Reply.how, c.Err = rec.answer(c.Req.fingerprint)
	}
}

// batchStatement is the prepared read of batchSizes[i] keys.
func (s *Store) batchStatement(ctx context.Context, i int) (*sql.Stmt, error) {
	if st := s.batchRead[i].Load(); st != nil {
		return st, nil
	}
	s.batchMu.Lock()
	defer s.batchMu.Unlock()
	if st := s.batchRead[i].Load(); st != nil {
		return st, nil
	}
	if err := s.closed(); err != nil {
		return nil, err
	}
	st, err := s.db.PrepareContext(ctx, readIn(s.core.Table.Quoted, batchSizes[i]))
	if err != nil {
		return nil, s.core.Refused("prepare", dialect.StoreError("prepare", err))
	}
	s.batchRead[i].Store(st)
	return st, nil
}
