package mysqlstore_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/mysqlstore"
	"github.com/idemgen/idemgen/runtime/mysqlstore/internal/mysqltest"
)

// TestTableTheStoreCannotKeepItsPromiseOn: a records table that is not
// InnoDB, whose key is text (a utf8mb3 column, compared by a
// case-insensitive collation), or that the store's statements would fail
// on, at acquire or at completion, is misconfigured: Check says what is
// wrong and what to change, and every request, retries included, is
// answered 503 store-misconfigured without its handler running.
func TestTableTheStoreCannotKeepItsPromiseOn(t *testing.T) {
	db := mysqltest.DB(t, 0)
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		alter []string // SQL run on the table CreateSchema made, %s its name
		check []string // what Check's error must say
	}{
		{"MyISAM", []string{"ALTER TABLE %s MODIFY `key` VARBINARY(1000) NOT NULL, ENGINE=MyISAM"}, // MyISAM keys are at most 1000 bytes
			[]string{"its engine is MyISAM, which has no transactions", "ENGINE=InnoDB"}},
		{"utf8mb3 key", []string{"ALTER TABLE %s MODIFY `key` VARCHAR(255) CHARACTER SET utf8mb3 COLLATE utf8mb3_general_ci NOT NULL"},
			[]string{"column key is varchar(255) CHARACTER SET utf8mb3", "two different keys can share one record", "MODIFY `key` VARBINARY(2048) NOT NULL"}},
		{"narrow columns", []string{"ALTER TABLE %s MODIFY fingerprint VARBINARY(24) NOT NULL, MODIFY token VARBINARY(24) NOT NULL"},
			[]string{"column fingerprint is varbinary(24), shorter than the store's values", "MODIFY `fingerprint` VARBINARY(128) NOT NULL"}},
		{"body of 64 KiB", []string{"ALTER TABLE %s MODIFY body BLOB NULL"},
			[]string{"column body is blob, want LONGBLOB NULL"}},
		{"seconds", []string{"ALTER TABLE %s MODIFY lease_until DATETIME NOT NULL"},
			[]string{"column lease_until is datetime: leases are timed to the microsecond"}},
		{"extra NOT NULL column", []string{"ALTER TABLE %s ADD tenant_id BIGINT NOT NULL"},
			[]string{"column tenant_id is NOT NULL without a DEFAULT"}},
		{"status NOT NULL", []string{"ALTER TABLE %s MODIFY status INT NOT NULL"},
			[]string{"column status is NOT NULL, but an in-progress record leaves it NULL"}},
		{"unique token", []string{"CREATE UNIQUE INDEX by_token ON %s (token)"},
			[]string{"unique index by_token", "DROP INDEX `by_token`"}},
		{"check constraint", []string{"ALTER TABLE %s ADD CONSTRAINT small CHECK (status < 300)"},
			[]string{"check constraint small", "DROP CONSTRAINT `small`"}},
		{"failing trigger", []string{"CREATE TRIGGER %[2]s BEFORE UPDATE ON %[1]s FOR EACH ROW SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'no updates'"},
			[]string{"trigger %[2]s can refuse", "DROP TRIGGER `%[2]s`"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, table := mysqltest.Store(t, db)
			trigger := table + "_refuse"
			for _, q := range tc.alter {
				mysqltest.Exec(t, db, sprintf(q, "`"+table+"`", trigger))
			}
			err := s.Check(ctx)
			if !errors.Is(err, idem.ErrStoreMisconfigured) {
				t.Errorf("Check = %v, want ErrStoreMisconfigured", err)
			} else {
				for _, want := range tc.check {
					if want = sprintf(want, "`"+table+"`", trigger); !strings.Contains(err.Error(), want) {
						t.Errorf("Check = %v\nwant it to say %q", err, want)
					}
				}
			}
			refusedWithoutRunning(t, mysqlstore.New(db, mysqlstore.WithTable(table), mysqlstore.WithPurgeInterval(-1)))
		})
	}
}

// refusedWithoutRunning serves three requests of one key on s (a fresh
// store, as a new process has) and checks that each is answered 503
// store-misconfigured without the handler running.
func refusedWithoutRunning(t *testing.T, s *mysqlstore.Store) {
	t.Helper()
	defer s.Close()
	var runs atomic.Int64
	h := func(w http.ResponseWriter, r *http.Request) {
		runs.Add(1)
		w.WriteHeader(http.StatusCreated)
	}
	srv := httptest.NewServer(serve(idem.NewEngine(s, idem.WithLogger(nil)), payOp, h))
	defer srv.Close()
	for i := range 3 {
		st, body := post(t, srv.Client(), srv.URL, "A-Key")
		if st != http.StatusServiceUnavailable || problemCode(body) != idem.CodeStoreMisconfigured {
			t.Errorf("request %d: %d %s; want 503 store-misconfigured", i+1, st, body)
		}
	}
	if n := runs.Load(); n != 0 {
		t.Errorf("the handler ran %d times; want 0", n)
	}
}

// TestMissingTable: Check says to create it.
func TestMissingTable(t *testing.T) {
	db := mysqltest.DB(t, 0)
	s := mysqlstore.New(db, mysqlstore.WithTable(mysqltest.Name(t)), mysqlstore.WithPurgeInterval(-1))
	err := s.Check(context.Background())
	if !errors.Is(err, idem.ErrStoreMisconfigured) || !strings.Contains(err.Error(), "does not exist: apply mysqlstore.Schema") {
		t.Fatalf("Check = %v; want a misconfiguration that says to create the table", err)
	}
	refusedWithoutRunning(t, s)
}

// TestTriggerAddedUnderARunningStore: a trigger that refuses the
// completion, added after the store verified its table, lets the first
// request's handler run (nothing could tell before) and rolls its writes
// back, but its retries are refused 503 store-misconfigured without running
// it again, and Check names the trigger.
func TestTriggerAddedUnderARunningStore(t *testing.T) {
	db := mysqltest.DB(t, 0)
	s, table := mysqltest.Store(t, db)
	pay := payments(t, db)
	var runs atomic.Int64
	srv := httptest.NewServer(serve(idem.NewEngine(s, idem.WithLogger(nil)), payOp, paymentHandler(pay, func(context.Context) { runs.Add(1) })))
	defer srv.Close()
	if st, body := post(t, srv.Client(), srv.URL, "before"); st != http.StatusCreated {
		t.Fatalf("before the trigger: %d %s", st, body)
	}
	mysqltest.Exec(t, db, "CREATE TRIGGER `"+table+"_refuse` BEFORE UPDATE ON `"+table+"` FOR EACH ROW SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'no updates'")
	if st, body := post(t, srv.Client(), srv.URL, "after"); st != http.StatusServiceUnavailable {
		t.Errorf("first request after the trigger: %d %s; want 503", st, body)
	}
	for i := range 3 {
		if st, body := post(t, srv.Client(), srv.URL, "after"); st != http.StatusServiceUnavailable || problemCode(body) != idem.CodeStoreMisconfigured {
			t.Errorf("retry %d: %d %s; want 503 store-misconfigured", i+1, st, body)
		}
	}
	if n := runs.Load(); n != 2 {
		t.Errorf("the handler ran %d times; want 2 (before, and the first request after the trigger)", n)
	}
	if n := mysqltest.Count(t, db, pay, "true"); n != 1 {
		t.Errorf("%d payment rows; want 1: the refused completion rolls the handler's write back", n)
	}
	if err := s.Check(context.Background()); err == nil || !strings.Contains(err.Error(), "DROP TRIGGER `"+table+"_refuse`") {
		t.Errorf("Check = %v; want it to name the trigger", err)
	}
}

// sprintf is fmt.Sprintf that tolerates unused arguments.
func sprintf(format string, args ...any) string {
	s := format
	for i, a := range args {
		s = strings.ReplaceAll(s, "%["+string(rune('1'+i))+"]s", a.(string))
	}
	if len(args) > 0 {
		s = strings.Replace(s, "%s", args[0].(string), 1)
	}
	return s
}
