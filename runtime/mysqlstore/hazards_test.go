package mysqlstore_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/internal/sqlfamily/sqlfamilytest"
	"github.com/idemgen/idemgen/runtime/mysqlstore"
	"github.com/idemgen/idemgen/runtime/mysqlstore/mysqltest"
)

// TestServerThatCanLoseOrCutRecords: a server that can lose acknowledged
// commits in a crash (innodb_flush_log_at_trx_commit = 2; the binary log
// on with sync_binlog = 0), whose sql_mode truncates instead of refusing,
// or whose max_allowed_packet cannot carry the largest stored response, is
// misconfigured: Check names each setting and what to set it to, and
// requests are answered 503 store-misconfigured without the handler
// running. Each complaint goes once its setting is fixed, and with all of
// them fixed the request runs.
func TestServerThatCanLoseOrCutRecords(t *testing.T) {
	srv := mysqltest.StartServer(t,
		"--innodb-flush-log-at-trx-commit=2",
		"--log-bin=binlog", "--server-id=1", "--sync-binlog=0",
		"--sql-mode=NO_ENGINE_SUBSTITUTION",
		"--max-allowed-packet=512K")
	ctx := context.Background()
	hazards := []struct {
		name, fix string
		says      []string
	}{
		{"innodb_flush_log_at_trx_commit", "SET GLOBAL innodb_flush_log_at_trx_commit = 1",
			[]string{"innodb_flush_log_at_trx_commit is 2: a crash of the server loses commits", "SET GLOBAL innodb_flush_log_at_trx_commit = 1"}},
		{"sync_binlog", "SET GLOBAL sync_binlog = 1",
			[]string{"the binary log is on and sync_binlog is 0", "SET GLOBAL sync_binlog = 1"}},
		{"sql_mode", "SET GLOBAL sql_mode = 'STRICT_TRANS_TABLES,NO_ENGINE_SUBSTITUTION'",
			[]string{`sql_mode "NO_ENGINE_SUBSTITUTION" is not strict`, "add STRICT_TRANS_TABLES"}},
		{"max_allowed_packet", "SET GLOBAL max_allowed_packet = 16777216",
			[]string{"max_allowed_packet is 524288 bytes, below the 1118208", "SET GLOBAL max_allowed_packet = 1118208"}},
	}
	setup := mysqltest.DBOf(t, srv.DSN(), 0)
	table := mysqltest.Name(t)
	if err := mysqlstore.New(setup, mysqlstore.WithTable(table)).CreateSchema(ctx); err != nil {
		t.Fatal(err)
	}
	for i, h := range hazards {
		// A new pool after each fix: a connection keeps the sql_mode and
		// max_allowed_packet it started with.
		db := mysqltest.DBOf(t, srv.DSN(), 0)
		s := mysqlstore.New(db, mysqlstore.WithTable(table), mysqlstore.WithPurgeInterval(-1))
		err := s.Check(ctx)
		if !errors.Is(err, idemstore.ErrStoreMisconfigured) {
			t.Fatalf("with %s and the settings after it wrong, Check = %v; want ErrStoreMisconfigured", h.name, err)
		}
		for j, later := range hazards {
			for _, want := range later.says {
				if got := strings.Contains(err.Error(), want); got != (j >= i) {
					t.Errorf("with the settings before %s fixed, Check says %q: %v; want %v\n%v", later.name, want, got, j >= i, err)
				}
			}
		}
		if i == 0 {
			sqlfamilytest.RefusedWithoutRunning(t, s)
		}
		mysqltest.Exec(t, setup, h.fix)
	}
	db := mysqltest.DBOf(t, srv.DSN(), 0)
	s := mysqlstore.New(db, mysqlstore.WithTable(table), mysqlstore.WithPurgeInterval(-1))
	defer s.Close()
	if err := s.Check(ctx); err != nil {
		t.Fatalf("with every setting fixed, Check = %v", err)
	}
	h := httptest.NewServer(sqlfamilytest.ServePayments(idem.NewEngine(s), func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusCreated) }))
	defer h.Close()
	if st, body := sqlfamilytest.Post(t, h.Client(), h.URL, "fixed"); st != http.StatusCreated {
		t.Fatalf("with every setting fixed: %d %s, want 201", st, body)
	}
}

// TestRunIsReadCommittedUnderRepeatableRead: the server's default is
// REPEATABLE READ, under which the handler's second read in its
// transaction would see the snapshot of its first (not a row committed
// since: the record the heartbeat extends, a balance another request
// changed), and its locking statements would take gap locks. The run's
// transaction is READ COMMITTED whatever the default: the second read sees
// what was committed in between.
func TestRunIsReadCommittedUnderRepeatableRead(t *testing.T) {
	db := mysqltest.DB(t, 0)
	var level string
	if err := db.QueryRow("SELECT @@global.tx_isolation").Scan(&level); err != nil {
		if err = db.QueryRow("SELECT @@global.transaction_isolation").Scan(&level); err != nil {
			t.Fatal(err)
		}
	}
	if level != "REPEATABLE-READ" {
		t.Fatalf("the server's default isolation is %s; this test needs InnoDB's default, REPEATABLE-READ", level)
	}
	s, _ := mysqltest.Store(t, db)
	counter := mysqltest.Name(t) + "_n"
	mysqltest.Exec(t, db, "CREATE TABLE `"+counter+"` (id INT PRIMARY KEY, n INT NOT NULL) ENGINE=InnoDB")
	t.Cleanup(func() { mysqltest.Drop(t, db, counter) })
	mysqltest.Exec(t, db, "INSERT INTO `"+counter+"` VALUES (1, 0)")
	var first, second int
	h := func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		tx := mysqlstore.Tx(ctx)
		read := func() (n int) {
			if err := tx.QueryRowContext(ctx, "SELECT n FROM `"+counter+"` WHERE id = 1").Scan(&n); err != nil {
				t.Error(err)
			}
			return n
		}
		first = read()
		if _, err := db.ExecContext(ctx, "UPDATE `"+counter+"` SET n = 1 WHERE id = 1"); err != nil { // another transaction, committed
			t.Error(err)
		}
		second = read()
		w.WriteHeader(http.StatusCreated)
	}
	srv := httptest.NewServer(sqlfamilytest.ServePayments(idem.NewEngine(s), h))
	defer srv.Close()
	if st, body := sqlfamilytest.Post(t, srv.Client(), srv.URL, "rc"); st != http.StatusCreated {
		t.Fatalf("answer %d %s, want 201", st, body)
	}
	if first != 0 || second != 1 {
		t.Fatalf("the handler read %d, then %d after another transaction committed 1; want 0 then 1 (READ COMMITTED)", first, second)
	}
}

// TestStrictSQLModeRefusesWhatNonStrictWouldCut shows why Check refuses a
// sql_mode that is not strict: on such a session, a value too long for its
// column is stored cut short with a warning, not refused. (The store's own
// columns are wide enough for what it writes; a narrowed one, which Check
// also refuses, is where a key or a body would be cut.)
func TestStrictSQLModeRefusesWhatNonStrictWouldCut(t *testing.T) {
	db := mysqltest.DB(t, 1)
	name := mysqltest.Name(t)
	mysqltest.Exec(t, db, "CREATE TABLE `"+name+"` (v VARBINARY(4)) ENGINE=InnoDB")
	t.Cleanup(func() { mysqltest.Drop(t, db, name) })
	conn, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	exec := func(q string) error { _, err := conn.ExecContext(context.Background(), q); return err }
	if err := exec("SET SESSION sql_mode = 'NO_ENGINE_SUBSTITUTION'"); err != nil {
		t.Fatal(err)
	}
	if err := exec("INSERT INTO `" + name + "` VALUES ('abcdefgh')"); err != nil {
		t.Fatalf("non-strict insert: %v", err)
	}
	var v []byte
	if err := conn.QueryRowContext(context.Background(), "SELECT v FROM `"+name+"`").Scan(&v); err != nil || string(v) != "abcd" {
		t.Fatalf("non-strict mode stored %q (%v); want it cut to \"abcd\"", v, err)
	}
	if err := exec("SET SESSION sql_mode = 'STRICT_TRANS_TABLES'"); err != nil {
		t.Fatal(err)
	}
	if err := exec("INSERT INTO `" + name + "` VALUES ('abcdefgh')"); err == nil {
		t.Fatal("strict mode stored a value too long for its column")
	}
}

// TestRollbackOnTimeoutRefused: with innodb_rollback_on_timeout ON, a lock
// wait timeout in the handler rolls back the run's whole transaction,
// claim included, and the handler's statements after it commit on their
// own: Check refuses it, saying what to set, and no handler runs.
func TestRollbackOnTimeoutRefused(t *testing.T) {
	srv := mysqltest.StartServer(t, "--innodb-rollback-on-timeout=ON")
	db := mysqltest.DBOf(t, srv.DSN(), 0)
	s, _ := mysqltest.Store(t, db)
	err := s.Check(context.Background())
	if !errors.Is(err, idemstore.ErrStoreMisconfigured) {
		t.Fatalf("Check = %v; want ErrStoreMisconfigured", err)
	}
	for _, want := range []string{"innodb_rollback_on_timeout is ON", "innodb_rollback_on_timeout = OFF"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Check's error %q does not say %q", err, want)
		}
	}
	sqlfamilytest.RefusedWithoutRunning(t, s)
}

// TestPrefixKeyRefused: a primary key on a prefix of the key column
// (PRIMARY KEY (`key`(40))) makes two keys that share the prefix one to
// the index, so that the second is answered 409 for ever: Check refuses
// it, with the ALTER that indexes the whole column.
func TestPrefixKeyRefused(t *testing.T) {
	db := mysqltest.DB(t, 0)
	s, table := mysqltest.Store(t, db)
	mysqltest.Exec(t, db, "ALTER TABLE `"+table+"` DROP PRIMARY KEY, ADD PRIMARY KEY (`key`(40))")
	err := s.Check(context.Background())
	if !errors.Is(err, idemstore.ErrStoreMisconfigured) {
		t.Fatalf("Check = %v; want ErrStoreMisconfigured", err)
	}
	for _, want := range []string{"first 40 bytes of key", "ADD PRIMARY KEY (`key`)"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Check's error %q does not say %q", err, want)
		}
	}
	sqlfamilytest.RefusedWithoutRunning(t, s)
}
