package idem

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Bits of a record's flags field (see lua/lua.go).
const (
	flagBodyOmitted = 1 << iota // the body exceeded the stored-body limit
	flagGzip                    // the stored body is gzip-compressed
	knownFlags      = flagBodyOmitted | flagGzip
)

// encodeHeader encodes h as the JSON object of http.Header; an empty header
// is the empty string.
func encodeHeader(h http.Header) (string, error) {
	if len(h) == 0 {
		return "", nil
	}
	b, err := json.Marshal(h)
	if err != nil {
		return "", fmt.Errorf("encode headers: %w", err)
	}
	return string(b), nil
}

// decodeHeader is the inverse of encodeHeader. It never returns a nil
// header, so callers may add to it.
func decodeHeader(s string) (http.Header, error) {
	h := http.Header{}
	if s == "" {
		return h, nil
	}
	if err := json.Unmarshal([]byte(s), &h); err != nil {
		return nil, fmt.Errorf("decode headers: %w", err)
	}
	if h == nil { // "null"
		h = http.Header{}
	}
	return h, nil
}

// encodeBody returns what to store for rec's body and the record's flags. A
// body above threshold (> 0) is gzip-compressed when that makes it smaller.
func encodeBody(rec *Record, threshold int) (string, int) {
	if rec.BodyOmitted {
		return "", flagBodyOmitted
	}
	if threshold <= 0 || len(rec.Body) <= threshold {
		return string(rec.Body), 0
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
		return string(rec.Body), 0
	}
	return buf.String(), flagGzip
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

// errMalformedReply is wrapped by every error of decodeAcquireReply.
var errMalformedReply = errors.New("malformed acquire reply")

// decodeAcquireReply decodes the reply of lua/acquire.lua as go-redis
// returns it: a []any whose first element is the outcome, integers as
// int64 and strings as string. It checks every element and returns an error
// wrapping errMalformedReply instead of guessing.
func decodeAcquireReply(v any) (Acquisition, error) {
	fail := func(format string, args ...any) (Acquisition, error) {
		return Acquisition{}, fmt.Errorf("%w: %s", errMalformedReply, fmt.Sprintf(format, args...))
	}
	arr, ok := v.([]any)
	if !ok || len(arr) == 0 {
		return fail("want a non-empty array, got %T", v)
	}
	outcome, ok := arr[0].(string)
	if !ok {
		return fail("outcome is %T, want string", arr[0])
	}
	var want int
	switch outcome {
	case "mismatch":
		want = 1
	case "proceed", "recovered", "conflict":
		want = 2
	case "replay":
		want = 5
	default:
		return fail("unknown outcome %q", outcome)
	}
	if len(arr) != want {
		return fail("%s has %d elements, want %d", outcome, len(arr), want)
	}
	switch outcome {
	case "mismatch":
		return Acquisition{Outcome: OutcomeMismatch}, nil
	case "conflict":
		ms, ok := arr[1].(int64)
		if !ok || ms < 1 {
			return fail("conflict remaining %v (%T), want a positive integer", arr[1], arr[1])
		}
		if ms > int64(maxDuration/time.Millisecond) {
			return fail("conflict remaining %d ms out of range", ms)
		}
		return Acquisition{Outcome: OutcomeConflict, Remaining: time.Duration(ms) * time.Millisecond}, nil
	case "proceed", "recovered":
		fence, ok := arr[1].(int64)
		if !ok || fence < 1 {
			return fail("%s fence %v (%T), want a positive integer", outcome, arr[1], arr[1])
		}
		acq := Acquisition{Outcome: OutcomeProceed, Fence: fence}
		if outcome == "recovered" {
			acq.Outcome = OutcomeRecovered
		}
		return acq, nil
	}
	rec, err := decodeRecord(arr[1], arr[2], arr[3], arr[4])
	if err != nil {
		return fail("replay: %v", err)
	}
	return Acquisition{Outcome: OutcomeReplay, Record: rec}, nil
}

// maxDuration is the longest time.Duration.
const maxDuration = time.Duration(1<<63 - 1)

// decodeRecord decodes the status, headers, body and flags of a replay.
func decodeRecord(status, headers, body, flags any) (*Record, error) {
	st, ok := status.(int64)
	if !ok || st < 100 || st > 999 {
		return nil, fmt.Errorf("status %v (%T), want an integer in 100..999", status, status)
	}
	hs, ok := headers.(string)
	if !ok {
		return nil, fmt.Errorf("headers are %T, want string", headers)
	}
	bs, ok := body.(string)
	if !ok {
		return nil, fmt.Errorf("body is %T, want string", body)
	}
	fl, ok := flags.(int64)
	if !ok || fl < 0 || fl&^knownFlags != 0 {
		return nil, fmt.Errorf("flags %v (%T), want an integer of known bits", flags, flags)
	}
	h, err := decodeHeader(hs)
	if err != nil {
		return nil, err
	}
	rec := &Record{Status: int(st), Header: h, BodyOmitted: fl&flagBodyOmitted != 0}
	if rec.BodyOmitted {
		if bs != "" || fl&flagGzip != 0 {
			return nil, errors.New("omitted body is not empty")
		}
		return rec, nil
	}
	if rec.Body, err = decodeBody(bs, fl); err != nil {
		return nil, err
	}
	return rec, nil
}
