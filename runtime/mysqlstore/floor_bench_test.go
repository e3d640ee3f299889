package mysqlstore_test

import (
	"crypto/rand"
	"database/sql"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/idemgen/idemgen/internal/mysqltest"
	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/mysqlstore"
)

// benchConns is the pool's size: above the parallel senders (16 on two
// cores with -cpu 2: RunParallel's 8 per CPU), so that none waits for a
// connection.
const benchConns = 40

// BenchmarkFloor compares mysqlstore with the least a one-transaction
// idempotency layer can do on the same server and handler, through the
// same HTTP server and client, durable settings on (the server's
// innodb_flush_log_at_trx_commit = 1, which the store's Check insists on):
//
//   - floor-first: a read-only SELECT for a stored answer (none), then
//     START TRANSACTION, INSERT of the key's row, the handler's INSERT,
//     UPDATE of the key's row with the answer, COMMIT: one commit, six
//     round trips (MySQL has no pipelining through database/sql);
//   - store-first: a new key through the engine on mysqlstore;
//   - floor-replay: the floor's read-only SELECT of a stored answer;
//   - store-replay: the same key again through the engine.
//
// Every statement of both is prepared once. MYSQLSTORE_BENCH_ROUNDS=3 runs
// the four in turn three times, so that their rounds interleave.
func BenchmarkFloor(b *testing.B) {
	db := mysqltest.DB(b, benchConns)
	db.SetMaxIdleConns(benchConns)
	s, _ := mysqltest.Store(b, db)
	pay := payments(b, db)
	keys := mysqltest.Name(b) + "_keys"
	mysqltest.Exec(b, db, "CREATE TABLE `"+keys+"` (k VARBINARY(255) PRIMARY KEY, status INT NULL, body BLOB NULL) ENGINE=InnoDB")
	b.Cleanup(func() { mysqltest.Drop(b, db, keys) })
	prep := func(q string) *sql.Stmt {
		st, err := db.Prepare(q)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = st.Close() })
		return st
	}
	var (
		insertPay = prep("INSERT INTO `" + pay + "` (`key`, fence) VALUES (?, 1)")
		read      = prep("SELECT status, body FROM `" + keys + "` WHERE k = ?")
		claim     = prep("INSERT INTO `" + keys + "` (k) VALUES (?)")
		answer    = prep("UPDATE `" + keys + "` SET status = ?, body = ? WHERE k = ?")
	)
	// handler is the business handler of both: one INSERT in the run's
	// transaction, answered 201 with a small JSON body.
	handler := func(w http.ResponseWriter, r *http.Request, tx *sql.Tx, key string) ([]byte, error) {
		res, err := tx.StmtContext(r.Context(), insertPay).ExecContext(r.Context(), key)
		if err != nil {
			return nil, err
		}
		id, _ := res.LastInsertId()
		body := fmt.Appendf(nil, `{"id":%d,"status":"created"}`, id)
		return body, nil
	}
	floor := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		key := r.Header.Get("Idempotency-Key")
		var status sql.NullInt32
		var stored []byte
		switch err := read.QueryRowContext(ctx, key).Scan(&status, &stored); {
		case err == nil && status.Valid:
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(int(status.Int32))
			_, _ = w.Write(stored)
			return
		case err == nil:
			w.WriteHeader(http.StatusConflict)
			return
		case !errors.Is(err, sql.ErrNoRows):
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		defer func() { _ = tx.Rollback() }()
		if _, err := tx.StmtContext(ctx, claim).ExecContext(ctx, key); err != nil {
			http.Error(w, err.Error(), http.StatusConflict)
			return
		}
		body, err := handler(w, r, tx, key)
		if err == nil {
			_, err = tx.StmtContext(ctx, answer).ExecContext(ctx, http.StatusCreated, body, key)
		}
		if err == nil {
			err = tx.Commit()
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write(body)
	})
	store := serve(idem.NewEngine(s, idem.WithLogger(nil)), payOp, func(w http.ResponseWriter, r *http.Request) {
		info, _ := idem.FromContext(r.Context())
		body, err := handler(w, r, mysqlstore.Tx(r.Context()), info.Key)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write(body)
	})
	run := func(name string, h http.Handler, replay bool) {
		srv := httptest.NewServer(h)
		defer srv.Close()
		client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
		prefix := rand.Text()[:8]
		if replay { // one stored answer, asked again
			if st, body := post(b, client, srv.URL, prefix+"-replayed"); st != http.StatusCreated {
				b.Fatalf("%s: the answer to replay: %d %s", name, st, body)
			}
		}
		var n atomic.Int64 // across the benchmark's runs: every first request a new key
		b.Run(name, func(b *testing.B) {
			var failed atomic.Int64
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					key := prefix + "-replayed"
					if !replay {
						key = fmt.Sprintf("%s-%d", prefix, n.Add(1))
					}
					if st, _ := post(b, client, srv.URL, key); st != http.StatusCreated {
						failed.Add(1)
					}
				}
			})
			if f := failed.Load(); f > 0 {
				b.Fatalf("%s: %d requests not answered 201", name, f)
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
		})
	}
	for range benchRounds() {
		run("floor-first", floor, false)
		run("store-first", store, false)
		run("floor-replay", floor, true)
		run("store-replay", store, true)
	}
}

// benchRounds is how many times BenchmarkFloor runs its four variants in
// turn: MYSQLSTORE_BENCH_ROUNDS, default 1. (go test's -count runs each
// variant that many times in a row, not in turn.)
func benchRounds() int {
	n, err := strconv.Atoi(os.Getenv("MYSQLSTORE_BENCH_ROUNDS"))
	if err != nil || n < 1 {
		return 1
	}
	return n
}
