package pgstore_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemop"
	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/internal/sqlfamily/sqlfamilytest"
	"github.com/idemgen/idemgen/runtime/pgstore"
	"github.com/idemgen/idemgen/runtime/pgstore/pgtest"
	"github.com/jackc/pgx/v5/pgxpool"
)

// TestConnectionRefusedSaysWhatToChange: a connection string the server
// refuses (a database that does not exist, a wrong password) makes Check fail as a misconfiguration with the store's
// own sentence of what to change, then the driver's text; never a pointer
// back to Check. The engine answers 503 store-misconfigured without
// running the handler.
func TestConnectionRefusedSaysWhatToChange(t *testing.T) {
	srv := pgtest.StartServer(t)
	base := parseURL(t, srv.URL())
	wrongPassword := srv.RequirePassword(t, "payments", "right")
	wrongPassword = strings.Replace(wrongPassword, ":right@", ":wrong@", 1)
	noDatabase := *base
	noDatabase.Path = "/nosuchdb"
	for _, c := range []struct {
		name, url string
		want      []string
	}{
		{"database does not exist", noDatabase.String(), []string{`database "nosuchdb" does not exist`, `CREATE DATABASE "nosuchdb"`, "SQLSTATE 3D000"}},
		{"wrong password", wrongPassword, []string{`the password of user "payments"`, "connection string", "SQLSTATE 28P01"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			pool, err := pgxpool.New(context.Background(), c.url) // connects at its first statement
			if err != nil {
				t.Fatal(err)
			}
			defer pool.Close()
			s := pgstore.New(pool, pgstore.WithPurgeInterval(-1))
			defer s.Close()
			err = s.Check(context.Background())
			if !errors.Is(err, idemstore.ErrStoreMisconfigured) {
				t.Errorf("Check = %v; want ErrStoreMisconfigured", err)
			}
			msg := ""
			if err != nil {
				msg = err.Error()
			}
			t.Logf("Check: %s", msg)
			for _, want := range c.want {
				if !strings.Contains(msg, want) {
					t.Errorf("Check = %s\nwant it to say %q", msg, want)
				}
			}
			if strings.Contains(msg, "Store.Check") {
				t.Errorf("Check = %s\nwant no pointer to Store.Check", msg)
			}
			if i, j := strings.Index(msg, c.want[0]), strings.Index(msg, "SQLSTATE"); i > j {
				t.Errorf("Check = %s\nwant the store's sentence before the driver's text", msg)
			}
			h := httptest.NewServer(sqlfamilytest.ServePayments(idem.NewEngine(s, idem.WithLogger(nil)), func(w http.ResponseWriter, r *http.Request) {
				t.Error("the handler ran")
			}))
			defer h.Close()
			if st, body := sqlfamilytest.Post(t, h.Client(), h.URL, "k"); st != http.StatusServiceUnavailable || sqlfamilytest.ProblemCode(body) != idemop.CodeStoreMisconfigured {
				t.Errorf("a request = %d %s; want 503 %s", st, body, idemop.CodeStoreMisconfigured)
			}
		})
	}
}
