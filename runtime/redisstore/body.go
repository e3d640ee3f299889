package redisstore

import (
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync"

	"github.com/idemgen/idemgen/runtime/idemstore"
)

// encodeBody returns what to store for rec's body, the result's flags and
// a function to call once the body is copied. A body above threshold (> 0)
// is gzip-compressed when that makes it smaller and a compressor is free:
// into the compressor's own scratch buffer, reused from one body to the
// next, so that the record (encodeResult) is the only allocation of the
// body's size, however large (a compression buffer grown as it fills
// would copy a 1 MB response twice more before the record). A compression that
// would not be smaller stops as soon as its output reaches the body's size.
func encodeBody(rec *idemstore.Record, threshold int) ([]byte, int, func()) {
	if rec.BodyOmitted {
		return nil, flagBodyOmitted, noRelease
	}
	if threshold <= 0 || len(rec.Body) <= threshold {
		return rec.Body, 0, noRelease
	}
	c := getCompressor()
	if c == nil { // every compressor is busy: stored as it is, not waited for
		return rec.Body, 0, noRelease
	}
	out := boundedAppender{buf: c.scratch[:0], limit: len(rec.Body) - 1}
	c.zw.Reset(&out)
	_, err := c.zw.Write(rec.Body)
	if err == nil {
		err = c.zw.Close()
	}
	c.zw.Reset(io.Discard) // drop the reference to out
	c.scratch = out.buf[:0]
	if err != nil {
		putCompressor(c)
		return rec.Body, 0, noRelease
	}
	return out.buf, flagGzip, func() { putCompressor(c) }
}

func noRelease() {}

// boundedAppender appends to buf as long as it stays within limit bytes,
// and refuses the write that would pass it.
type boundedAppender struct {
	buf   []byte
	limit int
}

// errNoGain stops a compression whose output would not be smaller.
var errNoGain = errors.New("compressed body not smaller")

func (a *boundedAppender) Write(p []byte) (int, error) {
	if len(a.buf)+len(p) > a.limit {
		return 0, errNoGain
	}
	a.buf = append(a.buf, p...)
	return len(p), nil
}

// compressor is a gzip.Writer with the scratch buffer it compresses into.
type compressor struct {
	zw      *gzip.Writer
	scratch []byte
}

// At most maxCompressors compressors exist, kept for reuse: each holds
// about 800 KB of gzip state plus a scratch buffer as large as the largest
// body it compressed (200 concurrent large responses used to hold 200
// gzip.Writers and as many growing buffers). Compression is bound by CPU,
// so more of them than CPUs adds memory, not speed; and it runs inside the
// completion's store timeout, so a body that finds them all busy is stored
// as it is rather than wait (a busy process sheds the optional work, not
// the completion).
var (
	maxCompressors = 2 * runtime.GOMAXPROCS(0)
	compressors    = make(chan *compressor, maxCompressors) // idle ones
	compressorsOut = make(chan struct{}, maxCompressors)    // one per compressor in use
	gzipReaders    sync.Pool                                // *gzip.Reader
)

// getCompressor returns an idle compressor, a new one if fewer than
// maxCompressors exist, or nil when they are all in use.
func getCompressor() *compressor {
	select {
	case compressorsOut <- struct{}{}:
	default:
		return nil
	}
	select {
	case c := <-compressors:
		return c
	default:
		return &compressor{zw: gzip.NewWriter(io.Discard)}
	}
}

// putCompressor makes c idle again.
func putCompressor(c *compressor) {
	compressors <- c // never blocks: at most maxCompressors exist
	<-compressorsOut
}

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
