package pgstore

import "context"

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
	return s.core.Purge(ctx)
}

// PurgeRecords deletes one batch of at most n expired records.
func (o *ops) PurgeRecords(ctx context.Context, n int) (int64, error) {
	tag, err := o.pool.Exec(ctx, o.sql.purge, n)
	return tag.RowsAffected(), err
}

// PurgeSteps deletes one batch of at most n expired journal entries.
func (o *ops) PurgeSteps(ctx context.Context, n int) (int64, error) {
	tag, err := o.pool.Exec(ctx, o.steps.purge, n)
	return tag.RowsAffected(), err
}
