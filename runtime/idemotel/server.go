package idemotel

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemstore"
)

// server holds the engine's instruments.
type server struct {
	tracer   trace.Tracer
	outcomes metric.Int64Counter
	handler  metric.Float64Histogram
	store    metric.Float64Histogram
}

// NewHooks returns engine hooks ([idem.WithHooks]) that record the
// instruments and spans of the package documentation. Set other fields of
// the result to add hooks of one's own. It fails only if an instrument
// cannot be created.
func NewHooks(opts ...Option) (idem.Hooks, error) {
	cfg := newConfig(opts)
	m := cfg.mp.Meter(ScopeName)
	s := &server{tracer: cfg.tp.Tracer(ScopeName)}
	var err error
	if s.outcomes, err = m.Int64Counter("idem.server.outcomes", metric.WithUnit("{outcome}"),
		metric.WithDescription("Steps of the idempotency protocol, by outcome.")); err != nil {
		return idem.Hooks{}, err
	}
	if s.handler, err = m.Float64Histogram("idem.server.handler.duration", metric.WithUnit("s"),
		metric.WithDescription("Time the handler ran as the owner of a key's lease."),
		metric.WithExplicitBucketBoundaries(handlerBuckets...)); err != nil {
		return idem.Hooks{}, err
	}
	if s.store, err = m.Float64Histogram("idem.store.duration", metric.WithUnit("s"),
		metric.WithDescription("Time of the engine's calls to its store."),
		metric.WithExplicitBucketBoundaries(storeBuckets...)); err != nil {
		return idem.Hooks{}, err
	}
	return idem.Hooks{
		FirstRun:     s.count(OutcomeFirstRun),
		Recovered:    s.count(OutcomeRecovered),
		Replayed:     s.count(OutcomeReplay),
		Conflict:     s.count(OutcomeConflict),
		Mismatch:     s.count(OutcomeMismatch),
		Completed:    s.count(OutcomeCompleted),
		Released:     s.count(OutcomeReleased),
		LeaseLost:    s.count(OutcomeLeaseLost),
		StoreError:   s.storeError,
		Unstored:     s.count(OutcomeUnstored),
		Unreplicated: s.count(OutcomeUnreplicated),
		StoreCall:    s.storeCall,
		Handler:      s.timeHandler,
	}, nil
}

// count returns a hook that counts outcome.
func (s *server) count(outcome string) func(context.Context, idem.Event) {
	return func(ctx context.Context, ev idem.Event) {
		s.outcomes.Add(ctx, 1, metric.WithAttributes(keyOperation.String(ev.Operation), keyOutcome.String(outcome)))
	}
}

// storeError counts a store failure, as misconfigured when the store
// refuses to run as it is configured.
func (s *server) storeError(ctx context.Context, ev idem.Event) {
	outcome := OutcomeStoreError
	if errors.Is(ev.Err, idemstore.ErrStoreMisconfigured) {
		outcome = OutcomeMisconfigured
	}
	s.outcomes.Add(ctx, 1, metric.WithAttributes(keyOperation.String(ev.Operation), keyOutcome.String(outcome)))
}

// storeCall starts the span of a store call and, at its end, records its
// duration.
func (s *server) storeCall(ctx context.Context, ev idem.Event) (context.Context, func(idem.Event)) {
	start := time.Now()
	attrs := []attribute.KeyValue{keyOperation.String(ev.Operation)}
	if ev.Fence > 0 {
		attrs = append(attrs, keyFence.Int64(ev.Fence))
	}
	ctx, span := s.tracer.Start(ctx, "idem."+ev.Call, trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...))
	return ctx, func(end idem.Event) {
		mattrs := []attribute.KeyValue{keyOperation.String(end.Operation), keyStoreCall.String(end.Call)}
		if end.Fence > 0 && ev.Fence == 0 {
			span.SetAttributes(keyFence.Int64(end.Fence))
		}
		if o := acquireOutcome(end.Outcome); o != "" {
			mattrs = append(mattrs, keyOutcome.String(o))
			span.SetAttributes(keyOutcome.String(o))
		}
		if end.Status != 0 {
			span.SetAttributes(keyStatus.Int(end.Status))
		}
		if end.Err != nil {
			t := storeErrorType(end.Err)
			mattrs = append(mattrs, keyErrorType.String(t))
			span.SetAttributes(keyErrorType.String(t))
			span.SetStatus(codes.Error, end.Err.Error())
		}
		s.store.Record(ctx, time.Since(start).Seconds(), metric.WithAttributes(mattrs...))
		span.End()
	}
}

// timeHandler records the handler's duration.
func (s *server) timeHandler(ctx context.Context, _ idem.Event) (context.Context, func(idem.Event)) {
	start := time.Now()
	return ctx, func(end idem.Event) {
		attrs := []attribute.KeyValue{keyOperation.String(end.Operation)}
		if end.Status != 0 {
			attrs = append(attrs, keyStatus.Int(end.Status))
		}
		if end.Err != nil {
			attrs = append(attrs, keyErrorType.String("_OTHER"))
		}
		s.handler.Record(ctx, time.Since(start).Seconds(), metric.WithAttributes(attrs...))
	}
}
