package ctl

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemop"
	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/redisstore"
	"github.com/idemgen/idemgen/runtime/redisstore/redistest"
)

// backend is a Redis for idemctl to read: its URL, a client of it and the
// store prefix the test owns there.
type backend struct {
	url, prefix string
	rdb         *redis.Client
	mini        *miniredis.Miniredis // the in-process server, nil for real Redis
}

// eachBackend runs fn against real Redis (REDIS_URL; skipped without it,
// unless CI=true) and miniredis.
func eachBackend(t *testing.T, fn func(t *testing.T, b backend)) {
	t.Run("redis", func(t *testing.T) {
		rdb, prefix := redistest.Keyspace(t)
		opt := rdb.Options()
		fn(t, backend{url: fmt.Sprintf("redis://%s/%d", opt.Addr, opt.DB), prefix: prefix, rdb: rdb})
	})
	t.Run("miniredis", func(t *testing.T) {
		m, rdb := redistest.Mini(t)
		fn(t, backend{url: "redis://" + m.Addr() + "/0", prefix: "idem", rdb: rdb, mini: m})
	})
}

// run runs idemctl with args plus -redis and -prefix of b.
func (b backend) run(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	args = append(args, "-redis", b.url, "-prefix", b.prefix)
	code = Run(context.Background(), args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestInspectAndForget(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		store := redisstore.New(b.rdb, redisstore.WithPrefix(b.prefix))
		done := idemstore.RecordKey("CreatePet", idemstore.ScopeKey(nil, "tenant-1"), "done-key")
		running := idemstore.RecordKey("CreatePet", "", "running-key")
		for _, k := range []string{done, running} {
			if _, err := store.Acquire(ctx, idemstore.AcquireRequest{Key: k, Token: "owner", Fingerprint: "fp"}); err != nil {
				t.Fatal(err)
			}
		}
		rec := &idemstore.Record{Status: 201, Header: http.Header{"Location": {"/pets/7"}}, Body: []byte(`{"id":7,"secret":"s3"}`)}
		if err := store.Complete(ctx, done, "owner", rec, time.Hour); err != nil {
			t.Fatal(err)
		}

		inspectDone := []string{"inspect", "-op", "CreatePet", "-scope", "tenant-1", "-key", "done-key", "-retention", "1h"}
		code, out, errOut := b.run(t, inspectDone...)
		if code != ExitOK {
			t.Fatalf("inspect completed: exit %d, %s", code, errOut)
		}
		for _, want := range []string{"state     completed", "format    3 (compact)", "status    201", "headers   Location", "body      22 bytes", "retained  ", "more: replayed to every retry", "age       "} {
			if !strings.Contains(out, want) {
				t.Errorf("inspect completed lacks %q:\n%s", want, out)
			}
		}
		// A record of the text format the versions before wrote.
		old := idemstore.RecordKey("CreatePet", "", "old-key")
		if err := b.rdb.Set(ctx, b.prefix+":"+old, "C\nfp\n201 0 18\nLocation: /pets/6\n{\"id\":6}", time.Hour).Err(); err != nil {
			t.Fatal(err)
		}
		_, out, _ = b.run(t, "inspect", "-op", "CreatePet", "-key", "old-key", "-body")
		for _, want := range []string{"state     completed", "format    1 (text, written before the compact record)", "status    201", "headers   Location", "body      8 bytes", `{"id":6}`} {
			if !strings.Contains(out, want) {
				t.Errorf("inspect of a format 1 record lacks %q:\n%s", want, out)
			}
		}
		if strings.Contains(out, "secret") {
			t.Errorf("inspect printed the body without -body:\n%s", out)
		}
		if _, out, _ = b.run(t, append(inspectDone, "-body")...); !strings.Contains(out, `{"id":7,"secret":"s3"}`) {
			t.Errorf("inspect -body lacks the body:\n%s", out)
		}

		code, out, errOut = b.run(t, "inspect", "-op", "CreatePet", "-key", "running-key")
		if code != ExitOK || !strings.Contains(out, "state     in progress") || !strings.Contains(out, "fence     1") ||
			!strings.Contains(out, "owner     present") || !strings.Contains(out, "left: a retry now is answered 409") {
			t.Errorf("inspect in progress: exit %d\n%s%s", code, out, errOut)
		}
		if strings.Contains(out, "owner\n") || strings.Contains(out, "fp") {
			t.Errorf("inspect printed the token or fingerprint:\n%s", out)
		}

		// forget refuses the record in progress, and says what -force risks.
		code, _, errOut = b.run(t, "forget", "-op", "CreatePet", "-key", "running-key")
		if code != ExitError || !strings.Contains(errOut, "in progress") || !strings.Contains(errOut, "runs the operation again") {
			t.Errorf("forget in progress: exit %d, %s", code, errOut)
		}
		if _, err := store.Inspect(ctx, running); err != nil {
			t.Errorf("refused forget deleted the record: %v", err)
		}
		if code, _, errOut = b.run(t, "forget", "-op", "CreatePet", "-key", "running-key", "-force"); code != ExitOK {
			t.Errorf("forget -force: exit %d, %s", code, errOut)
		}
		if code, out, errOut = b.run(t, "forget", "-op", "CreatePet", "-scope", "tenant-1", "-key", "done-key"); code != ExitOK || !strings.Contains(out, "forgot") {
			t.Errorf("forget completed: exit %d, %s%s", code, out, errOut)
		}
		for _, k := range []string{done, running} {
			if _, err := store.Inspect(ctx, k); err != redisstore.ErrNoRecord {
				t.Errorf("record %s after forget: %v", k, err)
			}
		}
		if code, _, errOut = b.run(t, inspectDone...); code != ExitNoRecord || !strings.Contains(errOut, "no record") {
			t.Errorf("inspect after forget: exit %d, %s", code, errOut)
		}
	})
}

func TestUsage(t *testing.T) {
	for _, args := range [][]string{
		nil,
		{"delete"},
		{"inspect", "-redis", "redis://127.0.0.1:1/0", "-key", "k"},       // no -op
		{"forget", "-redis", "redis://127.0.0.1:1/0", "-op", "CreatePet"}, // no -key
		{"inspect", "-redis", "redis://127.0.0.1:1/0", "-op", "o", "-key", "k", "extra"},
		{"inspect", "-redis", "http://example.com", "-op", "o", "-key", "k"},
		{"forget", "-body", "-redis", "redis://127.0.0.1:1/0", "-op", "o", "-key", "k"}, // -body is inspect's
	} {
		var out, errOut bytes.Buffer
		if code := Run(context.Background(), args, &out, &errOut); code != ExitUsage || errOut.Len() == 0 {
			t.Errorf("idemctl %q: exit %d, stderr %q; want %d and a message", args, code, errOut.String(), ExitUsage)
		}
	}
	var out, errOut bytes.Buffer
	code := Run(context.Background(), []string{"inspect", "-redis", "redis://127.0.0.1:1/0", "-op", "o", "-key", "k", "-timeout", "1s"}, &out, &errOut)
	if code != ExitError || !strings.Contains(errOut.String(), "idemctl:") {
		t.Errorf("unreachable Redis: exit %d, %q", code, errOut.String())
	}
}

// TestInspectScopedByAPIKey: a record an engine stored under
// WithScopeFromHeader and a secret is found by the API key and the secret
// in the environment, and not without the secret.
func TestInspectScopedByAPIKey(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		secret := "0123456789abcdef-secret"
		store := redisstore.New(b.rdb, redisstore.WithPrefix(b.prefix))
		h := idem.NewEngine(store, idem.WithScopeFromHeader("X-API-Key"), idem.WithScopeSecret([]byte(secret))).
			Middleware(idemop.Operation{ID: "CreatePet"})(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusCreated)
		}))
		r := httptest.NewRequest("POST", "/pets", strings.NewReader(`{}`))
		r.Header.Set("Idempotency-Key", "scoped-key")
		r.Header.Set("X-API-Key", "ak_live_123")
		w := httptest.NewRecorder()
		if h.ServeHTTP(w, r); w.Code != http.StatusCreated {
			t.Fatalf("first request: %d %s", w.Code, w.Body)
		}
		t.Setenv("IDEM_TEST_SCOPE_SECRET", secret)
		args := []string{"inspect", "-op", "CreatePet", "-scope", "ak_live_123", "-key", "scoped-key", "-scope-secret-env", "IDEM_TEST_SCOPE_SECRET"}
		if code, out, errOut := b.run(t, args...); code != ExitOK || !strings.Contains(out, "201") {
			t.Fatalf("inspect with the secret = %d\n%s%s", code, out, errOut)
		}
		t.Setenv("IDEM_TEST_SCOPE_SECRET", "")
		if code, out, errOut := b.run(t, args...); code != ExitNoRecord {
			t.Fatalf("inspect without the secret = %d, want %d (no record)\n%s%s", code, ExitNoRecord, out, errOut)
		}
	})
}

// TestInspectFindsAPIRecords: a record the engine stored for an operation
// of a named API (as generated code declares it) is found with -api, and
// without it the error says to pass -api.
func TestInspectFindsAPIRecords(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		eng := idem.NewEngine(redisstore.New(b.rdb, redisstore.WithPrefix(b.prefix)))
		h := eng.Middleware(idemop.Operation{API: "petstore", ID: "CreatePet"})(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusCreated)
		}))
		req := httptest.NewRequest("POST", "/pets", strings.NewReader(`{}`))
		req.Header.Set("Idempotency-Key", "api-key")
		h.ServeHTTP(httptest.NewRecorder(), req)
		if code, out, errOut := b.run(t, "inspect", "-api", "petstore", "-op", "CreatePet", "-key", "api-key"); code != ExitOK || !strings.Contains(out, "status    201") {
			t.Errorf("inspect -api: exit %d\n%s%s", code, out, errOut)
		}
		if code, _, errOut := b.run(t, "inspect", "-op", "CreatePet", "-key", "api-key"); code != ExitNoRecord || !strings.Contains(errOut, "pass -api") {
			t.Errorf("inspect without -api: exit %d, %s", code, errOut)
		}
	})
}

// TestInspectAgeUnderLongerSetting: a record written under a longer
// retention (or lock) than the flags say has more left than the flag, so
// its age is unknown from the flags; inspect says so instead of printing a
// negative age, and estimates it once given the operation's value.
func TestInspectAgeUnderLongerSetting(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		store := redisstore.New(b.rdb, redisstore.WithPrefix(b.prefix))
		done := idemstore.RecordKey("CreatePet", "", "long-kept")
		running := idemstore.RecordKey("CreatePet", "", "long-locked")
		for _, k := range []string{done, running} {
			if _, err := store.Acquire(ctx, idemstore.AcquireRequest{Key: k, Token: "owner", Fingerprint: "fp", Lease: 2 * time.Hour}); err != nil {
				t.Fatal(err)
			}
		}
		if err := store.Complete(ctx, done, "owner", &idemstore.Record{Status: 201, Body: []byte(`{}`)}, 96*time.Hour); err != nil {
			t.Fatal(err)
		}
		ageLine := func(out string) string {
			for _, l := range strings.Split(out, "\n") {
				if strings.HasPrefix(l, "age ") {
					return l
				}
			}
			return ""
		}
		for _, c := range []struct {
			name string
			args []string
			want []string
		}{
			{"completed, default -retention", []string{"-key", "long-kept"}, []string{"unknown", "more than -retention 24h0m0s", "pass its value (-retention)"}},
			{"completed, its -retention", []string{"-key", "long-kept", "-retention", "96h"}, []string{"since completion (if -retention 96h0m0s is the operation's)"}},
			{"in progress, default -lock", []string{"-key", "long-locked"}, []string{"unknown", "lease left is more than -lock 30s", "pass its value (-lock)"}},
			{"in progress, its -lock", []string{"-key", "long-locked", "-lock", "2h"}, []string{"since the lease was acquired or extended (if -lock 2h0m0s is the operation's)"}},
		} {
			code, out, errOut := b.run(t, append([]string{"inspect", "-op", "CreatePet"}, c.args...)...)
			if code != ExitOK {
				t.Fatalf("%s: exit %d, %s", c.name, code, errOut)
			}
			line := ageLine(out)
			if strings.HasPrefix(strings.TrimSpace(strings.TrimPrefix(line, "age")), "-") {
				t.Errorf("%s: negative age: %q", c.name, line)
			}
			for _, want := range c.want {
				if !strings.Contains(line, want) {
					t.Errorf("%s: age line lacks %q: %q", c.name, want, line)
				}
			}
		}
	})
}
