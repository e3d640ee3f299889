package redisstore

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/idemgen/idemgen/runtime/idemstore"
)

// encodeBody returns what to store for rec's body and the result's flags. A
// body above threshold (> 0) is gzip-compressed when that makes it smaller.
func encodeBody(rec *idemstore.Record, threshold int) ([]byte, int) {
	if rec.BodyOmitted {
		return nil, flagBodyOmitted
	}
	if threshold <= 0 || len(rec.Body) <= threshold {
		return rec.Body, 0
	}
	var buf bytes.Buffer
	buf.Grow(len(rec.Body) / 2)
	zw := gzipWriters.Get().(*gzip.Writer)
	zw.Reset(&buf)
	// Writes to a bytes.Buffer cannot fail.
	_, _ = zw.Write(rec.Body)
	_ = zw.Close()
	zw.Reset(io.Discard) // drop the reference to buf
	gzipWriters.Put(zw)
	if buf.Len() >= len(rec.Body) {
		return rec.Body, 0
	}
	return buf.Bytes(), flagGzip
}

// gzipWriters and gzipReaders are reused: a gzip.Writer holds about 800 KB
// of compressor state, far more than the bodies it compresses.
var (
	gzipWriters = sync.Pool{New: func() any { return gzip.NewWriter(io.Discard) }}
	gzipReaders sync.Pool // *gzip.Reader
)

// maxDecompressedBody bounds a decompressed body: the store never compresses
// more than the engine's stored-body limit allows, so anything much larger is
// a corrupt or hostile record, not a response.
const maxDecompressedBody = 64 << 20

// decodeBody is the inverse of encodeBody.
func decodeBody(stored string, flags int64) ([]byte, error) {
	if flags&flagGzip == 0 {
		return []byte(stored), nil
	}
	src := strings.NewReader(stored)
	zr, _ := gzipReaders.Get().(*gzip.Reader)
	var err error
	if zr == nil {
		zr, err = gzip.NewReader(src)
	} else {
		err = zr.Reset(src)
	}
	if err != nil {
		return nil, fmt.Errorf("decompress body: %w", err)
	}
	defer gzipReaders.Put(zr)
	body, err := io.ReadAll(io.LimitReader(zr, maxDecompressedBody+1))
	if err != nil {
		return nil, fmt.Errorf("decompress body: %w", err)
	}
	if len(body) > maxDecompressedBody {
		return nil, fmt.Errorf("decompress body: larger than %d bytes", maxDecompressedBody)
	}
	return body, nil
}
