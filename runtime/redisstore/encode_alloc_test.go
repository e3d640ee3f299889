package redisstore

import (
	"crypto/rand"
	"encoding/base64"
	"net/http"
	"runtime"
	"testing"

	"github.com/idemgen/idemgen/runtime/idemstore"
)

// TestEncodeResultAllocatesOneRecord: encoding the result of a
// 1,000,000-byte response allocates one buffer of about the record's
// size, compressed or not (issue 36: a gzip buffer grown twice and a copy
// into the record made it 2.4 x the body). The bound is a ratio of bytes
// allocated to the body's size, measured without the race detector.
func TestEncodeResultAllocatesOneRecord(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation bounds are measured without -race (its instrumentation allocates, and gzip runs ~100 times slower)")
	}
	const size, rounds, maxRatio = 1_000_000, 10, 1.1
	raw := make([]byte, size*3/4)
	rand.Read(raw)
	body := make([]byte, size)
	base64.StdEncoding.Encode(body, raw) // compresses to about 3/4
	rec := &idemstore.Record{Status: http.StatusCreated, Header: http.Header{"Content-Type": {"application/json"}}, Body: body}
	for _, tc := range []struct {
		name      string
		body      []byte
		threshold int
	}{
		{"compressed", body, DefaultCompressOver},
		{"not compressed", body, 0},
		{"compression would not shrink it", raw[:size*3/4], DefaultCompressOver},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec.Body = tc.body
			encodeResult(rec, tc.threshold) // a compressor in the pool
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			for range rounds {
				encodeResult(rec, tc.threshold)
			}
			runtime.ReadMemStats(&after)
			ratio := float64(after.TotalAlloc-before.TotalAlloc) / rounds / float64(len(tc.body))
			if ratio > maxRatio {
				t.Errorf("encoding a %d-byte body allocates %.2f x it, want at most %.1f x", len(tc.body), ratio, maxRatio)
			}
		})
	}
}
