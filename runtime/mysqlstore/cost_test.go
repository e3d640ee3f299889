package mysqlstore_test

import (
	"context"
	"database/sql"
	"net"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/go-sql-driver/mysql"

	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/internal/sqlfamily/sqlfamilytest"
	"github.com/idemgen/idemgen/runtime/mysqlstore/mysqltest"
)

// countingConn counts the commands a client sends: each is a round trip,
// but for COM_STMT_CLOSE and COM_QUIT, which the server does not answer.
type countingConn struct {
	net.Conn
	n *atomic.Int64
}

func (c countingConn) Write(b []byte) (int, error) {
	// A command's first packet has sequence 0; its payload starts with
	// the command's code.
	if len(b) > 4 && b[3] == 0 && b[4] != 0x19 && b[4] != 0x01 {
		c.n.Add(1)
	}
	return c.Conn.Write(b)
}

var dialerID atomic.Int64

// countingDB is a pool of at most maxConns connections to dsn whose
// commands n counts.
func countingDB(t testing.TB, dsn string, maxConns int, n *atomic.Int64) *sql.DB {
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	name := "counting" + string(rune('a'+dialerID.Add(1)%26)) + t.Name()
	mysql.RegisterDialContext(name, func(ctx context.Context, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
		if err != nil {
			return nil, err
		}
		return countingConn{Conn: c, n: n}, nil
	})
	cfg.Net = name
	return mysqltest.DBOf(t, cfg.FormatDSN(), maxConns)
}

// status reads the server's global counters.
func status(t *testing.T, db *sql.DB) map[string]int64 {
	rows, err := db.Query("SHOW GLOBAL STATUS WHERE Variable_name IN ('Handler_commit', 'Com_commit', 'Innodb_data_fsyncs', 'Innodb_log_writes', 'Questions', 'Handler_write', 'Handler_update')")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	m := map[string]int64{}
	for rows.Next() {
		var k string
		var v int64
		if err := rows.Scan(&k, &v); err != nil {
			t.Fatal(err)
		}
		m[k] = v
	}
	return m
}

// TestCostPerRequest counts, on a private server with no other client,
// what a first request and a replay cost: commands sent (round trips) and
// the server's own counters of commits, redo log writes and fsyncs. A first
// request is one commit, one log write, one fsync, in seven round trips:
// the read, START TRANSACTION, the claim, the handler's INSERT (which
// database/sql prepares, then executes: two), the completion's UPDATE and
// COMMIT (the session's SET was made once, on the connection's first
// claim). A replay is one round trip that writes nothing: no commit, no
// log write, no row written or updated.
func TestCostPerRequest(t *testing.T) {
	srv := mysqltest.StartServer(t)
	var n atomic.Int64
	db := countingDB(t, srv.DSN(), 1, &n)
	admin := mysqltest.DBOf(t, srv.DSN(), 1)
	s, _ := mysqltest.Store(t, db)
	pay := mysqlDB{db}.Payments(t)
	h := httptest.NewServer(sqlfamilytest.ServePayments(idem.NewEngine(s), sqlfamilytest.PaymentHandler(dialect{}, pay, nil)))
	defer h.Close()
	// Warm: the store's statements prepared on the one connection.
	for _, k := range []string{"w1", "w2", "w1"} {
		sqlfamilytest.Post(t, h.Client(), h.URL, k)
	}
	measure := func(what string, wantStatus int) (int64, map[string]int64) {
		t.Helper()
		before, rt := status(t, admin), n.Load()
		if st, body := sqlfamilytest.Post(t, h.Client(), h.URL, "k"); st != wantStatus {
			t.Fatalf("%s: %d %s, want %d", what, st, body, wantStatus)
		}
		after := status(t, admin)
		d := map[string]int64{}
		for k, v := range after {
			d[k] = v - before[k]
		}
		d["Questions"]-- // the SHOW STATUS after
		return n.Load() - rt, d
	}
	rt, d := measure("first request", 201)
	t.Logf("first request: %d round trips, %v", rt, d)
	if rt != 7 || d["Com_commit"] != 1 || d["Innodb_log_writes"] != 1 || d["Innodb_data_fsyncs"] != 1 {
		t.Errorf("first request: %d round trips, %d COMMIT, %d log writes, %d fsyncs; want 7, 1, 1, 1", rt, d["Com_commit"], d["Innodb_log_writes"], d["Innodb_data_fsyncs"])
	}
	rt, d = measure("replay", 201)
	t.Logf("replay: %d round trips, %v", rt, d)
	if rt != 1 || d["Com_commit"] != 0 || d["Innodb_log_writes"] != 0 || d["Handler_write"] != 0 || d["Handler_update"] != 0 {
		t.Errorf("replay: %d round trips, %d COMMIT, %d log writes, %d rows written, %d updated; want 1 and nothing written", rt, d["Com_commit"], d["Innodb_log_writes"], d["Handler_write"], d["Handler_update"])
	}
}
