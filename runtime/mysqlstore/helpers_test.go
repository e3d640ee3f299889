package mysqlstore_test

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/mysqlstore"
	"github.com/idemgen/idemgen/runtime/mysqlstore/internal/mysqltest"
)

// payOp is the operation the tests serve.
var payOp = &idem.Operation{ID: "createPayment", Method: http.MethodPost, Path: "/payments", KeyHeader: "Idempotency-Key", Lock: 10 * time.Second}

// payments creates a business table of the test's own (no unique key: a
// second run of a key would add a second row) and returns its name.
func payments(t testing.TB, db *sql.DB) string {
	t.Helper()
	name := mysqltest.Name(t) + "_pay"
	mysqltest.Exec(t, db, "CREATE TABLE `"+name+"` (id BIGINT AUTO_INCREMENT PRIMARY KEY, `key` VARBINARY(600) NOT NULL, fence BIGINT NOT NULL) ENGINE=InnoDB")
	t.Cleanup(func() { mysqltest.Drop(t, db, name) })
	return name
}

// insertPayment is the handler's business write, in the run's transaction:
// one row for the request's key, answered with the row's id.
func insertPayment(ctx context.Context, table string) (int64, error) {
	tx := mysqlstore.Tx(ctx)
	if tx == nil {
		return 0, fmt.Errorf("no transaction in the handler's context")
	}
	info, _ := idem.FromContext(ctx)
	res, err := tx.ExecContext(ctx, "INSERT INTO `"+table+"` (`key`, fence) VALUES (?, ?)", info.Key, info.Fence)
	if err != nil {
		return 0, err
	}
	return res.LastInsertId()
}

// paymentHandler inserts a payment and answers 201 with its id; before
// answering it calls between (nil: nothing), the point where a test
// freezes or kills it.
func paymentHandler(table string, between func(ctx context.Context)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id, err := insertPayment(r.Context(), table)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		if between != nil {
			between(r.Context())
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"id":%d}`, id)
	}
}

// serve is an http.Handler running h under op on engine e.
func serve(e *idem.Engine, op *idem.Operation, h http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { e.Serve(w, r, op, h) })
}

// post sends a POST with key to url and returns the status and body; a
// failed exchange returns status 0 and the error.
func post(t testing.TB, client *http.Client, url, key string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"amount":5}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Idempotency-Key", key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

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

// idemAcquire is an acquire of key with a fixed token and fingerprint.
func idemAcquire(key string) idemstore.AcquireRequest {
	return idemstore.AcquireRequest{Key: key, Token: "token-1", Fingerprint: "fp-1", Lease: time.Second}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
