package mysqlstore_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/internal/sqlfamily/sqlfamilytest"
	"github.com/idemgen/idemgen/runtime/mysqlstore/mysqltest"
)

// TestResponseLargerThanThePacket: a response the engine would store
// (its stored-body limit raised to 8 MiB) but larger than the server's
// max_allowed_packet (4 MiB), which Check, with the store's default
// WithMaxRecord, lets pass. The store caps the record to what the server
// takes, as the engine does past its stored-body limit: the run commits
// once, its client gets the whole body, and its retry is a replay that
// says the body was not kept (Idempotency-Body-Omitted: true), not a
// second run.
func TestResponseLargerThanThePacket(t *testing.T) {
	srv := mysqltest.StartServer(t, "--max-allowed-packet=4M")
	db := mysqltest.DBOf(t, srv.DSN(), 0)
	s, table := mysqltest.Store(t, db)
	if err := s.Check(context.Background()); err != nil {
		t.Fatalf("Check = %v; want nil (the default WithMaxRecord fits in 4 MiB)", err)
	}
	pay := mysqlDB{db}.Payments(t)
	big := bytes.Repeat([]byte("x"), 6<<20)
	var runs atomic.Int64
	h := func(w http.ResponseWriter, r *http.Request) {
		runs.Add(1)
		if _, err := sqlfamilytest.InsertPayment(r.Context(), dialect{}, pay); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write(big)
	}
	hs := httptest.NewServer(sqlfamilytest.ServePayments(idem.NewEngine(s, idem.WithStoredBodyLimit(8<<20)), h))
	defer hs.Close()
	post := func() (int, http.Header, []byte) {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, hs.URL, strings.NewReader(`{"amount":1}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", "big")
		resp, err := hs.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header, b
	}
	if st, _, b := post(); st != http.StatusCreated || len(b) != len(big) {
		t.Fatalf("first: %d, %d bytes (%.200s); want 201 and the whole body", st, len(b), b)
	}
	st, hdr, b := post()
	if st != http.StatusCreated || hdr.Get("Idempotent-Replayed") != "true" || hdr.Get("Idempotency-Body-Omitted") != "true" || len(b) != 0 {
		t.Fatalf("retry: %d %v, %d bytes (%.200s); want the replay of 201, its body omitted", st, hdr, len(b), b)
	}
	if runs.Load() != 1 || mysqltest.Count(t, db, pay, "true") != 1 || mysqltest.Count(t, db, table, "completed AND body_omitted") != 1 {
		t.Fatalf("%d runs, %d payment rows; want one run, one row, its record stored without body", runs.Load(), mysqltest.Count(t, db, pay, "true"))
	}
}
