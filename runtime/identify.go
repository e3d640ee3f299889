package idem

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/idemgen/idemgen/runtime/idemop"
	"github.com/idemgen/idemgen/runtime/internal/canonjson"

	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/internal/deadline"
	"github.com/idemgen/idemgen/runtime/internal/keyheader"
)

// keyedRequest is a request identified for the store: its operation, the
// client's key, the composed storage key and the fingerprint.
type keyedRequest struct {
	op          *idemop.Operation
	key         string // the client's key
	storageKey  string
	fingerprint string            // apiFingerprint of sum, in hex
	token       string            // the owner token of the first acquire (acquireRequest)
	sum         [sha256.Size]byte // the request's fingerprint without the API identity
	name        *opName           // the API identity and token in storageKey
	scope       string            // the hashed scope in storageKey
	origin      idemstore.Origin  // what storageKey and fingerprint were composed of, for the store

	acquireCtx deadline.Ctx // the first acquire's context, kept here to save an allocation

	// withRecorder asks acquire to allocate the lease together with the
	// recorder its handler writes to (Engine.Serve, and CaptureContext under
	// Engine.ServeStrict), then kept in rec until taken (takeRecorder).
	withRecorder bool
	rec          atomic.Pointer[recorder]
}

// recordedLease is a lease and the recorder its handler writes to, in one
// allocation.
type recordedLease struct {
	lease
	rec recorder
}

// newLease returns a zero lease for k's new owner and, when k asks for
// one, sets k.rec to a zero recorder allocated with it.
func (k *keyedRequest) newLease() *lease {
	if !k.withRecorder {
		return new(lease)
	}
	rl := new(recordedLease)
	k.rec.Store(&rl.rec)
	return &rl.lease
}

// takeRecorder returns the zero recorder allocated with k's lease, the
// first time it is called; nil afterwards, or when there is none.
func (k *keyedRequest) takeRecorder() *recorder { return k.rec.Swap(nil) }

// newKeyedRequest composes the storage key and the fingerprint of a
// request whose [fingerprint] is sum.
func (e *Engine) newKeyedRequest(op *idemop.Operation, scope, key string, sum [sha256.Size]byte) *keyedRequest {
	api := op.API
	if e.cfg.apiSet {
		api = e.cfg.api
	}
	name := opRecordName(op)
	n := e.opName(api, name)
	k := &keyedRequest{op: op, key: key, storageKey: idemstore.TokenRecordKey(n.token, scope, key), sum: sum, name: n, scope: scope}
	// The two fingerprints and the first owner token, every acquire's
	// strings but the key, in one allocation.
	var b [2*hexLen + tokenLen]byte
	fp := apiFingerprint(api, name, sum)
	hex.Encode(b[:hexLen], fp[:])
	hex.Encode(b[hexLen:2*hexLen], sum[:])
	randomToken(b[2*hexLen:])
	s := string(b[:])
	k.fingerprint, k.token = s[:hexLen], s[2*hexLen:]
	k.origin = idemstore.Origin{API: api, Operation: op.ID, Scope: scope, Key: key, Request: s[hexLen : 2*hexLen]}
	return k
}

// hexLen is the length of a fingerprint in hex.
const hexLen = 2 * sha256.Size

// tokenLen is the length of an owner token: [rand.Text]'s.
const tokenLen = 26

// randomToken fills b with random characters of [rand.Text]'s alphabet,
// as rand.Text does: with len(b) == tokenLen, its 128 random bits.
func randomToken(b []byte) {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567" // base32, as rand.Text's
	rand.Read(b)
	for i, c := range b {
		b[i] = alphabet[c%32]
	}
}

// opName is an operation's API identity and token, as the engine keeps
// them per operation ID, and whether the store was asked to name it.
type opName struct {
	api, token string
	named      atomic.Bool
}

// opName returns the name of api's operation op, with its
// [idemstore.OperationToken], computed once per operation.
func (e *Engine) opName(api, op string) *opName {
	if v, ok := e.tokens.Load(op); ok {
		if n := v.(*opName); n.api == api {
			return n
		}
		n := &opName{api: api, token: idemstore.OperationToken(api, op)} // one ID in two APIs: not kept,
		n.named.Store(true)                                              // nor named
		return n
	}
	v, _ := e.tokens.LoadOrStore(op, &opName{api: api, token: idemstore.OperationToken(api, op)})
	return v.(*opName)
}

// named has an [idemstore.OperationNamer] store keep the names behind k's token, in
// the background, the first time a request of k's operation runs.
func (e *Engine) named(k *keyedRequest) {
	if e.namer != nil && !k.name.named.Load() && k.name.named.CompareAndSwap(false, true) {
		go e.nameOperation(k.name.token, k.name.api, opRecordName(k.op))
	}
}

// nameOperation has the store keep the names behind token.
func (e *Engine) nameOperation(token, api, op string) {
	ctx, cancel := context.WithTimeout(context.Background(), e.cfg.storeTimeout)
	defer cancel()
	if err := e.namer.NameOperation(ctx, token, api, op); err != nil {
		e.cfg.logger.LogAttrs(ctx, slog.LevelDebug, "idem: the store did not keep the name of an operation's token",
			slog.String("operation", op), slog.String("token", token), slog.Any("err", err))
	}
}

// acquireRequest is the store's request to acquire k's record for a new
// owner. token is the new owner's: k.token for the first acquire, a fresh
// one for any later.
func (e *Engine) acquireRequest(k *keyedRequest, token string) idemstore.AcquireRequest {
	return idemstore.AcquireRequest{Key: k.storageKey, Token: token, Fingerprint: k.fingerprint, Lease: opLock(k.op), Origin: &k.origin}
}

// identifyHTTP extracts and validates the key, reads and bounds the body,
// scopes and fingerprints the request. It returns the target, the body bytes
// read (nil when r.Body was not read) for the caller to restore, or the
// problem to answer. A nil target without a problem means the key is
// optional and absent: the request runs unprotected.
func (e *Engine) identifyHTTP(r *http.Request, op *idemop.Operation) (*keyedRequest, []byte, *Problem) {
	key, protect, raw, prob := e.readRequest(r, op)
	if prob != nil || !protect {
		return nil, nil, prob
	}
	k, prob := e.identifyBody(r, op, key, raw)
	return k, raw, prob
}

// readRequest is the part of identifyHTTP that reads the request: the key
// header, then the body, bounded by the body limit (nil when there is
// none). protect is false, and the body is not read, when an optional key
// header is absent.
func (e *Engine) readRequest(r *http.Request, op *idemop.Operation) (key string, protect bool, raw []byte, prob *Problem) {
	key, hasKey, prob := e.headerKey(r, op)
	if prob != nil || (opKeyHeader(op) != "" && !hasKey) { // a problem, or an optional key absent
		return "", false, nil, prob
	}
	if prob := encodedBodyProblem(r.Header.Values("Content-Encoding")); prob != nil {
		return "", false, nil, prob
	}
	raw, prob = readBody(r, e.cfg.bodyLimit)
	if prob != nil {
		return "", false, nil, prob
	}
	return key, true, raw, nil
}

// identifyBody is the part of identifyHTTP that follows reading: a JSON
// body (any body, for a body key) is canonicalised, any other is kept raw;
// then identify.
func (e *Engine) identifyBody(r *http.Request, op *idemop.Operation, key string, raw []byte) (*keyedRequest, *Problem) {
	return e.identify(r, op, key, requestPayload(op, r.Header, raw))
}

// requestPayload is the body raw of a request with headers h as the
// fingerprint and a body key read it: JSON where the key is in the body or
// the request says it is JSON, raw bytes otherwise.
func requestPayload(op *idemop.Operation, h headerValues, raw []byte) payload {
	if opKeyHeader(op) == "" || hasJSONContentType(h) {
		return jsonPayload(op, raw)
	}
	return payload{raw: raw}
}

// keyAndCredential is what both entry points check after the body was
// read and before the scope: the key in the body, where the operation
// takes it from there (ok false: an optional one absent, the request runs
// unprotected), and the credential a secured operation needs.
func (e *Engine) keyAndCredential(op *idemop.Operation, key string, body payload, header func(name string) []string) (k string, ok bool, prob *Problem) {
	if opKeyHeader(op) == "" {
		if key, ok, prob = bodyKey(op, body); prob != nil || !ok {
			return "", false, prob
		}
	}
	if prob := e.cfg.missingCredential(header, op); prob != nil {
		return "", false, prob
	}
	return key, true, nil
}

// headerKey returns the key from the key header, when the operation uses
// one. It reports whether a key was found, and a problem for a missing
// required key or a malformed one.
func (e *Engine) headerKey(r *http.Request, op *idemop.Operation) (string, bool, *Problem) {
	name := opKeyHeader(op)
	if name == "" {
		return "", false, nil
	}
	return e.keyFromValues(op, name, r.Header[canonicalKeyHeader(name)])
}

// canonicalKeyHeader is http.CanonicalHeaderKey(name) for a key header's
// name, without the work for the default one, canonical already.
func canonicalKeyHeader(name string) string {
	if name == idemop.DefaultKeyHeader {
		return name
	}
	return http.CanonicalHeaderKey(name)
}

// keyFromValues is headerKey for the values vals of the key header name,
// however the request carries its headers.
func (e *Engine) keyFromValues(op *idemop.Operation, name string, vals []string) (string, bool, *Problem) {
	if len(vals) == 0 {
		if op.Optional {
			return "", false, nil
		}
		return "", false, keyHeaderProblem(name, 0)
	}
	if len(vals) > 1 {
		return "", false, keyHeaderProblem(name, len(vals))
	}
	key, err := keyheader.Parse(vals[0], e.cfg.strictKeys)
	if err != nil {
		return "", false, problemf(http.StatusBadRequest, idemop.CodeInvalidKey, "the %s header is malformed: %s", name, keyErrDetail(err))
	}
	return key, true, nil
}

// encodedBodyProblem is the 415 for a request whose body has a content
// coding (codings are its Content-Encoding values) (Content-Encoding: gzip, say), nil for one without (or with
// identity). The fingerprint is over the body as sent, and the plain and
// strict servers would decode it differently (the plain handler may
// decompress it, the strict decoder cannot), so the layer refuses it before
// any handler runs, in every style, and stores nothing (RFC 7694).
func encodedBodyProblem(codings []string) *Problem {
	for _, v := range codings {
		for c := range strings.SplitSeq(v, ",") {
			if c = strings.TrimSpace(c); c != "" && !strings.EqualFold(c, "identity") {
				p := problemf(http.StatusUnsupportedMediaType, idemop.CodeUnsupportedContentEncoding,
					"the request body has Content-Encoding %q; send it unencoded with this operation's idempotency key", c)
				return p
			}
		}
	}
	return nil
}

// readBody reads r.Body up to limit bytes. It returns nil for a request
// without body.
func readBody(r *http.Request, limit int64) ([]byte, *Problem) {
	if r.Body == nil || r.Body == http.NoBody {
		return nil, nil
	}
	if r.ContentLength > limit {
		return nil, tooLargeProblem(limit)
	}
	raw, err := readAtMost(r.Body, limit+1, r.ContentLength)
	_ = r.Body.Close()
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, tooLargeProblem(mbe.Limit)
		}
		return nil, problemf(http.StatusBadRequest, idemop.CodeBodyUnreadable, "the request body could not be read: %v", err)
	}
	if int64(len(raw)) > limit {
		return nil, tooLargeProblem(limit)
	}
	return raw, nil
}

// maxReadHint caps the buffer readAtMost allocates up front for a body of
// announced length, so that a client announcing a large body does not get
// the memory for it before sending it.
const maxReadHint = 64 << 10

// readAtMost is io.ReadAll(io.LimitReader(r, n)): it reads r until EOF or
// n bytes. When r is known to hold size bytes (size < 0: unknown), up to
// maxReadHint, it reads them in one allocation. The result is never nil.
func readAtMost(r io.Reader, n, size int64) ([]byte, error) {
	c := int64(512) // io.ReadAll's first buffer
	if size >= 0 {
		c = min(size+1, maxReadHint) // +1: room to see EOF without growing
	}
	b := make([]byte, 0, max(min(c, n), 0))
	for int64(len(b)) < n {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)] // let append pick the growth
		}
		k, err := r.Read(b[len(b):min(int64(cap(b)), n)])
		b = b[:len(b)+k]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
	}
	return b, nil
}

// identify completes a target once the body is known: it takes the key from
// the body when the operation has a body key, scopes the request and
// fingerprints it. A nil target without a problem means the key is
// optional and absent.
func (e *Engine) identify(r *http.Request, op *idemop.Operation, key string, body payload) (*keyedRequest, *Problem) {
	key, ok, prob := e.keyAndCredential(op, key, body, r.Header.Values)
	if prob != nil || !ok {
		return nil, prob
	}
	var scope string
	if e.cfg.scope != nil {
		s, err := e.cfg.scope(r)
		var prob *Problem
		if scope, prob = e.scopeKey(r.Context(), op, s, err); prob != nil {
			return nil, prob
		}
	}
	sum := fingerprint(op, r, body)
	body.free()
	return e.newKeyedRequest(op, scope, key, sum), nil
}

// scopeKey is the storage form of the scope s the scope function
// returned, or the problem to answer for its error err.
func (e *Engine) scopeKey(ctx context.Context, op *idemop.Operation, s string, err error) (string, *Problem) {
	if err != nil {
		var p *Problem
		if errors.As(err, &p) {
			return "", p
		}
		e.cfg.logger.ErrorContext(ctx, "idem: scope function failed", "op", op.ID, "err", err)
		return "", NewProblem(http.StatusInternalServerError, idemop.CodeScopeFailed,
			"the request could not be scoped")
	}
	return e.cfg.hashScope(s), nil
}

// bodyKey returns the key at op.KeyPointer in a JSON body. It reports
// whether a key was found, and a problem for a missing required key or a
// malformed one.
func bodyKey(op *idemop.Operation, body payload) (string, bool, *Problem) {
	if len(op.KeyPointers) > 0 {
		return compositeKey(op, body)
	}
	missing := func(detail string) (string, bool, *Problem) {
		if op.Optional {
			return "", false, nil
		}
		return "", false, problemf(http.StatusBadRequest, idemop.CodeMissingKey, "%s", detail)
	}
	if !body.isJSON {
		return missing(fmt.Sprintf("the idempotency key is required at %s in a JSON request body", op.KeyPointer))
	}
	// The JSON value at the pointer, located by jsonPayload: missing or null
	// is no key.
	v := body.key
	if len(v) == 0 || v[0] == 'n' {
		// A pointer that does not parse locates nothing.
		if _, err := canonjson.ParsePointer(op.KeyPointer); err != nil {
			panic(fmt.Errorf("idem: operation %s: key pointer: %w", op.ID, err))
		}
		return missing(fmt.Sprintf("the idempotency key is required at %s in the request body", op.KeyPointer))
	}
	if v[0] != '"' {
		return "", false, problemf(http.StatusBadRequest, idemop.CodeInvalidKey, "the idempotency key at %s is not a string", op.KeyPointer)
	}
	key := canonjson.DecodeString(v)
	if err := keyheader.Check(key); err != nil {
		return "", false, problemf(http.StatusBadRequest, idemop.CodeInvalidKey, "the idempotency key at %s is malformed: %s", op.KeyPointer, keyErrDetail(err))
	}
	return key, true, nil
}

// cancelledProblem answers a request whose context ended before its handler
// answered; the lease was released, so a retry runs again.
func cancelledProblem() *Problem {
	p := NewProblem(http.StatusServiceUnavailable, idemop.CodeRequestCancelled,
		"the request was cancelled before it was answered; it was not recorded and may be retried")
	p.RetryAfter = time.Second
	return p
}

// keyErrDetail is the part of a key validation error worth showing a client.
func keyErrDetail(err error) string {
	return strings.TrimPrefix(err.Error(), ErrInvalidKey.Error()+": ")
}
