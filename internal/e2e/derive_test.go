package e2e_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/idemgen/idemgen/internal/e2e/clientapi"
	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemop"
	"github.com/idemgen/idemgen/runtime/redisstore"
	"github.com/idemgen/idemgen/runtime/redisstore/redistest"
)

// errReleased fails a run after its charge, so that its key is released.
var errReleased = errors.New("order failed after the charge")

// TestAttackPayloadChangeAfterRelease is the payload-change attack, on real
// Redis: a run of key K with {"amount":10} charges a provider (a generated
// server, protected by idemgen) through the provider's generated client,
// with a derived key, then fails, releasing K. A retry of the same request
// derives the same key: the provider replays the charge, which runs once.
// Then K with {"amount":20}, another request under the released key,
// derives a key of its own: the provider charges 20 (before, the key was
// the first request's, and the provider answered 422, the key having been
// used with another payload, or a provider that does not fingerprint would
// have replayed the 10 charge for the order of 20).
func TestAttackPayloadChangeAfterRelease(t *testing.T) {
	rdb, prefix := redistest.Keyspace(t)
	prov, providerURL := startProvider(t, redisstore.New(rdb, redisstore.WithPrefix(prefix+"-provider")))
	client := newClient(t, providerURL, "sk_shop")
	shop := redisstore.New(rdb, redisstore.WithPrefix(prefix+"-shop"))
	op := &idemop.Operation{ID: "CreateOrder"}

	type charged struct {
		Status  int    `json:"status"`
		Payment string `json:"payment"`
	}
	order := func(amount int, fail bool) (charged, error) {
		payload := fmt.Appendf(nil, `{"amount":%d}`, amount)
		res, _, err := idem.Do(context.Background(), shop, op, "order-K", payload, func(ctx context.Context) ([]byte, error) {
			resp, err := client.CreatePayment(ctx, clientapi.NewPayment{Amount: amount})
			if err != nil {
				return nil, err
			}
			c := charged{Status: resp.StatusCode()}
			if resp.JSON201 != nil {
				c.Payment = resp.JSON201.Id
			}
			if fail {
				return nil, errReleased
			}
			return json.Marshal(c)
		})
		if err != nil {
			return charged{}, err
		}
		var c charged
		return c, json.Unmarshal(res, &c)
	}

	for range 2 { // the request for 10, and a retry of it: both fail after the charge
		if _, err := order(10, true); !errors.Is(err, errReleased) {
			t.Fatalf("order of 10: %v, want the run's failure", err)
		}
	}
	got, err := order(20, false)
	if err != nil {
		t.Fatalf("order of 20 under the released key: %v", err)
	}
	if got.Status != http.StatusCreated || got.Payment != "pay_20" {
		t.Errorf("order of 20 under the released key: provider answered %d %q, want 201 pay_20 (a charge of its own)", got.Status, got.Payment)
	}
	prov.mu.Lock()
	defer prov.mu.Unlock()
	if prov.charged[10] != 1 || prov.charged[20] != 1 || len(prov.charged) != 2 {
		t.Errorf("provider charged %v, want 10 once (the retry replayed) and 20 once", prov.charged)
	}
}
