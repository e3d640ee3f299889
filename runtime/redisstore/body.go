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

// appendBody appends what to store for rec's body to dst, which has room
// for the body as it is, and returns it with the result's flags. A body
// above threshold (> 0) is gzip-compressed straight into dst's spare room
// when that makes it smaller and a compressor is free; compression that
// would not fit stops there and the body is appended as it is. Either way dst is not grown: a
// record costs one buffer of its own size, however large the body
// (issue 36: a 1 MB response took a compression buffer grown twice, then a
// copy into the record).
func appendBody(dst []byte, rec *idemstore.Record, threshold int) ([]byte, int) {
	if rec.BodyOmitted {
		return dst, flagBodyOmitted
	}
	if threshold <= 0 || len(rec.Body) <= threshold {
		return append(dst, rec.Body...), 0
	}
	out := boundedAppender{buf: dst, limit: len(dst) + len(rec.Body) - 1}
	zw := getGzipWriter(&out)
	if zw == nil { // every writer is busy: stored as it is, not waited for
		return append(dst, rec.Body...), 0
	}
	_, err := zw.Write(rec.Body)
	if err == nil {
		err = zw.Close()
	}
	putGzipWriter(zw)
	if err != nil {
		return append(dst, rec.Body...), 0
	}
	return out.buf, flagGzip
}

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

// gzip.Writers are kept for reuse, at most gzipSlots of them at once: each
// holds about 800 KB of compressor state, far more than most bodies it
// compresses (200 concurrent large responses held 200 of them). Compression
// is bound by CPU, so more of them at once than CPUs adds memory, not
// speed; and it runs inside the completion's store timeout, so a body that
// finds every writer busy is stored as it is rather than wait (a busy
// process sheds the optional work, not the completion).
var (
	gzipSlots   = make(chan struct{}, 2*runtime.GOMAXPROCS(0))
	gzipWriters = make(chan *gzip.Writer, cap(gzipSlots))
	gzipReaders sync.Pool // *gzip.Reader
)

// getGzipWriter returns a gzip.Writer writing to w, or nil when every slot
// is taken.
func getGzipWriter(w io.Writer) *gzip.Writer {
	select {
	case gzipSlots <- struct{}{}:
	default:
		return nil
	}
	select {
	case zw := <-gzipWriters:
		zw.Reset(w)
		return zw
	default:
		return gzip.NewWriter(w)
	}
}

// putGzipWriter returns zw for reuse and frees its slot.
func putGzipWriter(zw *gzip.Writer) {
	zw.Reset(io.Discard) // drop the reference to the output
	select {
	case gzipWriters <- zw:
	default:
	}
	<-gzipSlots
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
