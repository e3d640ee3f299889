package idem

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"reflect"
)

// ServeStrict is Serve for oapi-codegen's strict server, where the body was
// already decoded. run calls the strict handler with the given context and
// captures its response object with [Capture]. The returned Response is what
// the wrapper must write (fresh, replayed, or a problem); a non-nil error is
// the handler's own error, returned after the lease was released.
//
// r supplies the key header, method, path, query and fingerprint headers;
// its body is not read. A typed JSON body is bounded by the body limit once
// re-encoded.
func (e *Engine) ServeStrict(ctx context.Context, r *http.Request, op *Operation, body Body, run func(ctx context.Context) (*Response, error)) (*Response, error) {
	run = requireResponse(op, run)
	key, hasKey, prob := e.headerKey(r, op)
	switch {
	case prob != nil:
		return prob.Response(), nil
	case op.keyHeader() != "" && !hasKey: // optional key absent: unprotected
		return run(ctx)
	}
	pl, prob, err := body.payload(op, e.cfg.bodyLimit)
	switch {
	case err != nil:
		return nil, err
	case prob != nil:
		return prob.Response(), nil
	}
	k, prob := e.identify(r, op, key, pl)
	switch {
	case prob != nil:
		return prob.Response(), nil
	case k == nil:
		return run(ctx)
	}
	o := e.protect(ctx, k, r, nil, run)
	switch o.kind {
	case ran:
		return o.resp, o.err
	case degraded:
		resp, err := run(ctx)
		if resp != nil {
			if resp.Header == nil {
				resp.Header = http.Header{}
			}
			resp.Header.Set(HeaderDegraded, "true")
		}
		return resp, err
	}
	return o.problem(), nil
}

// Body is what a strict wrapper knows of the request body, for fingerprinting
// and body keys.
type Body struct {
	json   any
	reader *io.Reader
	raw    []byte
	isJSON bool
	isSet  bool
}

// JSONBody is a decoded JSON body (a typed request body, usually a pointer);
// it is re-encoded canonically for the fingerprint. A nil pointer means no body.
func JSONBody(v any) Body { return Body{json: v, isJSON: true, isSet: true} }

// ReaderBody is a streamed body (application/octet-stream and other raw
// types): the engine reads it, bounded by the body limit, and replaces *r
// with a reader over the same bytes so the handler still sees them.
func ReaderBody(r *io.Reader) Body { return Body{reader: r, isSet: true} }

// RawBody is a body already held as bytes (text/plain), hashed as is.
func RawBody(b []byte) Body { return Body{raw: b, isSet: true} }

// NoBody is an operation without a request body.
func NoBody() Body { return Body{} }

// requireResponse makes run's (nil, nil), which no response can be
// written from, an error: the lease is released and the wrapper answers 500.
func requireResponse(op *Operation, run func(ctx context.Context) (*Response, error)) func(ctx context.Context) (*Response, error) {
	return func(ctx context.Context) (*Response, error) {
		resp, err := run(ctx)
		if resp == nil && err == nil {
			return nil, fmt.Errorf("idem: %s: the strict handler returned no response", op.ID)
		}
		return resp, err
	}
}

// payload reads the body as the fingerprint sees it, bounded by limit. An
// error means a typed body that does not encode as JSON.
func (b Body) payload(op *Operation, limit int64) (payload, *Problem, error) {
	switch {
	case !b.isSet:
		return payload{}, nil, nil
	case b.isJSON:
		if isNil(b.json) {
			return payload{}, nil, nil
		}
		raw, err := json.Marshal(b.json)
		if err != nil {
			return payload{}, nil, fmt.Errorf("idem: encode request body for the fingerprint: %w", err)
		}
		if int64(len(raw)) > limit {
			return payload{}, tooLargeProblem(limit), nil
		}
		return jsonPayload(op, raw), nil, nil
	case b.reader != nil:
		if *b.reader == nil {
			return payload{}, nil, nil
		}
		raw, err := readAtMost(*b.reader, limit+1, -1)
		if err != nil {
			return payload{}, problemf(http.StatusBadRequest, CodeBodyUnreadable, "the request body could not be read: %v", err), nil
		}
		if int64(len(raw)) > limit {
			return payload{}, tooLargeProblem(limit), nil
		}
		*b.reader = bytes.NewReader(raw)
		return payload{raw: raw}, nil, nil
	default:
		if int64(len(b.raw)) > limit {
			return payload{}, tooLargeProblem(limit), nil
		}
		return payload{raw: b.raw}, nil, nil
	}
}

// isNil reports whether v is nil or a nil pointer, map, slice or interface.
func isNil(v any) bool {
	if v == nil {
		return true
	}
	switch rv := reflect.ValueOf(v); rv.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Interface:
		return rv.IsNil()
	}
	return false
}
