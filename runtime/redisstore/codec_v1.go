package redisstore

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/idemgen/idemgen/runtime/idemstore"
)

// The text record, format 1, which the store wrote before the compact one
// (lua/lua.go). The store reads it still, so that a retry within the
// retention of a record written before an upgrade is replayed, and a lease
// taken before it is honoured; it never writes one. It is the state line,
// then the fingerprint as given, one field a line:
//
//	in progress:  "I\n" fingerprint "\n" owner "\n" fence "\n" abandoned
//	completed:    "C\n" fingerprint "\n" status " " flags " " header_length "\n" header body
//
// with header header_length bytes of "Name: value\n" lines.

// parseRecordV1 decodes a record of format 1, checking every part of it.
func parseRecordV1(v string) (storedRecord, error) {
	r := storedRecord{format: 1}
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
	return r, r.parseLease(rest)
}

// parseResult decodes the result part of a completed record of format 1
// into r.
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
	rec := &idemstore.Record{Status: int(status), BodyOmitted: r.flags&flagBodyOmitted != 0}
	if rec.Header, err = parseHeader(rest[:hlen]); err != nil {
		return err
	}
	return r.setResult(rec, rest[hlen:])
}

// parseHeader decodes the "Name: value\n" lines of a result of format 1. It never
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
