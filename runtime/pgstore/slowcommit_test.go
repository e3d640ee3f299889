package pgstore_test

import (
	"encoding/binary"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/internal/sqlfamily/sqlfamilytest"
	"github.com/idemgen/idemgen/runtime/pgstore/pgtest"
)

// TestCommitOutlivingTheStoreTimeoutIsLookedUp: a COMMIT that takes longer
// than the store timeout (a deferred constraint trigger of the handler's
// own table sleeps at COMMIT) is given up on by the client, while the
// server goes on and commits. (pgx sends a CancelRequest when it gives up,
// which would stop a pg_sleep but not a commit waiting for, say, a
// synchronous replica, past the point a cancel can undo: the proxy drops
// the cancel to stand for that.) The outcome is looked up on a context of
// its own, not the expired one, so the client gets the committed answer,
// not a 503 for a run that happened; the handler ran once, and a retry
// replays it.
func TestCommitOutlivingTheStoreTimeoutIsLookedUp(t *testing.T) {
	const storeTimeout, commitTakes = 300 * time.Millisecond, "1.5" // seconds
	proxied, proxy := sqlfamilytest.ProxiedDB(t, dialect{}, 4, &dropCancels)
	pool := proxied.(pgPool).Pool
	s, records := pgtest.Store(t, pool)
	pay := pgPool{pool}.Payments(t)
	quoted := pgx.Identifier{pay}.Sanitize()
	fn := strings.TrimSuffix(quoted, `"`) + `_slow"`
	pgtest.Exec(t, pool, `CREATE FUNCTION `+fn+`() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN PERFORM pg_sleep(`+commitTakes+`); RETURN NULL; END$$`)
	t.Cleanup(func() { _, _ = pool.Exec(t.Context(), "DROP FUNCTION IF EXISTS "+fn+"() CASCADE") })
	pgtest.Exec(t, pool, `CREATE CONSTRAINT TRIGGER slow_commit AFTER INSERT ON `+quoted+`
	DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION `+fn+`()`)

	e := idem.NewEngine(s, idem.WithStoreTimeout(storeTimeout), idem.WithLogger(nil))
	srv := httptest.NewServer(sqlfamilytest.ServePayments(e, sqlfamilytest.PaymentHandler(dialect{}, pay, nil)))
	defer srv.Close()

	st1, b1 := sqlfamilytest.Post(t, srv.Client(), srv.URL, "slow")
	if st1 != http.StatusCreated {
		t.Errorf("first: %d %s; want 201, the committed run's answer", st1, b1)
	}
	if proxy.Refused.Load() == 0 {
		t.Errorf("the client never gave up on the COMMIT (no cancel dropped): the test proves nothing")
	}
	// The record's row lock is held until the COMMIT ends, whenever the
	// client stopped waiting for it.
	pgtest.Exec(t, pool, "SELECT count(*) FROM (SELECT 1 FROM "+pgx.Identifier{records}.Sanitize()+" FOR SHARE) AS r")
	if n := pgtest.Count(t, pool, pay, "key = 'slow'"); n != 1 {
		t.Fatalf("%d payment rows, want 1 (the COMMIT went through)", n)
	}
	st2, b2 := sqlfamilytest.Post(t, srv.Client(), srv.URL, "slow")
	if st2 != http.StatusCreated || (st1 == http.StatusCreated && b2 != b1) {
		t.Errorf("retry: %d %s; want the replay of 201 %s", st2, b2, b1)
	}
	if n := pgtest.Count(t, pool, pay, "key = 'slow'"); n != 1 {
		t.Errorf("%d payment rows after the retry, want 1", n)
	}
}

// dropCancels closes every connection that carries a CancelRequest instead
// of forwarding it, so that a statement the client gave up on runs to its
// end, as a COMMIT past the point where a cancel can stop it does. A
// CancelRequest is the first message of its connection: its length, 16,
// then the code 80877102.
var dropCancels = sqlfamilytest.First{Len: 8, Refuse: func(head []byte) bool {
	return binary.BigEndian.Uint32(head[4:]) == 80877102
}}
