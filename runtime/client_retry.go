package idem

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptrace"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/idemgen/idemgen/runtime/idemop"
	"github.com/idemgen/idemgen/runtime/internal/retryafter"
)

// drainLimit bounds how much of a retried response body Run reads before
// closing it, so the connection can be reused without reading a huge body.
const drainLimit = 64 << 10

// Run performs attempts until one is final, the policy is exhausted, or ctx
// ends. attempt sends one request (with the same body bytes and key) and
// returns the raw response of oapi-codegen's typed response (through
// [Call.Answer], with its body), or a transport error. Run returns nil when
// the final answer is not retried, a *ProblemError when that answer is a
// problem (status >= 400, application/problem+json, its body given to
// Answer; other 4xx answers the caller inspects in its typed response), or
// a *RetryError when it gives up. An invalid key or policy (see [Caller.Begin])
// is returned before any attempt, wrapping ErrInvalidKey or ErrInvalidPolicy.
//
// A response whose status is in RetryOn is retried, waiting exactly its
// Retry-After (delay-seconds or HTTP-date) when it asks for a wait, never
// less, or else a full-jitter backoff capped at MaxInterval (which caps only
// that backoff). A Retry-After of 0, a date not in the future or a value
// that does not parse asks for none: the backoff applies. When that wait would end after MaxElapsed or the context's
// deadline, Run gives up at once (ErrRetryAfterExceedsBudget, with the wait
// asked for in RetryError.RetryAfter, or ErrTimeExhausted) instead of
// sleeping. Waits end as soon as ctx does.
//
// In a protected run (ctx from a handler under the engine, or [Do]), a call
// without a key of its own ([WithKey], a key in the body) sends a key
// derived from the run instead of its random one: from the inbound
// request's API, operation, scope and key, the operation called and the
// call's ordinal among the run's calls to it. A re-run of the request (a
// takeover, in any process) thus sends the same key for the same call, and
// the downstream answers it once. Calls to one operation that a run makes
// concurrently take their ordinals in the order they reach Run, which a
// re-run may not repeat: give such calls keys of their own ([DerivedKey]
// with a name per call). A key read with [Call.Key] before Run (generated
// code does for a key in a path, query or header parameter) stays random.
//
// With an AttemptTimeout, each attempt gets a context that expires after it;
// Run cancels that context when attempt returns, so attempt must read what it
// needs of the body first (oapi-codegen's ClientWithResponses methods read
// and close it). Run drains and closes the body of every response it retries;
// the body of the last response, final or in the RetryError, is the
// caller's.
func (c *Call) Run(ctx context.Context, attempt func(ctx context.Context) (*http.Response, error)) error {
	if c.err != nil {
		return c.err
	}
	c.deriveKey(ctx)
	defer c.report()
	start := c.caller.clockNow()
	for n := 1; ; n++ {
		if err := ctx.Err(); err != nil {
			return c.giveUp(err)
		}
		began := c.caller.clockNow()
		c.answer = answer{}
		resp, sent, err := c.try(ctx, attempt)
		c.attempts, c.sent, c.last = n, c.sent+sent, resp
		info := AttemptInfo{
			Operation: c.op.ID, Key: c.key, Attempt: n, Err: err, Sent: sent,
			Duration: c.caller.clockNow().Sub(began),
		}
		if resp != nil {
			info.Status, info.Replayed = resp.StatusCode, isReplay(resp)
		}
		cause := c.decide(ctx, n, start, resp, err, &info)
		info.GaveUp = cause != nil
		c.emit(info)
		if cause != nil {
			return c.giveUp(cause)
		}
		if !info.Retry {
			return c.problem(resp)
		}
		drainBody(resp)
		if err := c.caller.wait(ctx, info.Wait); err != nil {
			return c.giveUp(err)
		}
	}
}

// decide classifies attempt n. It returns the cause when the call gives up,
// sets info.Retry and info.Wait when another attempt follows, and does
// neither for a final answer.
func (c *Call) decide(ctx context.Context, n int, start time.Time, resp *http.Response, err error, info *AttemptInfo) error {
	p := &c.policy
	switch {
	case err != nil && ctx.Err() != nil:
		return ctx.Err()
	case err != nil && !errors.Is(err, ErrAttemptTimeout) && !retryableTransportError(err):
		return err
	case err == nil && resp == nil:
		return ErrNoResponse
	case err == nil && !retriesStatus(*p, resp.StatusCode):
		return nil
	}
	now := c.caller.clockNow()
	wait, fromHeader := time.Duration(0), false
	if resp != nil {
		// The server's wait is a floor: MaxInterval caps only the
		// client's own backoff.
		wait, fromHeader = retryAdvice(resp, now)
	}
	if p.MaxAttempts <= 1 || !refusedBeforeRun(resp, err, wait) {
		c.counted++
	}
	if c.counted >= p.MaxAttempts {
		return budgetError(ErrAttemptsExhausted, err)
	}
	if !fromHeader {
		wait = c.caller.jitter(backoffCap(*p, n-1))
	}
	remaining := p.MaxElapsed - now.Sub(start)
	if dl, ok := ctx.Deadline(); ok {
		remaining = min(remaining, time.Until(dl))
	}
	if wait >= remaining {
		if fromHeader && remaining > 0 {
			c.retryAfter = wait
			return budgetError(ErrRetryAfterExceedsBudget, err)
		}
		return budgetError(ErrTimeExhausted, err)
	}
	info.Retry, info.Wait, info.RetryAfter = true, wait, fromHeader
	return nil
}

// retryAdvice returns the wait that resp's Retry-After asks for, and
// whether it asks for one. A value of 0, a date that is not in the future
// and a value that does not parse give no advice: the client's own backoff
// applies, so a server (or a proxy) that answers "Retry-After: 0" to every
// attempt does not get the next one at once.
func retryAdvice(resp *http.Response, now time.Time) (time.Duration, bool) {
	d, ok := retryafter.Parse(resp.Header.Get("Retry-After"), now)
	if !ok || d <= 0 {
		return 0, false
	}
	return d, true
}

// refusedBeforeRun reports whether an attempt's failure says that the
// server ran nothing and when to come back, so that it counts against the
// time budget only (see RetryPolicy.MaxAttempts): a refused connection,
// which a server restarting answers, and a 409 whose Retry-After asks for
// at least a second (advised), which is how a key in progress is answered
// until its run ends or, when its process died, its lease lapses and a
// retry takes it over. Every other attempt counts against MaxAttempts, so
// each attempt that does not is at least a second after the last or made
// after the client's own backoff: the time budget bounds them.
func refusedBeforeRun(resp *http.Response, err error, advised time.Duration) bool {
	if err != nil {
		return errors.Is(err, syscall.ECONNREFUSED)
	}
	return resp.StatusCode == http.StatusConflict && advised >= time.Second
}

// try runs one attempt under the per-attempt timeout, if any, and returns
// how many copies of its request were written whole (AttemptInfo.Sent). An
// error of an attempt whose timeout expired is wrapped in ErrAttemptTimeout.
func (c *Call) try(ctx context.Context, attempt func(ctx context.Context) (*http.Response, error)) (*http.Response, int, error) {
	// net/http's Transport may write the request more than once (see
	// AttemptInfo.Sent); WroteRequest fires for each write, on the
	// transport's writing goroutine. A failed RoundTrip waits for that
	// goroutine, so every write of a failed attempt is counted when
	// attempt returns; a response can arrive before the write ends, so an
	// answered attempt counts at least 1.
	var wrote atomic.Int32
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		WroteRequest: func(w httptrace.WroteRequestInfo) {
			if w.Err == nil {
				wrote.Add(1)
			}
		},
	})
	var resp *http.Response
	var err error
	if c.policy.AttemptTimeout <= 0 {
		resp, err = attempt(ctx)
	} else {
		actx, cancel := context.WithTimeoutCause(ctx, c.policy.AttemptTimeout, ErrAttemptTimeout)
		resp, err = attempt(actx)
		cancel()
		if err != nil && ctx.Err() == nil && errors.Is(context.Cause(actx), ErrAttemptTimeout) {
			err = &attemptTimeoutError{err: err}
		}
	}
	sent := int(wrote.Load())
	if resp != nil {
		sent = max(sent, 1)
	}
	return resp, sent, err
}

// attemptTimeoutError is a transport error caused by the per-attempt
// timeout; errors.Is finds both ErrAttemptTimeout and the original error.
type attemptTimeoutError struct{ err error }

func (e *attemptTimeoutError) Error() string {
	return ErrAttemptTimeout.Error() + ": " + e.err.Error()
}

func (e *attemptTimeoutError) Unwrap() []error { return []error{ErrAttemptTimeout, e.err} }

func (c *Call) giveUp(cause error) error {
	e := &RetryError{Op: c.op.ID, Key: c.key, Attempts: c.attempts, LastResponse: c.last, RetryAfter: c.retryAfter, Err: cause}
	if c.last != nil {
		e.LastStatus = c.last.StatusCode
	}
	return e
}

func (c *Call) emit(info AttemptInfo) {
	if c.caller.hook != nil {
		c.caller.hook(info)
	}
}

// isReplay reports whether resp is a stored result answered again.
func isReplay(resp *http.Response) bool {
	return strings.EqualFold(strings.TrimSpace(resp.Header.Get(idemop.HeaderReplayed)), "true")
}

// drainBody reads a little of a retried response's body and closes it, so
// its connection can be reused. A body that oapi-codegen already read and
// closed just returns an error here, which does not matter.
func drainBody(resp *http.Response) {
	if resp == nil || resp.Body == nil {
		return
	}
	_, _ = io.CopyN(io.Discard, resp.Body, drainLimit)
	_ = resp.Body.Close()
}
