package idem

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/idemgen/idemgen/runtime/idemop"
	"github.com/idemgen/idemgen/runtime/internal/keyheader"
)

// clientKeyHeader is the header that carries op's key: KeyHeader, or
// DefaultKeyHeader when the operation names neither a header nor a pointer.
func clientKeyHeader(op *idemop.ClientOperation) string {
	if op.KeyHeader == "" && op.KeyPointer == "" {
		return idemop.DefaultKeyHeader
	}
	return op.KeyHeader
}

// Caller holds client-wide settings (policy overrides, attempt hook, clock,
// randomness). Each generated IdempotentClient holds one. A Caller is
// immutable once built and safe for concurrent use; its zero value (and a
// nil *Caller) uses the defaults.
type Caller struct {
	policy    func(op string, p idemop.RetryPolicy) idemop.RetryPolicy
	hook      func(AttemptInfo)
	now       func() time.Time
	sleep     func(ctx context.Context, d time.Duration) error
	int64n    func(n int64) int64
	quoteKeys bool
}

// ClientOption configures a [Caller].
type ClientOption func(*Caller)

// NewCaller returns a Caller configured by opts.
func NewCaller(opts ...ClientOption) *Caller {
	c := &Caller{}
	for _, o := range opts {
		if o != nil {
			o(c)
		}
	}
	return c
}

// WithPolicy lets fn adjust the policy of every call: it receives the
// operation ID and the operation's policy with defaults applied, and returns
// the policy to use (zero fields again mean the defaults).
func WithPolicy(fn func(op string, p idemop.RetryPolicy) idemop.RetryPolicy) ClientOption {
	return func(c *Caller) { c.policy = fn }
}

// WithAttemptHook calls fn after every attempt, synchronously and before
// any wait, for logging and metrics. fn should return quickly; the key it
// sees belongs in logs only in redacted form.
func WithAttemptHook(fn func(AttemptInfo)) ClientOption {
	return func(c *Caller) { c.hook = fn }
}

// WithClock replaces the clock: now measures elapsed time (MaxElapsed and
// HTTP-date Retry-After values) and sleep waits between attempts. sleep must
// return ctx.Err() promptly when ctx ends. A nil function keeps the default
// (time.Now, a timer). Tests pass a fake that records the waits and returns
// at once. A context deadline is always compared with the real clock, as the
// context itself is.
func WithClock(now func() time.Time, sleep func(ctx context.Context, d time.Duration) error) ClientOption {
	return func(c *Caller) { c.now, c.sleep = now, sleep }
}

// WithRand draws the backoff jitter from r (of math/rand/v2) instead of the
// runtime's concurrency-safe default source; the Caller serialises its use of
// r. A seeded r makes waits reproducible in tests. Keys always come from
// crypto/rand.
func WithRand(r *rand.Rand) ClientOption {
	return func(c *Caller) {
		if r == nil {
			c.int64n = nil
			return
		}
		var mu sync.Mutex // guards r, which is not safe for concurrent use
		c.int64n = func(n int64) int64 {
			mu.Lock()
			defer mu.Unlock()
			return r.Int64N(n)
		}
	}
}

// WithQuotedKeyHeader sends the key header as the IETF draft's RFC 8941
// sf-string (Idempotency-Key: "abc") instead of the default bare token
// (Idempotency-Key: abc). Bare is the default because Stripe, PayPal, Adyen
// and most APIs that predate the draft take the quotes as part of the key, and
// other header names (PayPal-Request-Id) are not structured fields at all;
// idem's own server accepts both forms unless it runs WithStrictKeys, which
// wants this option on its clients.
func WithQuotedKeyHeader(on bool) ClientOption {
	return func(c *Caller) { c.quoteKeys = on }
}

func (c *Caller) clockNow() time.Time {
	if c.now != nil {
		return c.now()
	}
	return time.Now()
}

func (c *Caller) wait(ctx context.Context, d time.Duration) error {
	if c.sleep != nil {
		return c.sleep(ctx, d)
	}
	return sleepContext(ctx, d)
}

func (c *Caller) jitter(limit time.Duration) time.Duration {
	if c.int64n != nil {
		return fullJitter(limit, c.int64n)
	}
	return fullJitter(limit, rand.Int64N)
}

// CallOption configures one logical call: its key, policy, result report.
type CallOption func(*callConfig)

type callConfig struct {
	key     string
	policy  *idemop.RetryPolicy
	result  *CallResult
	editors []func(ctx context.Context, req *http.Request) error
}

// WithKey makes the call use key instead of a fresh random one (or one
// derived from a protected run, see [Call.Run]), for example to retry a
// logical call across process restarts. An empty key is ignored.
// The key must be 1 to MaxKeyLength bytes of printable ASCII.
func WithKey(key string) CallOption {
	return func(c *callConfig) { c.key = key }
}

// WithCallPolicy makes the call use p (zero fields meaning the defaults),
// instead of the operation's policy adjusted by [WithPolicy].
func WithCallPolicy(p idemop.RetryPolicy) CallOption {
	return func(c *callConfig) { c.policy = &p }
}

// WithResult makes the call report into r: its key as soon as it is known,
// and after Run the attempts made, the last status and whether the answer was
// a replay. r is filled whether the call succeeds or fails.
func WithResult(r *CallResult) CallOption {
	return func(c *callConfig) { c.result = r }
}

// WithRequestEditors edits every attempt's request of the call, in order,
// before the key header is set: a trace id, a tenant header, a signature
// for this one call. The editors have the shape of oapi-codegen's
// RequestEditorFn, whose values they take as they are:
//
//	c.CreatePet(ctx, body, idem.WithRequestEditors(api.RequestEditorFn(addTrace)))
//
// (A []api.RequestEditorFn is passed element by element: Go does not
// convert the slice.) An editor's error ends the call: Run returns a
// *RetryError that wraps it.
// Client-wide editors belong to oapi-codegen's client
// (WithRequestEditorFn).
func WithRequestEditors(editors ...func(ctx context.Context, req *http.Request) error) CallOption {
	return func(c *callConfig) { c.editors = append(c.editors, editors...) }
}

// CallResult is what a caller can learn of a finished call (see [WithResult]).
type CallResult struct {
	Key      string // the idempotency key sent on every attempt
	Attempts int    // attempts made: calls of Run's attempt function
	// Sent counts the requests of all attempts that reached the server
	// whole, as far as the client can know: an attempt's own send, plus
	// each resend net/http's Transport made by itself within that attempt
	// (see [AttemptInfo.Sent]). Sent > Attempts means the server may have
	// received the request more often than Run tried it.
	Sent     int
	Status   int  // status of the last response, 0 if it had none
	Replayed bool // the last response was a replay (Idempotent-Replayed: true)
}

// AttemptInfo describes one attempt to the hook of [WithAttemptHook].
type AttemptInfo struct {
	Operation string        // operation ID
	Key       string        // the call's idempotency key
	Attempt   int           // 1 for the first attempt
	Status    int           // response status, 0 when Err is set
	Err       error         // transport error (wrapping ErrAttemptTimeout for a per-attempt timeout)
	Replayed  bool          // the response was a replay (Idempotent-Replayed: true)
	Duration  time.Duration // time the attempt took, on the Caller's clock
	// Sent counts the copies of this attempt's request written whole to a
	// connection. net/http's Transport resends a request that carries an
	// Idempotency-Key (or X-Idempotency-Key) header, or has no body, on a
	// new connection when a reused keep-alive connection closes after the
	// request was written (the server may have read it, and then Sent is
	// 2 or more), so one attempt can reach the server twice. It is counted
	// through net/http/httptrace (WroteRequest); an attempt whose
	// transport does not report writes there counts 1 when it got a
	// response and 0 when it did not. 0: nothing written whole.
	Sent       int
	Retry      bool          // another attempt follows after Wait
	Wait       time.Duration // wait chosen before the next attempt
	RetryAfter bool          // Wait follows the server's Retry-After
	GaveUp     bool          // the call gives up after this attempt: Run returns a *RetryError
}

// Begin starts one logical call of op: it fixes the key (the caller's via
// WithKey, or a fresh 128-bit random one, which Run replaces with a key
// derived from a protected run's context) and the policy. An invalid key or
// policy is reported by Run, before any attempt.
func (c *Caller) Begin(op *idemop.ClientOperation, opts ...CallOption) *Call {
	if c == nil {
		c = &Caller{}
	}
	if op == nil {
		op = &idemop.ClientOperation{}
	}
	var cfg callConfig
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	call := &Call{caller: c, op: op, key: cfg.key, keyGiven: cfg.key != "", result: cfg.result, editors: cfg.editors}
	if call.keyGiven {
		if err := keyheader.Check(call.key); err != nil {
			call.err = fmt.Errorf("%w (operation %s, key given with WithKey)", err, op.ID)
		}
	} else {
		call.key, call.derive = newCallKey(), true
	}
	p := op.Policy
	switch {
	case cfg.policy != nil:
		p = *cfg.policy
	case c.policy != nil:
		p = c.policy(op.ID, withDefaults(p, op.Lock))
	}
	if err := p.Validate(); err != nil && call.err == nil {
		call.err = fmt.Errorf("%w (operation %s)", err, op.ID)
	}
	call.policy = withDefaults(p, op.Lock)
	call.report()
	return call
}

// Call is one logical call, possibly several attempts. It belongs to the
// goroutine that began it.
type Call struct {
	caller   *Caller
	op       *idemop.ClientOperation
	policy   idemop.RetryPolicy // defaults applied
	key      string
	keyGiven bool  // key came from WithKey
	err      error // invalid key or policy, returned by Run
	result   *CallResult
	editors  []func(ctx context.Context, req *http.Request) error // WithRequestEditors
	answer   answer                                               // the last attempt's, if given to Answer

	// derive is set while the call's key is its own random one and nothing
	// has read it: Run then derives the key from a protected run's context
	// (deriveKey). keyBuf[keyAt:] is where MarshalBody or MarshalForm put
	// that key, so that Run can put the derived one, of the same length, in
	// its place.
	derive bool
	keyBuf []byte
	keyAt  int

	attempts   int
	counted    int            // attempts that count against MaxAttempts (see RetryPolicy.MaxAttempts)
	sent       int            // CallResult.Sent
	last       *http.Response // response of the last attempt, if it had one
	retryAfter time.Duration  // the Retry-After that exceeded the budget
}

// Key returns the idempotency key used on every attempt of the call. Read
// before Run, it fixes the key: a call without [WithKey] whose key was read
// before Run keeps its random key even in a protected run (see Run).
func (c *Call) Key() string {
	c.derive = false
	return c.key
}

// deriveKey gives the call the key derived from the protected run whose
// context ctx is, if it has no key of its own (see Run): the same for the
// n-th call to the operation on every run of the inbound request.
func (c *Call) deriveKey(ctx context.Context) {
	if !c.derive {
		return
	}
	c.derive = false
	s := scopeFrom(ctx)
	if s == nil {
		return
	}
	key := s.callKey(c.op.ID)
	if c.keyBuf != nil {
		if len(key) != len(c.key) {
			return // not the random key's form: keep the key the body holds
		}
		copy(c.keyBuf[c.keyAt:], key)
	}
	c.key = key
	c.report()
}

// placedKey records that out holds the call's key, filled in by
// MarshalBody or MarshalForm, for deriveKey.
func (c *Call) placedKey(out []byte) {
	if !c.derive {
		return
	}
	if at := bytes.Index(out, []byte(c.key)); at >= 0 {
		c.keyBuf, c.keyAt = out, at
		return
	}
	c.derive = false
}

// Result returns what is known of the call so far (see [CallResult]).
func (c *Call) Result() CallResult {
	r := CallResult{Key: c.key, Attempts: c.attempts, Sent: c.sent}
	if c.last != nil {
		r.Status = c.last.StatusCode
		r.Replayed = isReplay(c.last)
	}
	return r
}

// report copies Result into the WithResult target, if any.
func (c *Call) report() {
	if c.result != nil {
		*c.result = c.Result()
	}
}

// marshalBody is idemgen.MarshalBody: it marshals body to JSON once. For a body-key operation it fills
// the member at op.KeyPointer with the call's key when it is missing or
// empty, and adopts the body's key as the call's key when it is set.
// Call it before Run and send the returned bytes on every attempt, each time
// through a fresh reader (bytes.NewReader).
func (c *Call) marshalBody(body any) ([]byte, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("idem: %s: marshal body: %w", c.op.ID, err)
	}
	if c.op.KeyPointer == "" {
		return b, nil
	}
	out, existing, err := fillBodyKey(b, c.op.KeyPointer, c.key)
	if err != nil {
		return nil, fmt.Errorf("%w: %w (operation %s, pointer %s)", ErrBodyKey, err, c.op.ID, c.op.KeyPointer)
	}
	if existing != "" && existing != c.key {
		if err := c.adoptKey(existing, "pointer "+c.op.KeyPointer, "in the body at "+c.op.KeyPointer); err != nil {
			return nil, err
		}
		return out, nil
	}
	c.placedKey(out)
	return out, nil
}

// adoptKey makes existing, a key the body already holds (where names its
// place, at says it in a sentence), the call's key, unless the caller gave
// another one (ErrBodyKeyDiffers) or it is malformed.
func (c *Call) adoptKey(existing, where, at string) error {
	if c.keyGiven {
		return fmt.Errorf("%w (operation %s, %s)", ErrBodyKeyDiffers, c.op.ID, where)
	}
	if err := keyheader.Check(existing); err != nil {
		return fmt.Errorf("%w (operation %s, key %s)", err, c.op.ID, at)
	}
	c.key, c.derive = existing, false
	c.report()
	return nil
}

// editor is idemgen.Editor: it returns a request editor (oapi-codegen's RequestEditorFn shape) that
// runs the call's [WithRequestEditors], then sets the key header on an
// attempt: as a bare token, or as an RFC 8941 sf-string with
// [WithQuotedKeyHeader] (for a body-key operation, no header). The key is set
// last, so that every attempt carries the call's key.
func (c *Call) editor() func(ctx context.Context, req *http.Request) error {
	return func(ctx context.Context, req *http.Request) error {
		for _, edit := range c.editors {
			if err := edit(ctx, req); err != nil {
				return err
			}
		}
		h := clientKeyHeader(c.op)
		if h == "" {
			return nil
		}
		v := c.key
		if c.caller.quoteKeys || strings.HasPrefix(v, `"`) { // a bare leading quote would be read as an sf-string
			v = sfString(v)
		}
		req.Header.Set(h, v)
		return nil
	}
}
