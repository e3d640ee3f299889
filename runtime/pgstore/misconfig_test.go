package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"

	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/pgstore"
	"github.com/idemgen/idemgen/runtime/pgstore/internal/pgtest"
)

// problemCode returns the code member of a problem body ("" if none).
func problemCode(body string) string {
	const m = `"code":"`
	i := strings.Index(body, m)
	if i < 0 {
		return ""
	}
	rest := body[i+len(m):]
	return rest[:strings.IndexByte(rest, '"')]
}

// TestSchemaTheStoreCannotCompleteOn: a records table the store's
// statements fail on, whether at acquire (varchar columns too narrow, an
// extra NOT NULL column) or at completion (header text, a trigger that
// raises), is misconfigured: Check says what is wrong and what to change,
// and every request, retries included, is answered 503 store-misconfigured
// without its handler running.
func TestSchemaTheStoreCannotCompleteOn(t *testing.T) {
	pool := pgtest.Pool(t, 0)
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		alter func(table string) string // SQL run on the table CreateSchema made
		check []string                  // what Check's error must say
	}{
		{"varchar columns", func(tb string) string {
			return fmt.Sprintf(`ALTER TABLE %[1]s ALTER COLUMN key TYPE varchar(24), ALTER COLUMN fingerprint TYPE varchar(24),
				ALTER COLUMN token TYPE varchar(24)`, tb)
		}, []string{"column key is character varying(24), want text", "ALTER COLUMN key TYPE text"}},
		{"extra NOT NULL column", func(tb string) string {
			return "ALTER TABLE " + tb + " ADD COLUMN tenant_id bigint NOT NULL"
		}, []string{"tenant_id", "NOT NULL", "DEFAULT"}},
		{"header text", func(tb string) string {
			return "ALTER TABLE " + tb + " ALTER COLUMN header TYPE text"
		}, []string{"column header is text, want jsonb", "ALTER COLUMN header TYPE jsonb"}},
		{"failing trigger", func(tb string) string {
			fn := strings.TrimSuffix(tb, `"`) + `_refuse"`
			return fmt.Sprintf(`CREATE FUNCTION %[2]s() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN RAISE EXCEPTION 'no updates'; END$$;
				CREATE TRIGGER refuse BEFORE UPDATE ON %[1]s FOR EACH ROW EXECUTE FUNCTION %[2]s()`, tb, fn)
		}, []string{"trigger refuse", "DROP TRIGGER refuse"}},
		{"rule that does nothing", func(tb string) string {
			return "CREATE RULE ignore_updates AS ON UPDATE TO " + tb + " DO INSTEAD NOTHING"
		}, []string{"rule ignore_updates", "DROP RULE ignore_updates ON"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, table := pgtest.Store(t, pool)
			quoted := pgx.Identifier{table}.Sanitize()
			pgtest.Exec(t, pool, tc.alter(quoted))
			t.Cleanup(func() {
				_, _ = pool.Exec(ctx, "DROP FUNCTION IF EXISTS "+strings.TrimSuffix(quoted, `"`)+`_refuse"() CASCADE`)
			})

			err := s.Check(ctx)
			if !errors.Is(err, idem.ErrStoreMisconfigured) {
				t.Errorf("Check = %v, want ErrStoreMisconfigured", err)
			} else {
				for _, want := range tc.check {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("Check = %v\nwant it to say %q", err, want)
					}
				}
			}

			var runs atomic.Int64
			h := func(w http.ResponseWriter, r *http.Request) {
				runs.Add(1)
				w.WriteHeader(http.StatusCreated)
			}
			// A fresh store on the table, as a new process would have.
			fresh := pgstore.New(pool, pgstore.WithTable(table), pgstore.WithPurgeInterval(-1))
			defer fresh.Close()
			srv := httptest.NewServer(serve(idem.NewEngine(fresh, idem.WithLogger(nil)), payOp, h))
			defer srv.Close()
			for i := range 3 {
				st, body := post(t, srv.Client(), srv.URL, "a-key-longer-than-twenty-four-bytes")
				if st != http.StatusServiceUnavailable || problemCode(body) != idem.CodeStoreMisconfigured {
					t.Errorf("request %d: %d %s; want 503 store-misconfigured", i+1, st, body)
				}
			}
			if n := runs.Load(); n != 0 {
				t.Errorf("the handler ran %d times; want 0 on a table the store cannot complete on", n)
			}
		})
	}
}

// TestTriggerAddedUnderARunningStore: a trigger that refuses the
// completion, added after the store verified its table, lets the first
// request's handler run (nothing could tell before), but its retries are
// refused 503 store-misconfigured without running it again, and Check
// names the trigger.
func TestTriggerAddedUnderARunningStore(t *testing.T) {
	pool := pgtest.Pool(t, 0)
	ctx := context.Background()
	s, table := pgtest.Store(t, pool)
	var runs atomic.Int64
	h := func(w http.ResponseWriter, r *http.Request) {
		runs.Add(1)
		w.WriteHeader(http.StatusCreated)
	}
	srv := httptest.NewServer(serve(idem.NewEngine(s, idem.WithLogger(nil)), payOp, h))
	defer srv.Close()
	if st, body := post(t, srv.Client(), srv.URL, "before"); st != http.StatusCreated {
		t.Fatalf("before the trigger: %d %s", st, body)
	}
	quoted := pgx.Identifier{table}.Sanitize()
	fn := strings.TrimSuffix(quoted, `"`) + `_refuse"`
	pgtest.Exec(t, pool, fmt.Sprintf(`CREATE FUNCTION %[2]s() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN RAISE EXCEPTION 'no writes'; END$$;
		CREATE TRIGGER refuse BEFORE INSERT OR UPDATE ON %[1]s FOR EACH ROW EXECUTE FUNCTION %[2]s()`, quoted, fn))
	t.Cleanup(func() { _, _ = pool.Exec(ctx, "DROP FUNCTION IF EXISTS "+fn+"() CASCADE") })

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
	if err := s.Check(ctx); err == nil || !strings.Contains(err.Error(), "DROP TRIGGER refuse") {
		t.Errorf("Check = %v; want it to name the trigger", err)
	}
}
