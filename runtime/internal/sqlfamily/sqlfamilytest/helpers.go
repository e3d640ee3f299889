package sqlfamilytest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemop"
	"github.com/idemgen/idemgen/runtime/idemstore"
)

// PayOp returns the operation the scenarios serve: POST /payments, keyed
// by Idempotency-Key, a lock of 10 s.
func PayOp() idemop.Operation {
	return idemop.Operation{ID: "createPayment", Method: http.MethodPost, Path: "/payments", KeyHeader: "Idempotency-Key", Lock: 10 * time.Second}
}

// ServePayments is an http.Handler running h under [PayOp] on engine e.
func ServePayments(e *idem.Engine, h http.HandlerFunc) http.Handler {
	op := PayOp()
	return Serve(e, &op, h)
}

// Serve is an http.Handler running h under op on engine e.
func Serve(e *idem.Engine, op *idemop.Operation, h http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { e.Serve(w, r, op, h) })
}

// Post sends a POST with key to url and returns the status and body; a
// failed exchange returns status 0 and the error.
func Post(t testing.TB, client *http.Client, url, key string) (int, string) {
	t.Helper()
	return postBody(t, client, url, key, `{"amount":5}`)
}

// postBody is Post with body as the request's payload.
func postBody(t testing.TB, client *http.Client, url, key, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
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

// InsertPayment is the handler's business write, in the run's transaction:
// one row for the request's key and fence, returning the row's id.
func InsertPayment(ctx context.Context, d Dialect, table string) (int64, error) {
	info, ok := idem.FromContext(ctx)
	if !ok {
		return 0, fmt.Errorf("no run in the handler's context")
	}
	return d.InsertPayment(ctx, table, info.Key, info.Fence)
}

// PaymentHandler inserts a payment and answers 201 with its id, {"id":N};
// before answering it calls between (nil: nothing), the point where a
// test counts runs, or freezes or kills the server.
func PaymentHandler(d Dialect, table string, between func(ctx context.Context)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id, err := InsertPayment(r.Context(), d, table)
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

// AnswerID is the payment id of a 201's body, {"id":N}.
func AnswerID(t testing.TB, body string) int64 {
	t.Helper()
	var v struct{ ID int64 }
	if err := json.Unmarshal([]byte(body), &v); err != nil || v.ID == 0 {
		t.Fatalf("answer %q: no payment id (%v)", body, err)
	}
	return v.ID
}

// ProblemCode returns the code member of a problem body ("" if none).
func ProblemCode(body string) string {
	const m = `"code":"`
	i := strings.Index(body, m)
	if i < 0 {
		return ""
	}
	rest := body[i+len(m):]
	return rest[:strings.IndexByte(rest, '"')]
}

// Acquire runs s.Acquire of key for token with fingerprint fp and a
// minute's lease, failing the test on an error.
func Acquire(t testing.TB, s idemstore.Store, key, token, fp string) idemstore.Acquisition {
	t.Helper()
	acq, err := s.Acquire(context.Background(), idemstore.AcquireRequest{Key: key, Token: token, Fingerprint: fp, Lease: time.Minute})
	if err != nil {
		t.Fatalf("acquire %s/%s: %v", key, token, err)
	}
	return acq
}

// Lapse moves key's lease deadline (and, with expire, its expiry) into the
// past, or every record's when key is "": the database's clock, moved for
// those rows.
func Lapse(t testing.TB, d Dialect, db DB, table, key string, expire bool) {
	t.Helper()
	set := "lease_until = " + d.Ago()
	if expire {
		set += ", expires_at = " + d.Ago()
	}
	if key == "" {
		db.Exec(t, "UPDATE "+d.Quote(table)+" SET "+set)
		return
	}
	db.Exec(t, "UPDATE "+d.Quote(table)+" SET "+set+" WHERE "+KeyIs(d), key)
}

// KeyIs is the condition that a row's key is the statement's first
// argument.
func KeyIs(d Dialect) string { return d.Quote("key") + " = " + d.Arg(1) }

// TableName returns a table name unique to this test run, such as
// "t_testacquire_3f2a9c1e": lower case, a plain identifier, with at most
// the first n bytes of the test's name (a store's suffixes must fit the
// server's limit of a name).
func TableName(t testing.TB, n int) string {
	t.Helper()
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatalf("random name: %v", err)
	}
	name := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			return r
		case r >= 'A' && r <= 'Z':
			return r + 'a' - 'A'
		}
		return '_'
	}, t.Name())
	return "t_" + name[:min(len(name), n)] + "_" + hex.EncodeToString(b[:])
}
