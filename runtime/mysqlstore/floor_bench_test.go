package mysqlstore_test

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/idemgen/idemgen/internal/cpumeter"
	"github.com/idemgen/idemgen/internal/mysqltest"
	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/internal/headerjson"
	"github.com/idemgen/idemgen/runtime/mysqlstore"
)

// benchConns is the pool's size: above the parallel senders, so that
// none waits for a connection.
const benchConns = 40

// benchSenders is BenchmarkFloor's parallel senders per GOMAXPROCS (b.SetParallelism):
// 16 on two cores with -cpu 2, as PostgreSQL's floor benchmark
// (internal/storebench) sends.
const benchSenders = 8

// BenchmarkFloor compares mysqlstore with the least a one-transaction
// idempotency layer can do on the same server and handler, through the
// same HTTP server and client, from benchSenders parallel senders per CPU,
// every session READ COMMITTED, durable settings on (the server's
// innodb_flush_log_at_trx_commit = 1, which the store's Check insists on):
//
//   - floor-first: a read-only SELECT for a stored answer (none), then
//     START TRANSACTION, INSERT of the key's row, the handler's INSERT,
//     UPDATE of the key's row with the answer, COMMIT: one commit, six
//     round trips (MySQL has no pipelining through database/sql);
//   - contract-first: the same, plus what issue 45 and 49 require of any
//     layer besides: a SHA-256 fingerprint of the body stored and compared
//     (422), the answer's headers (encoded as the store encodes them),
//     an expiry that reads skip and a purge finds by an index, and a claim
//     that does not wait for another open claim's row lock (a duplicate
//     answered at once); no lease, no fence, no takeover, no token;
//   - fenced-first: the contract floor with what issue 49 asks of a claim
//     besides, fencing: a random token and a fence (the database's clock
//     in microseconds, through LAST_INSERT_ID) written with the claim, a
//     lease the read reports (a conflict's Retry-After), and a completion
//     that only the claim's token and fence can make; no takeover of a
//     lapsed claim, no engine;
//   - store-calls-first: mysqlstore's AcquireRun and Commit around the
//     handler, from a plain handler (storeCalls), without the engine;
//   - store-first: a new key through the engine on mysqlstore, its reads
//     through the read lanes (WithReadLanes' default);
//   - store-unbatched-first: the same, every read alone
//     (WithReadLanes(-1));
//   - floor-replay, contract-replay, fenced-replay: the floors' read-only
//     SELECT of a stored answer;
//   - store-calls-replay, store-replay, store-unbatched-replay: an
//     answered key again through AcquireRun or the engine.
//
// Replays cycle through replayKeys answered keys. Every statement is
// prepared once. MYSQLSTORE_BENCH_ROUNDS=3 runs the twelve in turn three
// times, so that their rounds interleave, each round's first requests and
// replays starting with the next variant.
func BenchmarkFloor(b *testing.B) {
	fv := newFloorVariants(b)
	run := func(name string, h http.Handler, replay bool) {
		srv := httptest.NewServer(h)
		defer srv.Close()
		client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
		prefix := rand.Text()[:8]
		if replay { // replayKeys stored answers, asked again in turn
			for i := range replayKeys {
				if st, body := post(b, client, srv.URL, fmt.Sprintf("%s-replayed-%d", prefix, i)); st != http.StatusCreated {
					b.Fatalf("%s: the answer to replay: %d %s", name, st, body)
				}
			}
		}
		var n atomic.Int64 // across the benchmark's runs: every first request a new key, every replay the next key
		b.Run(name, func(b *testing.B) {
			var failed atomic.Int64
			var failure atomic.Value
			cpu := cpumeter.Start()
			b.SetParallelism(benchSenders)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					i := n.Add(1)
					key := fmt.Sprintf("%s-%d", prefix, i)
					if replay {
						key = fmt.Sprintf("%s-replayed-%d", prefix, i%replayKeys)
					}
					if st, body := post(b, client, srv.URL, key); st != http.StatusCreated {
						failed.Add(1)
						failure.CompareAndSwap(nil, fmt.Sprintf("%d %s", st, body))
					}
				}
			})
			if f := failed.Load(); f > 0 {
				b.Fatalf("%s: %d requests not answered 201, the first %v", name, f, failure.Load())
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
			cpu.Report(b)
		})
	}
	variants := []floorVariant{{"floor", fv.floor}, {"contract", fv.contract}, {"fenced", fv.fenced}, {"store-calls", fv.calls}, {"store-unbatched", fv.unbatched}, {"store", fv.store}}
	for round := range benchRounds() {
		// Each round starts with another variant, so that none always
		// runs after the others' writes (the server's background flushing
		// and purge of them) nor always first.
		for _, replay := range []bool{false, true} {
			for i := range variants {
				v := variants[(round+i)%len(variants)]
				mode := "-first"
				if replay {
					mode = "-replay"
				}
				run(v.name+mode, v.h, replay)
			}
		}
	}
}

// floorVariant is one of BenchmarkFloor's handlers, named.
type floorVariant struct {
	name string
	h    http.Handler
}

// created answers the business handler's body: 201, JSON.
func created(w http.ResponseWriter, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	_, _ = w.Write(body)
}

// floorVariants are BenchmarkFloor's handlers, on one pool of benchConns
// connections: the floor, the contract floor, the fenced floor, the store's
// calls without the engine (calls), mysqlstore through the engine (its
// reads through the read lanes, or each alone: unbatched), and the store
// and the business handler they share.
// stmtTx is what the business handler needs of a transaction: the floors'
// *sql.Tx, or the store's run's (mysqlstore.Tx).
type stmtTx interface {
	StmtContext(ctx context.Context, stmt *sql.Stmt) *sql.Stmt
}

type floorVariants struct {
	floor, contract, fenced, calls, store, unbatched http.Handler
	s                                                *mysqlstore.Store
	// handler is the business handler of all: one INSERT in the run's
	// transaction, answered 201 with a small JSON body.
	handler func(w http.ResponseWriter, r *http.Request, tx stmtTx, key string) ([]byte, error)
}

func newFloorVariants(b *testing.B) *floorVariants {
	db := readCommittedDB(b, benchConns)
	db.SetMaxIdleConns(benchConns)
	s, _ := mysqltest.Store(b, db)
	pay := payments(b, db)
	prep := preparer(b, db)
	insertPay := prep("INSERT INTO `" + pay + "` (`key`, fence) VALUES (?, 1)")
	v := &floorVariants{s: s}
	v.handler = func(w http.ResponseWriter, r *http.Request, tx stmtTx, key string) ([]byte, error) {
		res, err := tx.StmtContext(r.Context(), insertPay).ExecContext(r.Context(), key)
		if err != nil {
			return nil, err
		}
		id, _ := res.LastInsertId()
		body := fmt.Appendf(nil, `{"id":%d,"status":"created"}`, id)
		return body, nil
	}
	v.floor = newFloor(b, db, prep, v.handler, plainFloor)
	v.contract = newFloor(b, db, prep, v.handler, contractFloor)
	v.fenced = newFloor(b, db, prep, v.handler, fencedFloor)
	storeHandler := func(w http.ResponseWriter, r *http.Request) {
		info, _ := idem.FromContext(r.Context())
		body, err := v.handler(w, r, mysqlstore.Tx(r.Context()), info.Key)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		created(w, body)
	}
	v.calls = v.storeCalls()
	v.store = serve(idem.NewEngine(s, idem.WithLogger(nil)), payOp, storeHandler)
	alone, _ := mysqltest.Store(b, db, mysqlstore.WithReadLanes(-1))
	v.unbatched = serve(idem.NewEngine(alone, idem.WithLogger(nil)), payOp, storeHandler)
	return v
}

// storeCalls is the store's calls without the engine: AcquireRun, the
// business handler in the run's transaction, Commit, from a plain handler
// that fingerprints the body as the contract floor does, bounds the calls
// by the engine's store timeout and answers a replay with the stored
// response (a mismatch 422, a conflict 409).
func (v *floorVariants) storeCalls() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		payload, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		sum := sha256.Sum256(payload)
		key := r.Header.Get("Idempotency-Key")
		ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), idem.DefaultStoreTimeout)
		defer cancel()
		acq, run, err := v.s.AcquireRun(ctx, idemstore.AcquireRequest{Key: payOp.ID + ":" + key, Token: rand.Text(), Fingerprint: hex.EncodeToString(sum[:]), Lease: payOp.Lock})
		switch {
		case err != nil:
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		case acq.Outcome == idemstore.OutcomeReplay:
			maps.Copy(w.Header(), acq.Record.Header)
			w.Header().Set(idem.HeaderReplayed, "true")
			w.WriteHeader(acq.Record.Status)
			_, _ = w.Write(acq.Record.Body)
			return
		case acq.Outcome == idemstore.OutcomeMismatch:
			w.WriteHeader(http.StatusUnprocessableEntity)
			return
		case run == nil:
			w.WriteHeader(http.StatusConflict)
			return
		}
		body, err := v.handler(w, r, mysqlstore.Tx(run.Context(r.Context())), key)
		if err != nil {
			_ = run.Rollback(ctx)
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		rec := &idemstore.Record{Status: http.StatusCreated, Header: http.Header{"Content-Type": {"application/json"}}, Body: body}
		if err := run.Commit(ctx, rec, idemstore.DefaultRetention); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		created(w, body)
	}
}

// readCommittedDB is a pool of conns connections whose sessions are READ
// COMMITTED from the start, for the floors' transactions as for the
// store's (which sets it on a connection it claims on, see AcquireRun):
// under the server's REPEATABLE READ default, the contract floor's claims
// that do not wait for a lock were refused now and then (ER_LOCK_WAIT_TIMEOUT
// between distinct keys, a few a second from 16 senders), and a floor
// that set the isolation per transaction would pay a round trip more.
func readCommittedDB(b *testing.B, conns int) *sql.DB {
	cfg, err := mysql.ParseDSN(mysqltest.DSN(b))
	if err != nil {
		b.Fatal(err)
	}
	probe := mysqltest.DBOf(b, cfg.FormatDSN(), 1)
	var version string
	if err := probe.QueryRowContext(b.Context(), "SELECT VERSION()").Scan(&version); err != nil {
		b.Fatal(err)
	}
	isolation := "transaction_isolation" // MySQL's name; MariaDB's before 11.1:
	if strings.Contains(version, "MariaDB") {
		isolation = "tx_isolation"
	}
	if cfg.Params == nil {
		cfg.Params = map[string]string{}
	}
	cfg.Params[isolation] = "'READ-COMMITTED'"
	return mysqltest.DBOf(b, cfg.FormatDSN(), conns)
}

// replayKeys is how many answered keys BenchmarkFloor's replays cycle
// through, so that concurrent replays are seldom of one key (a store may
// share such reads, a floor does not).
const replayKeys = 512

// floorKind tells newFloor's floors apart.
type floorKind int

const (
	plainFloor    floorKind = iota // the floor
	contractFloor                  // the contract floor
	fencedFloor                    // the contract floor with a fenced claim
)

// newFloor is BenchmarkFloor's floor of kind around handler, on a keys
// table of its own (floorStatements).
func newFloor(b *testing.B, db *sql.DB, prep func(string) *sql.Stmt, handler func(http.ResponseWriter, *http.Request, stmtTx, string) ([]byte, error), kind floorKind) http.HandlerFunc {
	contract, fenced := kind != plainFloor, kind == fencedFloor
	read, claim, answer := floorStatements(b, db, prep, kind)
	return func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		key := r.Header.Get("Idempotency-Key")
		var fp string
		if contract {
			payload, err := io.ReadAll(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			sum := sha256.Sum256(payload)
			fp = hex.EncodeToString(sum[:])
		}
		same := true
		var status sql.NullInt32
		var header, stored []byte
		var leftUS int64 // the fenced floor's lease left, for a conflict's Retry-After
		var err error
		switch kind {
		case plainFloor:
			err = read.QueryRowContext(ctx, key).Scan(&status, &stored)
		case contractFloor:
			err = read.QueryRowContext(ctx, fp, key).Scan(&same, &status, &header, &stored)
		case fencedFloor:
			err = read.QueryRowContext(ctx, fp, key).Scan(&same, &status, &header, &stored, &leftUS)
		}
		switch {
		case err == nil && !same:
			w.WriteHeader(http.StatusUnprocessableEntity)
			return
		case err == nil && status.Valid:
			if header != nil {
				h, err := headerjson.Decode(header)
				if err != nil {
					http.Error(w, err.Error(), http.StatusInternalServerError)
					return
				}
				maps.Copy(w.Header(), h)
			} else {
				w.Header().Set("Content-Type", "application/json")
			}
			w.WriteHeader(int(status.Int32))
			_, _ = w.Write(stored)
			return
		case err == nil:
			w.Header().Set("Retry-After", strconv.FormatInt(max(leftUS/1_000_000, 1), 10))
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
		var token string
		var fence int64
		var res sql.Result
		switch kind {
		case plainFloor:
			_, err = tx.StmtContext(ctx, claim).ExecContext(ctx, key)
		default:
			args := []any{key, fp}
			if fenced {
				token = rand.Text()
				args = append(args, token)
			}
			// A lock wait is a duplicate's open claim, answered at once.
			// InnoDB has also reported one between distinct keys (under
			// REPEATABLE READ, see readCommittedDB): try once more, without
			// waiting either time, rather than fail the round.
			for try := 0; try < 2; try++ {
				if res, err = tx.StmtContext(ctx, claim).ExecContext(ctx, args...); !isLockWait(err) {
					break
				}
			}
			if err == nil && fenced {
				fence, err = res.LastInsertId()
			}
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusConflict)
			return
		}
		body, err := handler(w, r, tx, key)
		if err == nil {
			switch kind {
			case plainFloor:
				_, err = tx.StmtContext(ctx, answer).ExecContext(ctx, http.StatusCreated, body, key)
			case contractFloor:
				_, err = tx.StmtContext(ctx, answer).ExecContext(ctx, http.StatusCreated, body, headerjson.Encode(http.Header{"Content-Type": {"application/json"}}), key)
			case fencedFloor:
				if res, err = tx.StmtContext(ctx, answer).ExecContext(ctx, http.StatusCreated, body, headerjson.Encode(http.Header{"Content-Type": {"application/json"}}), key, token, fence); err == nil {
					if n, _ := res.RowsAffected(); n != 1 {
						err = fmt.Errorf("the claim of %s (fence %d) is not this run's", key, fence)
					}
				}
			}
		}
		if err == nil {
			err = tx.Commit()
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		created(w, body)
	}
}

// floorSQL are the floors' keys table and statements, $T for the table:
// the read of a key's stored answer, the claim, and the completion's
// UPDATE (the answer).
var floorSQL = map[floorKind]struct{ table, read, claim, answer string }{
	plainFloor: {
		table:  "k VARBINARY(255) PRIMARY KEY, status INT NULL, body BLOB NULL",
		read:   "SELECT status, body FROM $T WHERE k = ?",
		claim:  "INSERT INTO $T (k) VALUES (?)",
		answer: "UPDATE $T SET status = ?, body = ? WHERE k = ?",
	},
	contractFloor: {
		table:  "k VARBINARY(255) PRIMARY KEY, fingerprint VARBINARY(128) NOT NULL, expires_at DATETIME(6) NOT NULL, status INT NULL, header BLOB NULL, body BLOB NULL, KEY (expires_at)",
		read:   "SELECT fingerprint = ?, status, header, body FROM $T WHERE k = ? AND expires_at > UTC_TIMESTAMP(6)",
		claim:  "SET STATEMENT innodb_lock_wait_timeout = 0 FOR INSERT INTO $T (k, fingerprint, expires_at) VALUES (?, ?, UTC_TIMESTAMP(6) + INTERVAL 1 DAY)",
		answer: "UPDATE $T SET status = ?, body = ?, header = ? WHERE k = ?",
	},
	fencedFloor: {
		table: "k VARBINARY(255) PRIMARY KEY, fingerprint VARBINARY(128) NOT NULL, token VARBINARY(128) NOT NULL, fence BIGINT NOT NULL, " +
			"lease_until DATETIME(6) NOT NULL, expires_at DATETIME(6) NOT NULL, status INT NULL, header BLOB NULL, body BLOB NULL, KEY (expires_at)",
		read: "SELECT fingerprint = ?, status, header, body, TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(6), lease_until) FROM $T WHERE k = ? AND expires_at > UTC_TIMESTAMP(6)",
		claim: "SET STATEMENT innodb_lock_wait_timeout = 0 FOR INSERT INTO $T (k, fingerprint, token, fence, lease_until, expires_at) " +
			"VALUES (?, ?, ?, LAST_INSERT_ID(TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6))), UTC_TIMESTAMP(6) + INTERVAL 10 SECOND, UTC_TIMESTAMP(6) + INTERVAL 1 DAY)",
		answer: "UPDATE $T SET status = ?, body = ?, header = ? WHERE k = ? AND token = ? AND fence = ?",
	},
}

// floorStatements creates a keys table of its own for a floor of kind and
// prepares the floor's statements on it (floorSQL).
func floorStatements(b *testing.B, db *sql.DB, prep func(string) *sql.Stmt, kind floorKind) (read, claim, answer *sql.Stmt) {
	q := floorSQL[kind]
	keys := mysqltest.Name(b) + "_keys"
	mysqltest.Exec(b, db, "CREATE TABLE `"+keys+"` ("+q.table+") ENGINE=InnoDB")
	b.Cleanup(func() { mysqltest.Drop(b, db, keys) })
	on := func(stmt string) *sql.Stmt { return prep(strings.ReplaceAll(stmt, "$T", "`"+keys+"`")) }
	return on(q.read), on(q.claim), on(q.answer)
}

// benchRounds is how many times BenchmarkFloor and BenchmarkReplayReads
// run their variants in turn: MYSQLSTORE_BENCH_ROUNDS, default 1. (go
// test's -count runs each variant that many times in a row, not in turn.)
func benchRounds() int {
	n, err := strconv.Atoi(os.Getenv("MYSQLSTORE_BENCH_ROUNDS"))
	if err != nil || n < 1 {
		return 1
	}
	return n
}

// BenchmarkReplayReads replays answered keys straight through AcquireRun,
// from 16 parallel callers on two cores, its reads through the read lanes
// (lanes) or each alone (alone), in rounds that alternate the two: what
// the lanes save where the database, not HTTP, bounds the rate.
// MYSQLSTORE_BENCH_ROUNDS sets the rounds.
func BenchmarkReplayReads(b *testing.B) {
	db := mysqltest.DB(b, benchConns)
	db.SetMaxIdleConns(benchConns)
	stores := map[string]*mysqlstore.Store{}
	for name, n := range map[string]int{"lanes": 0, "alone": -1} {
		s, _ := mysqltest.Store(b, db, mysqlstore.WithReadLanes(n))
		for i := range replayKeys {
			key := fmt.Sprintf("k%d", i)
			if _, err := s.Acquire(b.Context(), idemstore.AcquireRequest{Key: key, Token: "t", Fingerprint: "fp", Lease: time.Minute}); err != nil {
				b.Fatal(err)
			}
			if err := s.Complete(b.Context(), key, "t", &idemstore.Record{Status: http.StatusCreated, Body: []byte(`{"id":1}`)}, time.Hour); err != nil {
				b.Fatal(err)
			}
		}
		stores[name] = s
	}
	for range benchRounds() {
		for _, name := range []string{"alone", "lanes"} {
			s := stores[name]
			b.Run(name, func(b *testing.B) {
				var n atomic.Int64
				cpu := cpumeter.Start()
				b.SetParallelism(8)
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						key := fmt.Sprintf("k%d", n.Add(1)%replayKeys)
						acq, _, err := s.AcquireRun(b.Context(), idemstore.AcquireRequest{Key: key, Token: "x", Fingerprint: "fp", Lease: time.Minute})
						if err != nil || acq.Outcome != idemstore.OutcomeReplay {
							b.Errorf("%s: %+v, %v; want a replay", key, acq, err)
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

// BenchmarkProcessCPU sends BenchmarkFloor's first requests one at a time,
// the variants interleaved request by request (each request the next
// variant first), so that the host's noise falls on all of them alike, and
// reports for each the median of this process's CPU time per request
// (getrusage: the HTTP client and server, the engine, the store,
// database/sql and the driver; not the database server's), NAME-self-µs,
// and the goroutines started per request, NAME-goroutines (0 before Go
// 1.26, whose runtime does not count them). store-calls is the store's
// calls without the engine (storeCalls).
func BenchmarkProcessCPU(b *testing.B) {
	fv := newFloorVariants(b)
	variants := []floorVariant{{"floor", fv.floor}, {"contract", fv.contract}, {"store", fv.store}, {"store-calls", fv.calls}}
	urls := make([]string, len(variants))
	for i, v := range variants {
		srv := httptest.NewServer(v.h)
		b.Cleanup(srv.Close)
		urls[i] = srv.URL
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	prefix := rand.Text()[:8]
	for i := range variants { // each variant's statements prepared on the connections first
		for w := range 20 {
			if st, body := post(b, client, urls[i], fmt.Sprintf("%s-warm-%d-%d", prefix, i, w)); st != http.StatusCreated {
				b.Fatalf("%s: %d %s", variants[i].name, st, body)
			}
		}
	}
	spent := make([][]float64, len(variants))
	started := make([]uint64, len(variants))
	for i := 0; b.Loop(); i++ {
		for j := range variants {
			k := (i + j) % len(variants)
			goroutines, cpu := goroutinesStarted(), cpumeter.Self()
			if st, body := post(b, client, urls[k], fmt.Sprintf("%s-%d-%d", prefix, k, i)); st != http.StatusCreated {
				b.Fatalf("%s: %d %s", variants[k].name, st, body)
			}
			spent[k] = append(spent[k], float64(cpumeter.Self()-cpu)/float64(time.Microsecond))
			started[k] += goroutinesStarted() - goroutines
		}
	}
	for k, v := range variants {
		b.ReportMetric(median(spent[k]), v.name+"-self-µs")
		b.ReportMetric(float64(started[k])/float64(len(spent[k])), v.name+"-goroutines")
	}
}

// goroutinesStarted is how many goroutines this process has started, or 0
// where the runtime does not count them (before Go 1.26).
func goroutinesStarted() uint64 {
	s := []metrics.Sample{{Name: "/sched/goroutines-created:goroutines"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}

// isLockWait reports InnoDB's lock wait timeout (1205).
func isLockWait(err error) bool {
	var me *mysql.MySQLError
	return errors.As(err, &me) && me.Number == 1205
}
