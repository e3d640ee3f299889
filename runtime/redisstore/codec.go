package redisstore

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/idemgen/idemgen/runtime/idemstore"
)

// Bits of a result's flags (see lua/lua.go): the low bits of a compact
// result's meta byte, and the flags field of a result of the first format.
const (
	flagBodyOmitted = 1 << iota // the body exceeded the stored-body limit
	flagGzip                    // the stored body is gzip-compressed
	knownFlags      = flagBodyOmitted | flagGzip
)

// Record states, as storedRecord.state holds them in either format.
const (
	stateInProgress = 'I'
	stateCompleted  = 'C'
)

// The compact record (format 2, see lua/lua.go): a tag byte, the stored
// fingerprint, then the lease or the result.
const (
	tagInProgress = 'i'
	tagCompleted  = 'c'
	fpSize        = 16 // bytes of a stored fingerprint

	metaTypeShift = 2                  // meta bits 2-4: the Content-Type code
	metaType      = 7 << metaTypeShift // mask of the Content-Type code
	metaHeader    = 1 << 5             // a header block follows the meta byte
	metaBase      = 1 << 6             // always set in a meta byte, so that it is printable ASCII
	knownMeta     = knownFlags | metaType | metaHeader | metaBase

	// A completed record that carries its body's length (format 3): the
	// tag is tagSized | the meta bits 0-5, and the status and the body's
	// length share one uvarint (length << statusBits | status).
	tagSized   = 0x80
	tagMeta    = 0x3f // the meta bits a sized tag carries
	statusBits = 10   // a status (100..999) fits 10 bits
)

// isSizedTag reports whether b is the tag of a completed record of format
// 3.
func isSizedTag(b byte) bool { return b&^tagMeta == tagSized }

// tagArgs are the tags as complete.lua's argument, boxed once: a string
// in an interface would cost an allocation per completion.
var tagArgs = func() (a [256]any) {
	for i := range a {
		a[i] = string([]byte{byte(i)})
	}
	return a
}()

// contentTypes are the Content-Type values a compact result stores as a
// code (meta bits 2-4) instead of a header entry. The codes are part of the
// stored format: never change or reuse one, only add (there is no room for
// more than 7).
var contentTypes = [...]string{
	1: "application/json",
	2: "application/json; charset=utf-8",
	3: "application/problem+json",
	4: "text/plain; charset=utf-8",
	5: "text/html; charset=utf-8",
	6: "application/octet-stream",
	7: "application/xml",
}

// headerNames are the header names a compact result's header entries store
// as a one-byte code (the default replay allow-list); 0 introduces a name
// spelled out. Part of the stored format, like contentTypes.
var headerNames = [...]string{
	1: "Content-Type",
	2: "Location",
	3: "Etag",
	4: "Content-Language",
	5: "Link",
}

// storedFingerprint is the fingerprint a record keeps: 16 bytes. For the
// engine's fingerprint, a SHA-256 in 64 lowercase hex digits, it is the
// first half of the hash; for any other string, the first half of the
// string's SHA-256. 128 bits keep a collision out of reach: a fingerprint is
// only ever compared with the one stored under the same key and scope, so
// a false replay needs two requests under one key whose hashes agree, by
// accident (2^-128 per pair) or by a client that computes 2^64 hashes to
// be replayed its own other request's answer.
func storedFingerprint(fp string) string {
	var b [fpSize]byte
	if len(fp) == 2*sha256.Size {
		if _, err := hex.Decode(b[:], []byte(fp[:2*fpSize])); err == nil && isLowerHex(fp[2*fpSize:]) {
			return string(b[:])
		}
	}
	sum := sha256.Sum256([]byte(fp))
	return string(sum[:fpSize])
}

// isLowerHex reports whether s holds only the digits hex.EncodeToString
// writes.
func isLowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// encodeResult encodes rec as the completed record's tag and the result
// part that complete.lua appends to the tag and the fingerprint (see
// lua/lua.go). Sized (format 3), the tag is tagSized with the meta bits
// (flags, the Content-Type code, whether header entries follow), then the
// status and the body's length in one uvarint, the header entries and the
// body; such a record decodes only whole, and a record cut short anywhere
// is an error, never a shorter body. Unsized (format 2, what the previous
// version reads, for the rollout: WithUnsizedRecords, package previouslayout), the tag is 'c' and the
// result the status in two bytes, the meta byte, the header entries and
// the body. The body is gzip-compressed when it is longer than threshold
// (> 0) and that makes it smaller.
//
// Header names net/http would not send (empty, or holding a byte that is
// not a token character) are dropped, and CR and LF in values become spaces,
// as net/http does when it writes a response: a replay carries what the
// first client was sent.
func encodeResult(rec *idemstore.Record, threshold int, sized bool) (tag byte, result []byte) {
	body, flags, release := encodeBody(rec, threshold)
	defer release() // body may be a compressor's scratch buffer until copied
	meta := byte(metaBase | flags)
	var nameBuf [8]string
	names := nameBuf[:0]
	hlen := 0
	for name, values := range rec.Header {
		if !validHeaderName(name) {
			continue
		}
		if code := contentTypeCode(name, values); code != 0 {
			meta |= code << metaTypeShift
			continue
		}
		names = append(names, name)
		ns := nameSize(name)
		for _, v := range values {
			hlen += ns + uvarintSize(len(v)) + len(v)
		}
	}
	slices.Sort(names) // the same response is stored as the same bytes
	if hlen > 0 {
		meta |= metaHeader
	}

	dst := make([]byte, 0, 3+2*binary.MaxVarintLen64+hlen+len(body))
	if sized {
		tag = tagSized | meta&tagMeta
		dst = binary.AppendUvarint(dst, uint64(len(body))<<statusBits|uint64(rec.Status))
	} else {
		tag = tagCompleted
		dst = append(dst, byte('0'+rec.Status/100), byte(' '+rec.Status%100), meta)
	}
	if hlen > 0 {
		dst = binary.AppendUvarint(dst, uint64(hlen))
	}
	for _, name := range names {
		code := slices.Index(headerNames[1:], name) + 1
		for _, v := range rec.Header[name] {
			dst = append(dst, byte(code))
			if code == 0 {
				dst = binary.AppendUvarint(dst, uint64(len(name)))
				dst = append(dst, name...)
			}
			dst = binary.AppendUvarint(dst, uint64(len(v)))
			start := len(dst)
			dst = append(dst, v...)
			for i := start; i < len(dst); i++ {
				if dst[i] == '\r' || dst[i] == '\n' {
					dst[i] = ' '
				}
			}
		}
	}
	return tag, append(dst, body...)
}

// completedRecord is the completed record of rec as complete.lua writes it
// from an in-progress record holding fingerprint fp (16 bytes).
func completedRecord(fp string, rec *idemstore.Record, threshold int, sized bool) string {
	tag, result := encodeResult(rec, threshold, sized)
	return string([]byte{tag}) + fp + string(result)
}

// contentTypeCode is the code of a header that is a Content-Type with one
// value of contentTypes, else 0.
func contentTypeCode(name string, values []string) byte {
	if name != "Content-Type" || len(values) != 1 {
		return 0
	}
	return byte(slices.Index(contentTypes[1:], values[0]) + 1)
}

// nameSize is the bytes a header entry spends on name.
func nameSize(name string) int {
	if slices.Contains(headerNames[1:], name) {
		return 1
	}
	return 1 + uvarintSize(len(name)) + len(name)
}

// uvarintSize is the length of n as a uvarint.
func uvarintSize(n int) int {
	var b [binary.MaxVarintLen64]byte
	return len(binary.AppendUvarint(b[:0], uint64(n)))
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

// storedRecord is a record as Redis holds it (see lua/lua.go), decoded.
type storedRecord struct {
	format      int    // 3, the compact record with its body's length; 2, the compact record; 1, the text record written before it
	state       byte   // stateInProgress or stateCompleted
	fingerprint string // as stored: storedFingerprint's 16 bytes (format 2), the string given (format 1)

	// In progress only.
	owner     string
	fence     int64
	abandoned int64 // ms the record outlives its lease: the lease left is PTTL - abandoned

	// Completed only.
	result     *idemstore.Record
	flags      int64 // flagBodyOmitted and flagGzip, as stored
	storedBody int   // bytes stored for the body, after compression
}

// parseRecord decodes a stored record of either format, checking every part
// of it.
func parseRecord(v string) (storedRecord, error) {
	if v == "" || (v[0] != tagInProgress && v[0] != tagCompleted && !isSizedTag(v[0])) {
		return parseRecordV1(v)
	}
	r := storedRecord{format: 2, state: stateInProgress}
	if v[0] != tagInProgress {
		r.state = stateCompleted
	}
	if len(v) < 1+fpSize {
		return r, errors.New("record has no fingerprint")
	}
	tag := v[0]
	r.fingerprint, v = v[1:1+fpSize], v[1+fpSize:]
	switch {
	case isSizedTag(tag):
		r.format = 3
		return r, r.parseSizedResult(tag&tagMeta|metaBase, v)
	case r.state == stateCompleted:
		return r, r.parseCompactResult(v)
	}
	return r, r.parseLease(v)
}

// parseSizedResult decodes the result part of a completed record of format
// 3, whose tag carried meta, into r: it fails unless the body is exactly
// as long as the record says.
func (r *storedRecord) parseSizedResult(meta byte, v string) error {
	n, size := binary.Uvarint([]byte(v[:min(len(v), binary.MaxVarintLen64)]))
	if size <= 0 {
		return errors.New("result has no status and body length")
	}
	status, bodyLen := int(n&(1<<statusBits-1)), n>>statusBits
	if status < 100 || status > 999 {
		return fmt.Errorf("result status %d is not in 100..999", status)
	}
	return r.parseResultRest(status, meta, v[size:], bodyLen)
}

// parseLease decodes the lease of an in-progress record, owner "\n" fence
// "\n" abandoned (the same in both formats), into r.
func (r *storedRecord) parseLease(v string) error {
	var fence, abandoned string
	var ok bool
	if r.owner, v, ok = strings.Cut(v, "\n"); !ok || r.owner == "" {
		return errors.New("in-progress record has no owner")
	}
	if fence, abandoned, ok = strings.Cut(v, "\n"); !ok {
		return errors.New("in-progress record has no abandoned TTL")
	}
	var err error
	if r.fence, err = parseDecimal(fence, 1, 1<<53); err != nil {
		return fmt.Errorf("in-progress record: fence %w", err)
	}
	if r.abandoned, err = parseDecimal(abandoned, 0, 1<<53); err != nil {
		return fmt.Errorf("in-progress record: abandoned TTL %w", err)
	}
	return nil
}

// parseCompactResult decodes the result part of a compact completed record
// (encodeResult's output) into r.
func (r *storedRecord) parseCompactResult(v string) error {
	if len(v) < 3 {
		return errors.New("result has no status and meta byte")
	}
	status, meta := int(v[0]-'0')*100+int(v[1]-' '), v[2]
	if v[0] < '1' || v[0] > '9' || v[1] < ' ' || v[1] >= ' '+100 {
		return fmt.Errorf("result status %q is not in 100..999", v[:2])
	}
	return r.parseResultRest(status, meta, v[3:], unsized)
}

// unsized is parseResultRest's body length of a record of format 2, which does
// not say it.
const unsized = ^uint64(0)

// parseResultRest decodes the rest of a completed record's result (the header
// entries and the body, v) into r, with its status and meta byte; bodyLen
// is how long the stored body is, or unsized.
func (r *storedRecord) parseResultRest(status int, meta byte, v string, bodyLen uint64) error {
	if meta&^knownMeta != 0 || meta&metaBase == 0 {
		return fmt.Errorf("result meta byte %#x has unknown bits", meta)
	}
	r.flags = int64(meta & knownFlags)
	rec := &idemstore.Record{Status: status, BodyOmitted: meta&flagBodyOmitted != 0}
	block := ""
	if meta&metaHeader != 0 {
		var err error
		if block, v, err = cutUvarintString(v); err != nil || block == "" {
			return errors.New("result header block length is missing or longer than the record")
		}
	}
	var err error
	if rec.Header, err = parseHeaderEntries(block, meta&metaType>>metaTypeShift); err != nil {
		return err
	}
	if bodyLen != unsized && bodyLen != uint64(len(v)) {
		return fmt.Errorf("result body is %d bytes, not the %d its record says: the record is cut short or corrupt", len(v), bodyLen)
	}
	return r.setResult(rec, v)
}

// setResult sets r's result to rec with the stored body, decoded by r's
// flags.
func (r *storedRecord) setResult(rec *idemstore.Record, stored string) error {
	r.storedBody = len(stored)
	if rec.BodyOmitted {
		if stored != "" || r.flags&flagGzip != 0 {
			return errors.New("omitted body is not empty")
		}
	} else {
		var err error
		if rec.Body, err = decodeBody(stored, r.flags); err != nil {
			return err
		}
	}
	r.result = rec
	return nil
}

// parseHeaderEntries decodes the header entries of a compact result and
// adds the Content-Type of code ctype (0: none). It never returns a nil
// header, so callers may add to it. Names and values share the record's
// memory.
func parseHeaderEntries(s string, ctype byte) (http.Header, error) {
	h := make(http.Header, 1)
	if ctype != 0 {
		h["Content-Type"] = []string{contentTypes[ctype]}
	}
	group := ""
	var values []string
	for s != "" {
		name := ""
		if code := int(s[0]); code != 0 {
			if code >= len(headerNames) {
				return nil, fmt.Errorf("header entry with unknown name code %d", code)
			}
			name, s = headerNames[code], s[1:]
		} else {
			var err error
			if name, s, err = cutUvarintString(s[1:]); err != nil || !validHeaderName(name) {
				return nil, fmt.Errorf("header entry with a malformed name %q", name)
			}
		}
		value, rest, err := cutUvarintString(s)
		if err != nil || strings.ContainsAny(value, "\r\n") {
			return nil, fmt.Errorf("header %s: malformed value %q", name, value)
		}
		s = rest
		if name != group {
			if _, dup := h[name]; dup {
				return nil, fmt.Errorf("values of header %q are not together", name)
			}
			group, values = name, nil
		}
		values = append(values, value)
		h[name] = values
	}
	return h, nil
}

// cutUvarintString cuts a uvarint length and that many bytes off s.
func cutUvarintString(s string) (field, rest string, err error) {
	n, size := binary.Uvarint([]byte(s[:min(len(s), binary.MaxVarintLen64)]))
	if size <= 0 || n > uint64(len(s)-size) {
		return "", "", errors.New("length missing or past the end")
	}
	return s[size : size+int(n)], s[size+int(n):], nil
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
