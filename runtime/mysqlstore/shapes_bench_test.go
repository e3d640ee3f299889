package mysqlstore_test

import (
	"crypto/rand"
	"database/sql"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/idemgen/idemgen/internal/cpumeter"
	"github.com/idemgen/idemgen/internal/mysqltest"
	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/internal/headerjson"
	"github.com/idemgen/idemgen/runtime/mysqlstore"
)

// BenchmarkStatementShapes measures what the server pays for the shapes of
// the store's statements against the ones they replaced, straight through
// database/sql (no engine, no HTTP) from 16 callers on two cores (-cpu 2),
// durable settings on, in rounds that alternate the variants
// (MYSQLSTORE_BENCH_ROUNDS). cpu-µs/op less self-µs/op is the server's.
//
//   - read/filter: the read of an answered key as it was, the expiry a
//     condition (WHERE key = ? AND expires_at > now);
//   - read/column: the store's read, the expiry a column;
//   - first/upsert-reexpire: a first request's statements as they were:
//     the read, START TRANSACTION, the claim as an INSERT ... ON DUPLICATE
//     KEY UPDATE, the handler's INSERT, a completion that sets a new
//     expiry, COMMIT;
//   - first/insert-reexpire, first/upsert-keep: one of the two changed;
//   - first/insert-keep: the store's (a plain INSERT, the claim's expiry
//     kept).
func BenchmarkStatementShapes(b *testing.B) {
	// READ COMMITTED for every session, as the store sets on the
	// connections it claims on (without a statement per transaction).
	cfg, err := mysql.ParseDSN(mysqltest.DSN(b))
	if err != nil {
		b.Fatal(err)
	}
	cfg.Params = map[string]string{"tx_isolation": "'READ-COMMITTED'"}
	db := mysqltest.DBOf(b, cfg.FormatDSN(), benchConns)
	db.SetMaxIdleConns(benchConns)
	s, table := mysqltest.Store(b, db)
	pay := payments(b, db)
	prep := preparer(b, db)
	sq := mysqlstore.StatementsOf(table)
	t := "`" + table + "`"
	read := prep(sq.Read)
	oldRead := prep("SELECT fingerprint, completed, TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(6), lease_until),\n" +
		"\tstatus, header, body, body_omitted\nFROM " + t + " WHERE `key` = ? AND expires_at > UTC_TIMESTAMP(6)")
	insert, upsert, keep := prep(sq.InsertTx), prep(sq.ClaimTx), prep(sq.Complete)
	reexpire := prep("UPDATE " + t + " SET completed = 1, lease_until = UTC_TIMESTAMP(6),\n" +
		"\texpires_at = UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND, status = ?, header = ?, body = ?, body_omitted = ?\n" +
		"WHERE `key` = ? AND token = ? AND (? = 0 OR fence = ?) AND NOT completed AND expires_at > UTC_TIMESTAMP(6)")
	insertPay := prep("INSERT INTO `" + pay + "` (`key`, fence) VALUES (?, ?)")

	const retention = int64(24 * time.Hour / time.Microsecond)
	header := headerjson.Encode(http.Header{"Content-Type": {"application/json"}})
	body := []byte(`{"id":12345,"status":"created"}`)
	for i := range replayKeys {
		key := fmt.Sprintf("answered-%d", i)
		if _, err := s.Acquire(b.Context(), idemstore.AcquireRequest{Key: key, Token: "t", Fingerprint: "fp", Lease: time.Minute}); err != nil {
			b.Fatal(err)
		}
		if err := s.Complete(b.Context(), key, "t", &idemstore.Record{Status: http.StatusCreated, Body: body}, time.Hour); err != nil {
			b.Fatal(err)
		}
	}
	readWith := func(st *sql.Stmt, cols int) func(b *testing.B, key string) error {
		return func(b *testing.B, key string) error {
			rows, err := st.QueryContext(b.Context(), key)
			if err != nil {
				return err
			}
			defer rows.Close()
			dest := make([]any, cols)
			for i := range dest {
				dest[i] = new(sql.RawBytes)
			}
			if !rows.Next() {
				return errors.New("no row")
			}
			return rows.Scan(dest...)
		}
	}
	first := func(claim *sql.Stmt, keepExpiry bool) func(b *testing.B, key string) error {
		return func(b *testing.B, key string) error {
			ctx := b.Context()
			if err := read.QueryRowContext(ctx, key).Scan(new(bool), new(string), new(bool), new(sql.NullInt64), new(sql.NullInt32), new([]byte), new([]byte), new(bool)); !errors.Is(err, sql.ErrNoRows) {
				return fmt.Errorf("read: %v", err)
			}
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				return err
			}
			defer func() { _ = tx.Rollback() }()
			token := rand.Text()
			res, err := tx.StmtContext(ctx, claim).ExecContext(ctx, key, "fp", token, int64(10_000_000), 10_000_000+retention)
			if err != nil {
				return err
			}
			fence, err := res.LastInsertId()
			if err != nil {
				return err
			}
			if _, err := tx.StmtContext(ctx, insertPay).ExecContext(ctx, key, fence); err != nil {
				return err
			}
			if keepExpiry {
				_, err = tx.StmtContext(ctx, keep).ExecContext(ctx, retention, retention, retention, http.StatusCreated, header, body, false, key, token, fence, fence)
			} else {
				_, err = tx.StmtContext(ctx, reexpire).ExecContext(ctx, retention, http.StatusCreated, header, body, false, key, token, fence, fence)
			}
			if err != nil {
				return err
			}
			return tx.Commit()
		}
	}
	variants := []struct {
		name string
		op   func(b *testing.B, key string) error
	}{
		{"read/filter", readWith(oldRead, 7)},
		{"read/column", readWith(read, 8)},
		{"first/upsert-reexpire", first(upsert, false)},
		{"first/insert-reexpire", first(insert, false)},
		{"first/upsert-keep", first(upsert, true)},
		{"first/insert-keep", first(insert, true)},
	}
	for round := range benchRounds() {
		for i := range variants {
			// Each round starts with the next variant (BenchmarkFloor).
			v := variants[(round+i)%len(variants)]
			prefix := rand.Text()[:8]
			var n atomic.Int64
			b.Run(v.name, func(b *testing.B) {
				cpu := cpumeter.Start()
				b.SetParallelism(8)
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						i := n.Add(1)
						key := fmt.Sprintf("%s-%d", prefix, i)
						if strings.HasPrefix(v.name, "read/") {
							key = fmt.Sprintf("answered-%d", i%replayKeys)
						}
						if err := v.op(b, key); err != nil {
							b.Errorf("%s %s: %v", v.name, key, err)
							return
						}
					}
				})
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
				cpu.Report(b)
			})
		}
	}
}
