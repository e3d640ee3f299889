package e2e_test

import (
	"crypto/rand"
	"encoding/base64"
	"net/http"
	"runtime"
	"strconv"
	"testing"

	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemop"
	"github.com/idemgen/idemgen/runtime/redisstore"
	"github.com/idemgen/idemgen/runtime/redisstore/redistest"
)

// TestLargeCompletionAllocation: a first request whose handler answers a
// 1,000,000-byte body (in one Write, as a marshalled document is written)
// is stored in real Redis and answered; the bytes the whole request
// allocates, measured over sequential requests, stay within a small
// multiple of the body: the recorder's buffer and one encoded record, not
// a copy per layer (which took 4.4 MiB of heap per in-flight 1 MB
// response). The bound is a ratio to the body size, not a timing.
func TestLargeCompletionAllocation(t *testing.T) {
	const size, requests, maxRatio = 1_000_000, 20, 2.5
	if raceEnabled {
		t.Skip("allocation bounds are measured without -race (its instrumentation allocates, and gzip runs ~100 times slower)")
	}
	rdb := redistest.Real(t)
	prefix := redistest.Prefix(t)
	e := idem.NewEngine(redisstore.New(rdb, redisstore.WithPrefix(prefix)), idem.WithLogger(nil))
	op := idemop.Operation{ID: "ExportReport"}
	// A JSON-like body that compresses about as a real document does
	// (base64 of random bytes: 3/4 of it after gzip), so that the store's
	// compression does not hide the copies.
	raw := make([]byte, size*3/4)
	rand.Read(raw)
	body := make([]byte, size)
	base64.StdEncoding.Encode(body, raw[:base64.StdEncoding.DecodedLen(size)])
	h := e.Middleware(op)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		w.Write(body)
	}))
	client := &discardWriter{header: http.Header{}}
	serve := func(key string) {
		r := engineReq("POST", "/reports", `{}`, "Idempotency-Key", key)
		h.ServeHTTP(client, r)
		clear(client.header)
	}
	for i := range 3 { // warm: connections, script cache, buffers
		serve("warm-" + strconv.Itoa(i))
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := range requests {
		serve("k-" + strconv.Itoa(i))
	}
	runtime.ReadMemStats(&after)
	perRequest := float64(after.TotalAlloc-before.TotalAlloc) / requests
	ratio := perRequest / size
	t.Logf("%.0f bytes allocated per 1,000,000-byte completion: %.2f x the body", perRequest, ratio)
	if ratio > maxRatio {
		t.Errorf("a 1,000,000-byte completion allocates %.2f x its body (%.0f bytes), want at most %.1f x", ratio, perRequest, maxRatio)
	}
}
