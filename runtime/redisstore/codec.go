package redisstore

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	idem "github.com/idemgen/idemgen/runtime"
)

// Bits of a result's flags (see lua/lua.go).
const (
	flagBodyOmitted = 1 << iota // the body exceeded the stored-body limit
	flagGzip                    // the stored body is gzip-compressed
	knownFlags      = flagBodyOmitted | flagGzip
)

// Record states, the first line of a stored record (see lua/lua.go).
const (
	stateInProgress = 'I'
	stateCompleted  = 'C'
)

// encodeResult encodes rec as the result part of a completed record (see
// lua/lua.go): status, flags and header length on one line, then the header
// lines, then the body, gzip-compressed when it is longer than threshold
// (> 0) and that makes it smaller.
//
// Header names net/http would not send (empty, or holding a byte that is
// not a token character) are dropped, and CR and LF in values become spaces,
// as net/http does when it writes a response: a replay carries what the
// first client was sent.
func encodeResult(rec *idem.Record, threshold int) []byte {
	body, flags := encodeBody(rec, threshold)
	var nameBuf [8]string
	names := nameBuf[:0]
	hlen := 0
	for name, values := range rec.Header {
		if !validHeaderName(name) {
			continue
		}
		names = append(names, name)
		for _, v := range values {
			hlen += len(name) + len(": ") + len(v) + len("\n")
		}
	}
	slices.Sort(names) // the same response is stored as the same bytes

	dst := make([]byte, 0, 3*20+3+hlen+len(body))
	dst = strconv.AppendInt(dst, int64(rec.Status), 10)
	dst = append(dst, ' ')
	dst = strconv.AppendInt(dst, int64(flags), 10)
	dst = append(dst, ' ')
	dst = strconv.AppendInt(dst, int64(hlen), 10)
	dst = append(dst, '\n')
	for _, name := range names {
		for _, v := range rec.Header[name] {
			dst = append(dst, name...)
			dst = append(dst, ": "...)
			start := len(dst)
			dst = append(dst, v...)
			for i := start; i < len(dst); i++ {
				if dst[i] == '\r' || dst[i] == '\n' {
					dst[i] = ' '
				}
			}
			dst = append(dst, '\n')
		}
	}
	return append(dst, body...)
}

// validHeaderName reports whether name is a non-empty HTTP token (RFC 9110
// section 5.6.2), the names net/http writes.
func validHeaderName(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, c) >= 0 {
			return false
		}
	}
	return true
}

// encodeBody returns what to store for rec's body and the result's flags. A
// body above threshold (> 0) is gzip-compressed when that makes it smaller.
func encodeBody(rec *idem.Record, threshold int) ([]byte, int) {
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

// storedRecord is a record as Redis holds it (see lua/lua.go), decoded.
type storedRecord struct {
	state       byte // stateInProgress or stateCompleted
	fingerprint string

	// In progress only.
	owner     string
	fence     int64
	abandoned int64 // ms the record outlives its lease: the lease left is PTTL - abandoned

	// Completed only.
	result     *idem.Record
	flags      int64 // as stored
	storedBody int   // bytes stored for the body, after compression
}

// parseRecord decodes a stored record, checking every part of it.
func parseRecord(v string) (storedRecord, error) {
	var r storedRecord
	state, rest, ok := strings.Cut(v, "\n")
	if !ok || len(state) != 1 || (state[0] != stateInProgress && state[0] != stateCompleted) {
		return r, errors.New("record does not start with a state line")
	}
	r.state = state[0]
	if r.fingerprint, rest, ok = strings.Cut(rest, "\n"); !ok || r.fingerprint == "" {
		return r, errors.New("record has no fingerprint")
	}
	if r.state == stateCompleted {
		err := r.parseResult(rest)
		return r, err
	}
	var fence, abandoned string
	if r.owner, rest, ok = strings.Cut(rest, "\n"); !ok || r.owner == "" {
		return r, errors.New("in-progress record has no owner")
	}
	if fence, abandoned, ok = strings.Cut(rest, "\n"); !ok {
		return r, errors.New("in-progress record has no abandoned TTL")
	}
	var err error
	if r.fence, err = parseDecimal(fence, 1, 1<<53); err != nil {
		return r, fmt.Errorf("in-progress record: fence %w", err)
	}
	if r.abandoned, err = parseDecimal(abandoned, 0, 1<<53); err != nil {
		return r, fmt.Errorf("in-progress record: abandoned TTL %w", err)
	}
	return r, nil
}

// parseResult decodes the result part of a completed record into r.
func (r *storedRecord) parseResult(v string) error {
	line, rest, ok := strings.Cut(v, "\n")
	if !ok {
		return errors.New("result has no status line")
	}
	st, fl, ok1 := strings.Cut(line, " ")
	fl, hl, ok2 := strings.Cut(fl, " ")
	if !ok1 || !ok2 {
		return fmt.Errorf("result status line %q, want status, flags and header length", line)
	}
	status, err := parseDecimal(st, 100, 999)
	if err != nil {
		return fmt.Errorf("result status %w", err)
	}
	if r.flags, err = parseDecimal(fl, 0, knownFlags); err != nil {
		return fmt.Errorf("result flags %w", err)
	}
	hlen, err := parseDecimal(hl, 0, int64(len(rest)))
	if err != nil {
		return fmt.Errorf("result header length %w", err)
	}
	rec := &idem.Record{Status: int(status), BodyOmitted: r.flags&flagBodyOmitted != 0}
	if rec.Header, err = parseHeader(rest[:hlen]); err != nil {
		return err
	}
	stored := rest[hlen:]
	r.storedBody = len(stored)
	if rec.BodyOmitted {
		if stored != "" || r.flags&flagGzip != 0 {
			return errors.New("omitted body is not empty")
		}
	} else if rec.Body, err = decodeBody(stored, r.flags); err != nil {
		return err
	}
	r.result = rec
	return nil
}

// parseHeader decodes the "Name: value\n" lines of a result. It never
// returns a nil header, so callers may add to it. Names and values share
// the record's memory.
func parseHeader(s string) (http.Header, error) {
	n := strings.Count(s, "\n")
	h := make(http.Header, n)
	if s == "" {
		return h, nil
	}
	if s[len(s)-1] != '\n' {
		return nil, errors.New("header block does not end with a newline")
	}
	values := make([]string, 0, n) // one array backs every value
	group, first := "", 0          // the name being read and its first value
	for line := range strings.Lines(s) {
		name, value, ok := strings.Cut(line[:len(line)-1], ": ")
		if !ok || !validHeaderName(name) {
			return nil, fmt.Errorf("header line %q, want \"Name: value\"", line)
		}
		values = append(values, value)
		if name != group {
			if _, dup := h[name]; dup {
				return nil, fmt.Errorf("values of header %q are not together", name)
			}
			group, first = name, len(values)-1
		}
		h[name] = values[first:len(values):len(values)]
	}
	return h, nil
}

// parseDecimal parses a decimal integer in [lo, hi], without sign or
// leading zeros.
func parseDecimal(s string, lo, hi int64) (int64, error) {
	if s == "" || (len(s) > 1 && s[0] == '0') || s[0] < '0' || s[0] > '9' {
		return 0, fmt.Errorf("%q is not a decimal", s)
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < lo || n > hi {
		return 0, fmt.Errorf("%q is not an integer in %d..%d", s, lo, hi)
	}
	return n, nil
}

// errMalformedReply is wrapped by every error of decodeAcquireReply.
var errMalformedReply = errors.New("malformed acquire reply")

// decodeAcquireReply decodes the reply of lua/acquire.lua as go-redis
// returns it: a []any whose first element is the outcome, integers as
// int64 and strings as string. It checks every element and returns an error
// wrapping errMalformedReply instead of guessing.
func decodeAcquireReply(v any) (idem.Acquisition, error) {
	fail := func(format string, args ...any) (idem.Acquisition, error) {
		return idem.Acquisition{}, fmt.Errorf("%w: %s", errMalformedReply, fmt.Sprintf(format, args...))
	}
	arr, ok := v.([]any)
	if !ok || len(arr) == 0 {
		return fail("want a non-empty array, got %T", v)
	}
	outcome, ok := arr[0].(string)
	if !ok {
		return fail("outcome is %T, want string", arr[0])
	}
	want := 2
	switch outcome {
	case "mismatch":
		want = 1
	case "proceed", "recovered", "conflict", "replay":
	default:
		return fail("unknown outcome %q", outcome)
	}
	if len(arr) != want {
		return fail("%s has %d elements, want %d", outcome, len(arr), want)
	}
	switch outcome {
	case "mismatch":
		return idem.Acquisition{Outcome: idem.OutcomeMismatch}, nil
	case "conflict":
		ms, ok := arr[1].(int64)
		if !ok || ms < 1 {
			return fail("conflict remaining %v (%T), want a positive integer", arr[1], arr[1])
		}
		if ms > int64(maxDuration/time.Millisecond) {
			return fail("conflict remaining %d ms out of range", ms)
		}
		return idem.Acquisition{Outcome: idem.OutcomeConflict, Remaining: time.Duration(ms) * time.Millisecond}, nil
	case "proceed", "recovered":
		fence, ok := arr[1].(int64)
		if !ok || fence < 1 {
			return fail("%s fence %v (%T), want a positive integer", outcome, arr[1], arr[1])
		}
		acq := idem.Acquisition{Outcome: idem.OutcomeProceed, Fence: fence}
		if outcome == "recovered" {
			acq.Outcome = idem.OutcomeRecovered
		}
		return acq, nil
	}
	s, ok := arr[1].(string)
	if !ok {
		return fail("replay record is %T, want string", arr[1])
	}
	r, err := parseRecord(s)
	if err == nil && r.state != stateCompleted {
		err = errors.New("record is not completed")
	}
	if err != nil {
		return fail("replay: %v", err)
	}
	return idem.Acquisition{Outcome: idem.OutcomeReplay, Record: r.result}, nil
}

// maxDuration is the longest time.Duration.
const maxDuration = time.Duration(1<<63 - 1)
