package demo

import (
	"context"
	"fmt"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemotel"
)

// telemetry is the demo's OpenTelemetry SDK: a meter provider whose metrics
// the demo reads itself, through a manual reader, at the end.
type telemetry struct {
	reader *sdkmetric.ManualReader
	mp     *sdkmetric.MeterProvider
	hooks  idem.Hooks             // the server engine's
	hook   func(idem.AttemptInfo) // the clients'
}

func newTelemetry() (*telemetry, error) {
	t := &telemetry{reader: sdkmetric.NewManualReader()}
	t.mp = sdkmetric.NewMeterProvider(sdkmetric.WithReader(t.reader))
	var err error
	if t.hooks, err = idemotel.NewHooks(idemotel.WithMeterProvider(t.mp)); err != nil {
		return nil, err
	}
	if t.hook, err = idemotel.NewAttemptHook(idemotel.WithMeterProvider(t.mp)); err != nil {
		return nil, err
	}
	return t, nil
}

// counts is what the demo reads of one instrument: the values of a counter,
// or the counts of a histogram, summed by one attribute's value.
type counts map[string]int64

// collect reads the instrument name, summed by attribute by.
func (t *telemetry) collect(ctx context.Context, name string, by attribute.Key) (counts, error) {
	var rm metricdata.ResourceMetrics
	if err := t.reader.Collect(ctx, &rm); err != nil {
		return nil, err
	}
	c := counts{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != name {
				continue
			}
			switch data := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, dp := range data.DataPoints {
					v, _ := dp.Attributes.Value(by)
					c[v.String()] += dp.Value
				}
			case metricdata.Histogram[float64]:
				for _, dp := range data.DataPoints {
					v, _ := dp.Attributes.Value(by)
					c[v.String()] += int64(dp.Count)
				}
			}
		}
	}
	return c, nil
}

// total sums every value of c.
func (c counts) total() int64 {
	var n int64
	for _, v := range c {
		n += v
	}
	return n
}

// format lists c's values in the order of keys, skipping zeros.
func (c counts) format(keys ...string) string {
	var parts []string
	for _, k := range keys {
		if c[k] != 0 {
			parts = append(parts, fmt.Sprintf("%s %d", k, c[k]))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// metrics prints what the instruments recorded over the whole demo and
// checks it against what happened: the shop's counters and the steps'
// answers.
func (d *demo) metrics(ctx context.Context) error {
	outcomes, err := d.tel.collect(ctx, "idem.server.outcomes", "idem.outcome")
	if err != nil {
		return err
	}
	handler, _ := d.tel.collect(ctx, "idem.server.handler.duration", "idem.operation")
	store, _ := d.tel.collect(ctx, "idem.store.duration", "idem.store.call")
	attempts, _ := d.tel.collect(ctx, "idem.client.attempts", "idem.operation")
	retries, _ := d.tel.collect(ctx, "idem.client.retries", "idem.retry.cause")
	giveUps, _ := d.tel.collect(ctx, "idem.client.give_ups", "idem.retry.cause")

	d.say("server idem.server.outcomes: %s", outcomes.format(idemotel.OutcomeFirstRun, idemotel.OutcomeRecovered,
		idemotel.OutcomeCompleted, idemotel.OutcomeReplay, idemotel.OutcomeConflict, idemotel.OutcomeMismatch,
		idemotel.OutcomeReleased, idemotel.OutcomeLeaseLost, idemotel.OutcomeStoreError))
	d.say("server idem.server.handler.duration: %d runs; idem.store.duration: %s", handler.total(),
		store.format("acquire", "complete", "release", "extend"))
	d.say("client idem.client.attempts: %d; idem.client.retries: %s; idem.client.give_ups: %d",
		attempts.total(), retries.format("status", "transport", "attempt_timeout"), giveUps.total())

	runs := int64(d.shop.Runs("createPet") + d.shop.Runs("createPayment") + d.shop.Runs("adoptPet"))
	storeErrors := int64(0)
	if d.mr != nil {
		storeErrors = 1 // the outage step
	}
	for _, c := range []struct {
		what      string
		got, want int64
	}{
		{"first runs", outcomes[idemotel.OutcomeFirstRun], runs},
		{"handler runs", handler.total(), runs},
		{"completions", outcomes[idemotel.OutcomeCompleted], runs},
		{"replays", outcomes[idemotel.OutcomeReplay], 5},     // step 2's retry, step 3's, both attempts of step 5's second call, step 7's first caller
		{"conflicts", outcomes[idemotel.OutcomeConflict], 1}, // the concurrent duplicate
		{"mismatches", outcomes[idemotel.OutcomeMismatch], 2},
		{"store errors", outcomes[idemotel.OutcomeStoreError], storeErrors},
		{"retried lost answers", retries["transport"], 2},
		{"give-ups", giveUps.total(), 0},
	} {
		if c.got != c.want {
			return fmt.Errorf("%w: the metrics count %d %s, the demo saw %d", errUnexpected, c.got, c.what, c.want)
		}
	}
	d.say("checked: %d first runs and handler runs, as the shop's counters; 5 replays, 1 conflict, 2 mismatches, 2 retried lost answers", runs)
	return nil
}
