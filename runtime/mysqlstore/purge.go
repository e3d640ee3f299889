package mysqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
)

// Purge deletes the records that have expired (a completed record past its
// retention, an in-progress one past its lease and abandoned TTL), and the
// step journal's expired entries, in transactions of at most the purge
// batch each, until none is left or ctx ends; it returns how many it
// deleted. An expired record counts for nothing even before it is purged:
// Purge only frees the space. It is safe to run from every instance at
// once: each batch locks the rows it deletes and skips the rows another
// transaction holds (FOR UPDATE SKIP LOCKED, MySQL 8 and MariaDB 10.6 on).
//
// The store runs it in the background every purge interval
// (WithPurgeInterval) from its first acquire until Close.
func (s *Store) Purge(ctx context.Context) (int64, error) {
	return s.core.Purge(ctx)
}

// PurgeRecords deletes one batch of at most n expired records.
func (o *ops) PurgeRecords(ctx context.Context, n int) (int64, error) {
	return o.purgeBatchOf(ctx, o.sql.purgeSelect, o.sql.purgeDelete, n)
}

// PurgeSteps deletes one batch of at most n expired journal entries.
func (o *ops) PurgeSteps(ctx context.Context, n int) (int64, error) {
	return o.purgeBatchOf(ctx, o.steps.purgeSelect, o.steps.purgeDelete, n)
}

// purgeBatchOf deletes one batch: the rows (at most n) sel locks (their
// primary keys), deleted by del, in one READ COMMITTED transaction (no gap
// locks).
func (o *ops) purgeBatchOf(ctx context.Context, sel, del string, n int) (int64, error) {
	tx, err := o.db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelReadCommitted})
	if err != nil {
		return 0, err
	}
	defer func() { _ = tx.Rollback() }()
	rows, err := tx.QueryContext(ctx, sel, n)
	if err != nil {
		return 0, err
	}
	var args []any
	var marks []string
	for rows.Next() {
		cols, _ := rows.Columns()
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			rows.Close()
			return 0, err
		}
		args = append(args, vals...)
		marks = append(marks, "("+strings.TrimSuffix(strings.Repeat("?, ", len(cols)), ", ")+")")
	}
	if err := rows.Close(); err != nil {
		return 0, err
	}
	if len(args) == 0 {
		return 0, nil
	}
	res, err := tx.ExecContext(ctx, fmt.Sprintf(del, strings.Join(marks, ", ")), args...)
	if err != nil {
		return 0, err
	}
	deleted, err := res.RowsAffected()
	if err != nil {
		return 0, err
	}
	return deleted, tx.Commit()
}
