package main

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/idemgen/idemgen/runtime/pgstore/pgtest"
)

// TestDemo runs the demo on DATABASE_URL, in tables of its own, and checks
// what it narrates: one row for the replayed payment, none for the one
// that failed after its INSERT.
func TestDemo(t *testing.T) {
	url := pgtest.URL(t)
	suffix := "_" + pgtest.Name(t)
	t.Cleanup(func() {
		pool := pgtest.Pool(t, 0)
		pgtest.Drop(t, pool, "idem_records"+suffix)
		pgtest.Drop(t, pool, "payments"+suffix)
	})
	var out bytes.Buffer
	if err := run(context.Background(), url, suffix, &out); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	want := []string{
		`^1\. first payment +-> 201 \{"payment":\d+,"amount":25\} \(replayed: ""\); payment rows for \S+: 1$`,
		`^2\. the same request again +-> 201 \{"payment":\d+,"amount":25\} \(replayed: "true"\); payment rows for \S+: 1$`,
		`^3\. same key, another amount +-> 422 .*payment rows for \S+: 1$`,
		`^4\. a payment that fails after INSERT +-> 502 .*payment rows for \S+: 0$`,
		`^5\. its retry, still failing +-> 502 .*payment rows for \S+: 0$`,
	}
	if len(lines) != len(want) {
		t.Fatalf("demo printed %d lines, want %d:\n%s", len(lines), len(want), &out)
	}
	for i, w := range want {
		if !regexp.MustCompile(w).MatchString(lines[i]) {
			t.Errorf("line %d = %q, want %s", i+1, lines[i], w)
		}
	}
}
