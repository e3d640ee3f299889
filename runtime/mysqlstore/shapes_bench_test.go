package mysqlstore_test

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strconv"
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
	insert, upsert, keep := prep(sq.InsertTx), prep(sq.ClaimTx), prep(sq.CompleteTx)
	reexpire := prep("UPDATE " + t + " SET completed = 1, lease_until = UTC_TIMESTAMP(6),\n" +
		"\texpires_at = UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND, status = ?, header = ?, body = ?, body_omitted = ?\n" +
		"WHERE `key` = ? AND token = ? AND (? = 0 OR fence = ?) AND NOT completed")
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
			return storeFirst(b.Context(), db, read, claim, insertPay, key, "fp", func(tx *sql.Tx, token string, fence int64) (sql.Result, error) {
				if keepExpiry {
					return tx.StmtContext(b.Context(), keep).ExecContext(b.Context(), retention, retention, retention, http.StatusCreated, header, body, false, key, token, fence, fence)
				}
				return tx.StmtContext(b.Context(), reexpire).ExecContext(b.Context(), retention, http.StatusCreated, header, body, false, key, token, fence, fence)
			})
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

// BenchmarkServerThread measures what MariaDB's thread for one connection
// spends on a first request's statements (the read, START TRANSACTION, the
// claim, the handler's INSERT, the completion, COMMIT), the variants
// interleaved request by request on that one connection, so that the
// host's noise falls on all of them alike. server-µs is the median over
// b.N first requests of each variant of the CPU time the thread was
// charged (/proc/TID/schedstat; the server must run on this machine, and
// be MariaDB, which reports its threads' TID). READ COMMITTED sessions, as
// the store's.
//
//   - contract: BenchmarkFloor's contract floor's statements, on a table
//     of its own;
//   - store: the store's statements;
//   - expiry-condition: the store's, the completion's WHERE also asking
//     expires_at > now, as it did (complete's, which Store.Complete still
//     sends).
func BenchmarkServerThread(b *testing.B) {
	db := readCommittedDB(b, 1)
	var tid int64
	if err := db.QueryRowContext(b.Context(), "SELECT TID FROM information_schema.PROCESSLIST WHERE ID = CONNECTION_ID()").Scan(&tid); err != nil {
		b.Skipf("the connection's thread: %v (MariaDB 10.5 or later tells it)", err)
	}
	schedstat := fmt.Sprintf("/proc/%d/schedstat", tid)
	threadCPU := func() int64 {
		data, err := os.ReadFile(schedstat)
		if err != nil {
			b.Fatal(err)
		}
		ns, err := strconv.ParseInt(strings.Fields(string(data))[0], 10, 64)
		if err != nil {
			b.Fatal(err)
		}
		return ns
	}
	if _, err := os.Stat(schedstat); err != nil {
		b.Skipf("the server's thread %d is not on this machine: %v", tid, err)
	}
	_, table := mysqltest.Store(b, db)
	pay := payments(b, db)
	prep := preparer(b, db)
	sq := mysqlstore.StatementsOf(table)
	insertPay := prep("INSERT INTO `" + pay + "` (`key`, fence) VALUES (?, ?)")
	read := prep(sq.Read)
	insert, complete := prep(sq.InsertTx), prep(sq.CompleteTx)
	expiryCondition := prep(sq.Complete)
	cread, cclaim, canswer := floorStatements(b, db, prep, contractFloor)

	const retention = int64(24 * time.Hour / time.Microsecond)
	header := headerjson.Encode(http.Header{"Content-Type": {"application/json"}})
	body := []byte(`{"id":12345,"status":"created"}`)
	sum := sha256.Sum256(body)
	fp := hex.EncodeToString(sum[:])
	inTx := func(ctx context.Context, stmts func(tx *sql.Tx) error) error {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer func() { _ = tx.Rollback() }()
		if err := stmts(tx); err != nil {
			return err
		}
		return tx.Commit()
	}
	store := func(claim, completion *sql.Stmt) func(ctx context.Context, key string) error {
		return func(ctx context.Context, key string) error {
			return storeFirst(ctx, db, read, claim, insertPay, key, fp, func(tx *sql.Tx, token string, fence int64) (sql.Result, error) {
				return tx.StmtContext(ctx, completion).ExecContext(ctx, retention, retention, retention, http.StatusCreated, header, body, false, key, token, fence, fence)
			})
		}
	}
	contract := func(ctx context.Context, key string) error {
		if err := cread.QueryRowContext(ctx, fp, key).Scan(new(bool), new(sql.NullInt32), new([]byte), new([]byte)); !errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("read: %v", err)
		}
		return inTx(ctx, func(tx *sql.Tx) error {
			if _, err := tx.StmtContext(ctx, cclaim).ExecContext(ctx, key, fp); err != nil {
				return err
			}
			if _, err := tx.StmtContext(ctx, insertPay).ExecContext(ctx, key, 1); err != nil {
				return err
			}
			_, err := tx.StmtContext(ctx, canswer).ExecContext(ctx, http.StatusCreated, body, header, key)
			return err
		})
	}
	variants := []struct {
		name string
		op   func(ctx context.Context, key string) error
	}{
		{"contract", contract},
		{"store", store(insert, complete)},
		{"expiry-condition", store(insert, expiryCondition)},
	}
	prefix := rand.Text()[:8]
	for i, v := range variants { // each statement prepared on the connection first
		if err := v.op(b.Context(), fmt.Sprintf("%s-warm-%d", prefix, i)); err != nil {
			b.Fatalf("%s: %v", v.name, err)
		}
	}
	spent := make([][]float64, len(variants))
	for i := 0; b.Loop(); i++ {
		for j := range variants {
			k := (i + j) % len(variants) // each request, the next variant first
			before := threadCPU()
			if err := variants[k].op(b.Context(), fmt.Sprintf("%s-%d-%d", prefix, k, i)); err != nil {
				b.Fatalf("%s: %v", variants[k].name, err)
			}
			spent[k] = append(spent[k], float64(threadCPU()-before)/1e3)
		}
	}
	for k, v := range variants {
		b.ReportMetric(median(spent[k]), v.name+"-server-µs")
	}
}

// median is the median of xs, which it sorts.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	slices.Sort(xs)
	return xs[len(xs)/2]
}

// storeFirst sends a first request's statements as the store does, on db:
// the read (which must find no row), START TRANSACTION, the claim (a
// lease of 10 s and a day's abandoned TTL), the handler's INSERT
// (insertPay: key, fence), the completion complete sends with the claim's
// token and fence (which must change the row), and COMMIT.
func storeFirst(ctx context.Context, db *sql.DB, read, claim, insertPay *sql.Stmt, key, fingerprint string, complete func(tx *sql.Tx, token string, fence int64) (sql.Result, error)) error {
	const lease, abandoned = int64(10 * time.Second / time.Microsecond), int64(24 * time.Hour / time.Microsecond)
	if err := read.QueryRowContext(ctx, key).Scan(new(bool), new(string), new(bool), new(sql.NullInt64), new(sql.NullInt32), new([]byte), new([]byte), new(bool)); !errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("read: %v", err)
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	token := rand.Text()
	res, err := tx.StmtContext(ctx, claim).ExecContext(ctx, key, fingerprint, token, lease, lease+abandoned)
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
	if res, err = complete(tx, token, fence); err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		return fmt.Errorf("the completion changed %d rows (%v), want 1", n, err)
	}
	return tx.Commit()
}
