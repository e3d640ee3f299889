package main

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/exporters/stdout/stdoutmetric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemotel"
)

// stdoutMetrics returns engine hooks that record idemotel's metrics and
// print them to stdout as JSON every interval, and a function that prints
// them a last time and stops. A production server would install an OTLP or
// Prometheus exporter instead (and a tracer provider with otel.SetTracerProvider,
// for the spans).
func stdoutMetrics(every time.Duration) (idem.Hooks, func(), error) {
	exp, err := stdoutmetric.New(stdoutmetric.WithPrettyPrint())
	if err != nil {
		return idem.Hooks{}, nil, err
	}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewPeriodicReader(exp, sdkmetric.WithInterval(every))))
	hooks, err := idemotel.NewHooks(idemotel.WithMeterProvider(mp))
	if err != nil {
		return idem.Hooks{}, nil, err
	}
	return hooks, func() { _ = mp.Shutdown(context.Background()) }, nil
}
