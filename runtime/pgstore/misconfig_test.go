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

	"github.com/idemgen/idemgen/internal/pgtest"
	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/pgstore"
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
