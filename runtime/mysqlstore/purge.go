package mysqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
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
	if s.tableErr != nil {
		return 0, s.tableErr
	}
	var total int64
	for _, q := range [][2]string{{s.sql.purgeSelect, s.sql.purgeDelete}, {s.steps.purgeSelect, s.steps.purgeDelete}} {
		for {
			n, err := s.purgeBatchOf(ctx, q[0], q[1])
			if err != nil {
				if me := (*mysql.MySQLError)(nil); q[0] == s.steps.purgeSelect && errors.As(err, &me) && me.Number == errNoSuchTable {
					break // no journal: a store set up before it existed
				}
				return total, storeError("purge", err)
			}
			total += n
			if n < int64(s.purgeBatch) {
				break
			}
		}
	}
	return total, nil
}

// purgeBatchOf deletes one batch: the rows sel locks (their primary keys),
// deleted by del, in one READ COMMITTED transaction (no gap locks).
func (s *Store) purgeBatchOf(ctx context.Context, sel, del string) (int64, error) {
	tx, err := s.db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelReadCommitted})
	if err != nil {
		return 0, err
	}
	defer func() { _ = tx.Rollback() }()
	rows, err := tx.QueryContext(ctx, sel, s.purgeBatch)
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
	n, err := res.RowsAffected()
	if err != nil {
		return 0, err
	}
	return n, tx.Commit()
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
				slog.Warn("mysqlstore: purge of expired records failed; it runs again in "+s.purgeEvery.String(), slog.Any("err", err))
			}
			cancel()
		}
	}()
}
