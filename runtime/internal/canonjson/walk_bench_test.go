package canonjson

import "testing"

// BenchmarkWalk canonicalises a small JSON order, the body of the
// engine's benchmarks, whose members are out of order.
func BenchmarkWalk(b *testing.B) {
	raw := []byte(`{"customer":"cus_3f9a1c","items":[{"sku":"SKU-000042","quantity":2}],"currency":"EUR","note":"leave at the door"}`)
	dst := make([]byte, 0, len(raw))
	b.ReportAllocs()
	b.SetBytes(int64(len(raw)))
	for i := 0; i < b.N; i++ {
		if _, _, ok := Walk(dst[:0], raw, nil, -1); !ok {
			b.Fatal("not JSON")
		}
	}
}
