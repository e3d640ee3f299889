package idemotel_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemop"
	"github.com/idemgen/idemgen/runtime/idemotel"
	"github.com/idemgen/idemgen/runtime/idemstore/memstore"
)

// An engine whose hooks record metrics into an SDK meter provider; here a
// manual reader reads them back, where a server would install an OTLP or
// Prometheus exporter.
func ExampleNewHooks() {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	hooks, err := idemotel.NewHooks(idemotel.WithMeterProvider(mp))
	if err != nil {
		panic(err)
	}

	store := memstore.New() // any store: redisstore.New(rdb), pgstore.New(pool), ...
	h := idem.NewEngine(store, idem.WithHooks(hooks)).Middleware(idemop.Operation{ID: "createPet"})(
		http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusCreated) }))
	for range 2 { // a first run, then its replay
		r := httptest.NewRequest("POST", "/pets", strings.NewReader(`{"name":"Rex"}`))
		r.Header.Set("Idempotency-Key", "k-1")
		h.ServeHTTP(httptest.NewRecorder(), r)
	}

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		panic(err)
	}
	counts := map[string]int64{}
	for _, m := range rm.ScopeMetrics[0].Metrics {
		if sum, ok := m.Data.(metricdata.Sum[int64]); ok && m.Name == "idem.server.outcomes" {
			for _, dp := range sum.DataPoints {
				outcome, _ := dp.Attributes.Value("idem.outcome")
				counts[outcome.AsString()] += dp.Value
			}
		}
	}
	fmt.Println(counts)
	// Output: map[completed:1 first_run:1 replay:1]
}
