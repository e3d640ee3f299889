package e2e_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/idemgen/idemgen/internal/e2e/echoapi"
	"github.com/idemgen/idemgen/internal/e2e/hooks/stdhooks"
	"github.com/idemgen/idemgen/internal/e2e/plainapi"
	"github.com/idemgen/idemgen/internal/e2e/strictapi"
	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/redisstore"
)

// TestGeneratedConstructorsRefuseNilStore: the generated constructors
// refuse a nil store and a nil *redisstore.Store (declared, never
// assigned) when they are called, with a message that says what to pass,
// instead of failing at the first request (a nil-pointer SIGSEGV inside
// the store).
func TestGeneratedConstructorsRefuseNilStore(t *testing.T) {
	var rs *redisstore.Store
	for _, c := range []struct {
		name  string
		store idemstore.Store
		kind  string
	}{
		{"nil", nil, "the store is nil"},
		{"typed nil", rs, "the store is a nil *redisstore.Store"},
	} {
		for _, build := range []struct {
			name string
			fn   func()
		}{
			{"plain WithIdempotency", func() { plainapi.WithIdempotency(plainapi.Unimplemented{}, c.store, scoped()...) }},
			{"strict NewStrictHandlerWithIdempotency", func() { strictapi.NewStrictHandlerWithIdempotency(nil, nil, c.store, scoped()...) }},
			{"echo WithIdempotency", func() { echoapi.WithIdempotency(nil, c.store, scoped()...) }},
			{"WithIdempotentWebhooks", func() { stdhooks.WithIdempotentWebhooks(nil, c.store, scoped()...) }},
		} {
			msg := func() (msg string) {
				defer func() {
					if r := recover(); r != nil {
						msg = fmt.Sprint(r)
					}
				}()
				build.fn()
				return ""
			}()
			for _, want := range []string{c.kind, "redisstore.New(rdb)", "pgstore.New(pool)", "WithIdempotency", "NewStrictHandlerWithIdempotency"} {
				if !strings.Contains(msg, want) {
					t.Errorf("%s store, %s: panic %q lacks %q", c.name, build.name, msg, want)
				}
			}
		}
	}
}
