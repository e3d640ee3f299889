package e2e_test

import (
	"context"
	"strings"
	"testing"

	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemgen"
	"github.com/idemgen/idemgen/runtime/idemop"
	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/redisstore"
)

// panicOf runs fn and returns what it panicked with, as a string ("" when
// it returned).
func panicOf(fn func()) (msg string) {
	defer func() {
		if r := recover(); r != nil {
			msg = strings.TrimSpace(strings.ReplaceAll(toString(r), "\n", " "))
		}
	}()
	fn()
	return ""
}

func toString(v any) string {
	if err, ok := v.(error); ok {
		return err.Error()
	}
	if s, ok := v.(string); ok {
		return s
	}
	return "non-string panic"
}

// TestNilStoreRefused: a nil store, and a nil *redisstore.Store (declared,
// never assigned), are refused when the engine is built, with a message
// that says what to pass, instead of at the first request (a nil-pointer
// SIGSEGV inside the store).
func TestNilStoreRefused(t *testing.T) {
	var rs *redisstore.Store
	op := &idemop.Operation{ID: "CreatePet", Method: "POST", Path: "/pets"}
	for _, c := range []struct {
		name  string
		store idemstore.Store
		kind  string // what the message names the store
	}{
		{"nil", nil, "the store is nil"},
		{"typed nil", rs, "the store is a nil *redisstore.Store"},
	} {
		for _, build := range []struct {
			name string
			fn   func()
		}{
			{"NewEngine", func() { idem.NewEngine(c.store) }},
			{"NewEngineFor", func() { idemgen.NewEngineFor([]*idemop.Operation{op}, c.store) }},
			{"Do", func() {
				_, _, _ = idem.Do(context.Background(), c.store, op, "k", []byte(`{}`), func(context.Context) ([]byte, error) { return nil, nil })
			}},
		} {
			msg := panicOf(build.fn)
			for _, want := range []string{c.kind, "redisstore.New(rdb)", "pgstore.New(pool)", "idem.NewEngine", "WithIdempotency", "NewStrictHandlerWithIdempotency"} {
				if !strings.Contains(msg, want) {
					t.Errorf("%s store, %s: panic %q lacks %q", c.name, build.name, msg, want)
				}
			}
		}
	}
}
