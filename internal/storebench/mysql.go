package storebench

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
	"strings"
	"testing"

	"github.com/go-sql-driver/mysql"

	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/mysqlstore"
	"github.com/idemgen/idemgen/runtime/mysqlstore/mysqltest"
)

// MySQL is the harness on MySQL or MariaDB: the server's pool and the
// payments table the handler writes.
type MySQL struct {
	DB       *sql.DB
	Payments string // table name, unquoted
	insert   string // the handler's INSERT
}

// NewMySQL sets the harness up on MYSQL_DSN's server: a pool of PoolSize
// connections whose sessions are READ COMMITTED from the start, for the
// floors' transactions as for the store's (which sets it on a connection
// it claims on): under the server's REPEATABLE READ default, the contract
// floor's claims that do not wait for a lock were refused now and then
// between distinct keys, and a floor that set the isolation per
// transaction would pay a round trip more. The pool interpolates the
// arguments of a statement it has not prepared (interpolateParams), so
// that the handler's INSERT is one round trip, as pgx's is.
func NewMySQL(b *testing.B) *MySQL {
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
	cfg.InterpolateParams = true
	db := mysqltest.DBOf(b, cfg.FormatDSN(), PoolSize)
	db.SetMaxIdleConns(PoolSize)
	table := mysqltest.Name(b) + "_pay"
	mysqltest.Exec(b, db, "CREATE TABLE `"+table+"` (id BIGINT AUTO_INCREMENT PRIMARY KEY, amount INT NOT NULL) ENGINE=InnoDB")
	b.Cleanup(func() { mysqltest.Drop(b, db, table) })
	return &MySQL{DB: db, Payments: table, insert: "INSERT INTO `" + table + "` (amount) VALUES (?)"}
}

// Server is the harness's server for Run: its durability settings. The
// server's counters are global, shared with other clients, so it has no
// meter.
func (m *MySQL) Server(b *testing.B) Server {
	var version, flush, doublewrite string
	if err := m.DB.QueryRowContext(b.Context(), "SELECT VERSION(), @@innodb_flush_log_at_trx_commit, @@innodb_doublewrite").Scan(&version, &flush, &doublewrite); err != nil {
		b.Fatal(err)
	}
	return Server{Name: version, Settings: "innodb_flush_log_at_trx_commit=" + flush + ", innodb_doublewrite=" + doublewrite}
}

// Variants are the harness's variants on MySQL, the floor first, as
// PostgreSQL's (Postgres.Variants):
//
//   - floor: the one-transaction floor (newFloor);
//   - contract-floor: the same, plus what any layer must do besides (a
//     fingerprint, headers, an indexed expiry, a claim that does not wait
//     for another open claim's row lock);
//   - store-calls: mysqlstore's AcquireRun and Commit, without the engine;
//   - store-unbatched: the handler under mysqlstore through the engine,
//     every read alone (WithReadLanes(-1));
//   - store: the same with the read lanes, mysqlstore's default.
//
// Every statement of the floors is prepared once, as the store's are.
func (m *MySQL) Variants(b *testing.B) []Variant {
	s, _ := mysqltest.Store(b, m.DB)
	alone, _ := mysqltest.Store(b, m.DB, mysqlstore.WithReadLanes(-1))
	return []Variant{
		{"floor", m.newFloor(b, false)},
		{"contract-floor", m.newFloor(b, true)},
		{"store-calls", m.storeCalls(s)},
		{"store-unbatched", m.engineServe(alone)},
		{"store", m.engineServe(s)},
	}
}

// execer is what the handler's INSERT goes through: the run's transaction
// (mysqlstore.Tx) or a floor's.
type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// insertPayment is the business handler's statement through q: one payment
// row, its id returned.
func (m *MySQL) insertPayment(ctx context.Context, q execer) (int64, error) {
	res, err := q.ExecContext(ctx, m.insert, 5)
	if err != nil {
		return 0, err
	}
	return res.LastInsertId()
}

// handler is the business handler under mysqlstore: one INSERT of a
// payment in the run's transaction, answered 201 with Answer.
func (m *MySQL) handler(w http.ResponseWriter, r *http.Request) {
	id, err := m.insertPayment(r.Context(), mysqlstore.Tx(r.Context()))
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	created(w, Answer(id))
}

// engineServe is the handler under s through the engine.
func (m *MySQL) engineServe(s *mysqlstore.Store) http.HandlerFunc {
	e := idem.NewEngine(s)
	return func(w http.ResponseWriter, r *http.Request) { e.Serve(w, r, Op, m.handler) }
}

// storeCalls is mysqlstore called without the engine: AcquireRun with the
// body's SHA-256 as the fingerprint, the handler's INSERT in the run's
// transaction and Commit with the answer, or the stored answer written
// back (a mismatch 422, a conflict 409). Between the contract floor and
// the store through the engine, it tells the store's cost from the
// engine's.
func (m *MySQL) storeCalls(s *mysqlstore.Store) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ctx := context.Background()
		payload, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		sum := sha256.Sum256(payload)
		acq, run, err := s.AcquireRun(ctx, idemstore.AcquireRequest{
			Key: r.Header.Get("Idempotency-Key"), Fingerprint: hex.EncodeToString(sum[:]),
			Token: rand.Text(), Lease: idemstore.DefaultLease,
		})
		switch {
		case err != nil:
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		case acq.Outcome == idemstore.OutcomeReplay:
			maps.Copy(w.Header(), acq.Record.Header)
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
		rctx := run.Context(ctx)
		id, err := m.insertPayment(rctx, mysqlstore.Tx(rctx))
		if err != nil {
			_ = run.Rollback(ctx)
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		rec := &idemstore.Record{Status: http.StatusCreated, Header: http.Header{"Content-Type": {"application/json"}}, Body: Answer(id)}
		if err := run.Commit(ctx, rec, idemstore.DefaultRetention); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		created(w, rec.Body)
	}
}

// floorSQL are the floors' keys table and statements, $T for the table:
// the read of a key's stored answer, the claim, and the completion's
// UPDATE (the answer); the plain floor's first, the contract floor's
// second.
var floorSQL = [2]struct{ table, read, claim, answer string }{{
	table:  "k VARBINARY(255) PRIMARY KEY, status INT NULL, body BLOB NULL",
	read:   "SELECT status, body FROM $T WHERE k = ?",
	claim:  "INSERT INTO $T (k) VALUES (?)",
	answer: "UPDATE $T SET status = ?, body = ? WHERE k = ?",
}, {
	table:  "k VARBINARY(255) PRIMARY KEY, fingerprint VARBINARY(128) NOT NULL, expires_at DATETIME(6) NOT NULL, status INT NULL, header BLOB NULL, body BLOB NULL, KEY (expires_at)",
	read:   "SELECT fingerprint = ?, status, header, body FROM $T WHERE k = ? AND expires_at > UTC_TIMESTAMP(6)",
	claim:  "SET STATEMENT innodb_lock_wait_timeout = 0 FOR INSERT INTO $T (k, fingerprint, expires_at) VALUES (?, ?, UTC_TIMESTAMP(6) + INTERVAL 1 DAY)",
	answer: "UPDATE $T SET status = ?, body = ?, header = ? WHERE k = ?",
}}

// newFloor is the least an idempotency layer on MySQL can do around the
// handler's INSERT, on a keys table of its own: a read-only SELECT for the
// key's stored answer, which ends a replay; otherwise START TRANSACTION,
// the INSERT of the key's row, the handler's INSERT, the UPDATE of the
// key's row with the answer and COMMIT: one commit, six round trips
// (database/sql has no pipelining). With contract set it is the contract
// floor: the same, plus a SHA-256 fingerprint of the body stored and
// compared (422), the answer's headers (one "Name: value" line each), an
// expiry that reads skip and a purge finds by an index, and a claim that
// does not wait for another open claim's row lock (a duplicate answered at
// once); no lease, no fence, no takeover, no token.
func (m *MySQL) newFloor(b *testing.B, contract bool) http.HandlerFunc {
	q := floorSQL[0]
	if contract {
		q = floorSQL[1]
	}
	keys := mysqltest.Name(b) + "_keys"
	mysqltest.Exec(b, m.DB, "CREATE TABLE `"+keys+"` ("+q.table+") ENGINE=InnoDB")
	b.Cleanup(func() { mysqltest.Drop(b, m.DB, keys) })
	prep := func(stmt string) *sql.Stmt {
		st, err := m.DB.Prepare(strings.ReplaceAll(stmt, "$T", "`"+keys+"`"))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = st.Close() })
		return st
	}
	read, claim, answer := prep(q.read), prep(q.claim), prep(q.answer)
	const header = "Content-Type: application/json"
	return func(w http.ResponseWriter, r *http.Request) {
		ctx := context.Background()
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
		var stored []byte
		var lines sql.NullString
		var err error
		if contract {
			err = read.QueryRowContext(ctx, fp, key).Scan(&same, &status, &lines, &stored)
		} else {
			err = read.QueryRowContext(ctx, key).Scan(&status, &stored)
		}
		switch {
		case err == nil && !same:
			w.WriteHeader(http.StatusUnprocessableEntity)
			return
		case err == nil && status.Valid:
			if contract {
				for line := range strings.Lines(lines.String) {
					name, value, _ := strings.Cut(strings.TrimSuffix(line, "\n"), ": ")
					w.Header().Add(name, value)
				}
			} else {
				w.Header().Set("Content-Type", "application/json")
			}
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
		tx, err := m.DB.BeginTx(ctx, nil)
		if err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		defer func() { _ = tx.Rollback() }()
		if !contract {
			_, err = tx.StmtContext(ctx, claim).ExecContext(ctx, key)
		} else {
			// A lock wait is a duplicate's open claim, answered at once.
			// InnoDB has also reported one between distinct keys: try once
			// more, without waiting either time, rather than fail the run.
			for range 2 {
				if _, err = tx.StmtContext(ctx, claim).ExecContext(ctx, key, fp); !isLockWait(err) {
					break
				}
			}
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusConflict)
			return
		}
		id, err := m.insertPayment(ctx, tx)
		body := Answer(id)
		if err == nil && contract {
			_, err = tx.StmtContext(ctx, answer).ExecContext(ctx, http.StatusCreated, body, header, key)
		} else if err == nil {
			_, err = tx.StmtContext(ctx, answer).ExecContext(ctx, http.StatusCreated, body, key)
		}
		if err == nil {
			err = tx.Commit()
		}
		if err != nil {
			http.Error(w, fmt.Sprintf("%s: %v", key, err), http.StatusServiceUnavailable)
			return
		}
		created(w, body)
	}
}

// isLockWait reports InnoDB's lock wait timeout (1205).
func isLockWait(err error) bool {
	var me *mysql.MySQLError
	return errors.As(err, &me) && me.Number == 1205
}
