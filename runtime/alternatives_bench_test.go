//go:build goexperiment.jsonv2

package idem_test

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"encoding/json/jsontext"
	"sync"
	"testing"
)

// Benchmarks of alternatives to what the runtime does today, so that what
// they would gain is measured before one is taken. They need
// encoding/json/jsontext, which Go 1.26 ships behind GOEXPERIMENT=jsonv2:
//
//	GOEXPERIMENT=jsonv2 go test -run '^$' -bench 'BenchmarkAlternative' ./runtime/

// BenchmarkAlternativeCanonicalJSON compares the runtime's way of
// canonicalising a JSON body (decode into map[string]any with UseNumber,
// then json.Marshal) with jsontext's RFC 8785 canonicalisation in place.
func BenchmarkAlternativeCanonicalJSON(b *testing.B) {
	b.Run("decode-marshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			dec := json.NewDecoder(bytes.NewReader(benchReqBody))
			dec.UseNumber()
			var doc any
			if err := dec.Decode(&doc); err != nil {
				b.Fatal(err)
			}
			if _, err := json.Marshal(doc); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("jsontext-canonicalize", func(b *testing.B) {
		b.ReportAllocs()
		buf := make([]byte, 0, 2*len(benchReqBody))
		for b.Loop() {
			v := jsontext.Value(append(buf[:0], benchReqBody...))
			if err := v.Canonicalize(); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkAlternativeGzip compares a gzip.Writer made per body, as the
// store's encodeBody does, with one taken from a sync.Pool and Reset, for a
// 2 KiB JSON body.
func BenchmarkAlternativeGzip(b *testing.B) {
	body := benchJSON(2048)
	b.Run("new-writer-per-body", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var buf bytes.Buffer
			zw := gzip.NewWriter(&buf)
			_, _ = zw.Write(body)
			_ = zw.Close()
		}
	})
	b.Run("pooled-writer", func(b *testing.B) {
		pool := sync.Pool{New: func() any { return gzip.NewWriter(nil) }}
		b.ReportAllocs()
		for b.Loop() {
			var buf bytes.Buffer
			zw := pool.Get().(*gzip.Writer)
			zw.Reset(&buf)
			_, _ = zw.Write(body)
			_ = zw.Close()
			pool.Put(zw)
		}
	})
}
