package redisstore

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"net/http"
	"runtime"
	"testing"

	"github.com/idemgen/idemgen/runtime/idemstore"
)

// TestEncodeResultAllocatesOneRecord: encoding the result of a
// 1,000,000-byte response allocates one buffer of the record's size,
// compressed or not (a gzip buffer grown twice and a copy into the
// record would make it 2.4 x the body). The bound is a ratio of bytes
// allocated to the bytes stored, measured without the race detector.
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
		{"compresses well", bytes.Repeat([]byte(`{"sku":"SKU-000042","quantity":2,"name":"teapot"},`), size/50), DefaultCompressOver},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec.Body = tc.body
			_, result := encodeResult(rec, tc.threshold, true) // and a compressor in the pool
			stored := len(result)
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			for range rounds {
				encodeResult(rec, tc.threshold, true)
			}
			runtime.ReadMemStats(&after)
			ratio := float64(after.TotalAlloc-before.TotalAlloc) / rounds / float64(stored)
			if ratio > maxRatio {
				t.Errorf("encoding a %d-byte body into a %d-byte record allocates %.2f x the record, want at most %.1f x", len(tc.body), stored, ratio, maxRatio)
			}
		})
	}
}
