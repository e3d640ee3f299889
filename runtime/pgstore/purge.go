package pgstore

import (
	"context"
	"log/slog"
	"time"
)

// Purge deletes the records that have expired (a completed record past its
// retention, an in-progress one past its lease and abandoned TTL), in
// statements of at most the purge batch each, until none is left or ctx
// ends; it returns how many it deleted. An expired record counts for
// nothing even before it is purged: Purge only frees the space. It is safe
// to run from every instance at once: each batch skips the rows another
// transaction holds (FOR UPDATE SKIP LOCKED).
//
// The store runs it in the background every purge interval
// (WithPurgeInterval) from its first acquire until Close.
func (s *Store) Purge(ctx context.Context) (int64, error) {
	if s.tableErr != nil {
		return 0, s.tableErr
	}
	var total int64
	for {
		tag, err := s.pool.Exec(ctx, s.sql.purge, s.purgeBatch)
		if err != nil {
			return total, storeError("purge", err)
		}
		total += tag.RowsAffected()
		if tag.RowsAffected() < int64(s.purgeBatch) {
			steps, err := s.purgeSteps(ctx) // steps.go
			return total + steps, err
		}
	}
}

// startPurge starts the background purge, unless it is off.
func (s *Store) startPurge() {
	if s.purgeEvery < 0 {
		return
	}
	s.purging.Add(1)
	go func() {
		defer s.purging.Done()
		t := time.NewTicker(s.purgeEvery)
		defer t.Stop()
		for {
			select {
			case <-s.stop:
				return
			case <-t.C:
			}
			ctx, cancel := context.WithTimeout(context.Background(), s.purgeEvery)
			go func() { // Close cuts a purge short
				select {
				case <-s.stop:
					cancel()
				case <-ctx.Done():
				}
			}()
			if _, err := s.Purge(ctx); err != nil && ctx.Err() == nil {
				slog.Warn("pgstore: purge of expired records failed; it runs again in "+s.purgeEvery.String(), slog.Any("err", err))
			}
			cancel()
		}
	}()
}
