package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/idemgen/idemgen/internal/probe"
	"github.com/idemgen/idemgen/runtime/pgstore/pgtest"
)

// TestProbePassesPostgres: the PostgreSQL example keeps the contract of its
// spec under idemctl probe's checks, and each run of the probe's requests
// left exactly one payment row: the first request, the concurrent burst.
func TestProbePassesPostgres(t *testing.T) {
	ctx := context.Background()
	suffix := "_" + pgtest.Name(t)
	pool := pgtest.Pool(t, 0)
	t.Cleanup(func() {
		pgtest.Drop(t, pool, "idem_records"+suffix)
		pgtest.Drop(t, pool, "payments"+suffix)
	})
	h, payments, closeStore, err := newServer(ctx, pool, suffix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(closeStore)
	srv := httptest.NewServer(h) // loopback
	t.Cleanup(srv.Close)
	base, _ := url.Parse(srv.URL)

	rows, err := probe.Probe(ctx, probe.Config{
		Spec: "openapi.yaml", BaseURL: base, Concurrent: 8,
		Client: &http.Client{Timeout: 30 * time.Second},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	checks := 0
	for _, r := range rows {
		checks++
		if r.Result != probe.Pass {
			t.Errorf("%s: %s: expected %s, got %s (%s)", r.Operation, r.Check, r.Expected, r.Got, r.Result)
		}
	}
	if checks != 5 {
		t.Errorf("%d checks, want 5 (missing key, first, replay, mismatch, concurrent): %+v", checks, rows)
	}
	var n int
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM "+payments).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 2 {
		t.Errorf("%d payment rows after the probe, want 2 (its first request, its concurrent burst)", n)
	}
}
