package idemotel_test

import (
	"context"
	"fmt"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/idemgen/idemgen/runtime/idemotel"
)

// telemetry is an SDK meter and tracer provider whose data a test reads:
// metrics through a manual reader, spans through a span recorder.
type telemetry struct {
	reader *sdkmetric.ManualReader
	spans  *tracetest.SpanRecorder
	mp     *sdkmetric.MeterProvider
	tp     *sdktrace.TracerProvider
}

func newTelemetry(t *testing.T) *telemetry {
	tel := &telemetry{reader: sdkmetric.NewManualReader(), spans: tracetest.NewSpanRecorder()}
	tel.mp = sdkmetric.NewMeterProvider(sdkmetric.WithReader(tel.reader))
	tel.tp = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(tel.spans))
	t.Cleanup(func() {
		_ = tel.mp.Shutdown(context.Background())
		_ = tel.tp.Shutdown(context.Background())
	})
	return tel
}

func (tel *telemetry) options() []idemotel.Option {
	return []idemotel.Option{idemotel.WithMeterProvider(tel.mp), idemotel.WithTracerProvider(tel.tp)}
}

// point is one data point: a counter's value, or a histogram's count.
type point struct {
	attrs map[string]string
	value float64
}

// collect reads every data point of the metric name.
func (tel *telemetry) collect(t *testing.T, name string) []point {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := tel.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	var pts []point
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name != idemotel.ScopeName {
			t.Errorf("instrumentation scope %q, want %q", sm.Scope.Name, idemotel.ScopeName)
		}
		for _, m := range sm.Metrics {
			if m.Name != name {
				continue
			}
			switch data := m.Data.(type) {
			case metricdata.Sum[int64]:
				if !data.IsMonotonic {
					t.Errorf("%s is not monotonic", name)
				}
				for _, dp := range data.DataPoints {
					pts = append(pts, point{attrMap(dp.Attributes.ToSlice()), float64(dp.Value)})
				}
			case metricdata.Histogram[float64]:
				for _, dp := range data.DataPoints {
					pts = append(pts, point{attrMap(dp.Attributes.ToSlice()), float64(dp.Count)})
				}
			default:
				t.Fatalf("%s is a %T", name, m.Data)
			}
		}
	}
	return pts
}

// count sums the points of name whose attributes include match; a match
// value "-" wants the attribute absent.
func (tel *telemetry) count(t *testing.T, name string, match map[string]string) float64 {
	t.Helper()
	var n float64
next:
	for _, p := range tel.collect(t, name) {
		for k, v := range match {
			got, ok := p.attrs[k]
			if v == "-" && ok || v != "-" && got != v {
				continue next
			}
		}
		n += p.value
	}
	return n
}

func attrMap(kvs []attribute.KeyValue) map[string]string {
	m := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		m[string(kv.Key)] = kv.Value.String()
	}
	return m
}

// wantCounts checks count(name, match) for each row.
func (tel *telemetry) wantCounts(t *testing.T, name string, rows []countRow) {
	t.Helper()
	for _, r := range rows {
		if got := tel.count(t, name, r.match); got != r.want {
			t.Errorf("%s%v = %v, want %v (points: %v)", name, r.match, got, r.want, fmt.Sprint(tel.collect(t, name)))
		}
	}
}

type countRow struct {
	match map[string]string
	want  float64
}
