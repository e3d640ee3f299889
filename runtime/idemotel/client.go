package idemotel

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	idem "github.com/idemgen/idemgen/runtime"
)

// client holds the client's instruments.
type client struct {
	attempts metric.Int64Counter
	duration metric.Float64Histogram
	retries  metric.Int64Counter
	waits    metric.Float64Histogram
	giveUps  metric.Int64Counter
}

// NewAttemptHook returns an attempt hook ([idem.WithAttemptHook]) that
// records the client instruments of the package documentation. An attempt
// hook has no context, so the client records no spans (the HTTP client's
// own instrumentation, such as otelhttp, has them). It fails only if an
// instrument cannot be created.
func NewAttemptHook(opts ...Option) (func(idem.AttemptInfo), error) {
	m := newConfig(opts).mp.Meter(ScopeName)
	var c client
	var err error
	if c.attempts, err = m.Int64Counter("idem.client.attempts", metric.WithUnit("{attempt}"),
		metric.WithDescription("Attempts of idempotent client calls.")); err != nil {
		return nil, err
	}
	if c.duration, err = m.Float64Histogram("idem.client.attempt.duration", metric.WithUnit("s"),
		metric.WithDescription("Time of one attempt of an idempotent client call."),
		metric.WithExplicitBucketBoundaries(handlerBuckets...)); err != nil {
		return nil, err
	}
	if c.retries, err = m.Int64Counter("idem.client.retries", metric.WithUnit("{retry}"),
		metric.WithDescription("Attempts of idempotent client calls that are retried, by cause.")); err != nil {
		return nil, err
	}
	if c.waits, err = m.Float64Histogram("idem.client.wait.duration", metric.WithUnit("s"),
		metric.WithDescription("Waits before a retry, backoff or Retry-After."),
		metric.WithExplicitBucketBoundaries(handlerBuckets...)); err != nil {
		return nil, err
	}
	if c.giveUps, err = m.Int64Counter("idem.client.give_ups", metric.WithUnit("{call}"),
		metric.WithDescription("Idempotent client calls that gave up, by the cause of their last attempt.")); err != nil {
		return nil, err
	}
	return c.record, nil
}

// record records one attempt.
func (c *client) record(info idem.AttemptInfo) {
	ctx := context.Background()
	op := keyOperation.String(info.Operation)
	attrs := []attribute.KeyValue{op}
	if info.Status != 0 {
		attrs = append(attrs, keyStatus.Int(info.Status))
	}
	if info.Err != nil {
		attrs = append(attrs, keyErrorType.String(attemptCause(info)))
	}
	c.duration.Record(ctx, info.Duration.Seconds(), metric.WithAttributes(attrs...))
	c.attempts.Add(ctx, 1, metric.WithAttributes(append(attrs, keyReplayed.Bool(info.Replayed))...))
	if !info.Retry && !info.GaveUp {
		return
	}
	cause := []attribute.KeyValue{op, keyRetryCause.String(attemptCause(info))}
	if info.Status != 0 {
		cause = append(cause, keyStatus.Int(info.Status))
	}
	if info.GaveUp {
		c.giveUps.Add(ctx, 1, metric.WithAttributes(cause...))
		return
	}
	c.retries.Add(ctx, 1, metric.WithAttributes(cause...))
	c.waits.Record(ctx, info.Wait.Seconds(), metric.WithAttributes(op, keyRetryAfter.Bool(info.RetryAfter)))
}
