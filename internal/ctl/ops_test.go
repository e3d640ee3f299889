package ctl

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/redisstore"
	"github.com/idemgen/idemgen/runtime/redisstore/previouslayout"
)

// complete stores a completed record of op, scope (as the engine hashes
// it with secret) and key, and names op's token as the engine does.
func complete(t *testing.T, b backend, secret []byte, op, scope, key string) {
	t.Helper()
	completeAt(t, b, secret, op, scope, key, idemstore.RecordKey)
	store := redisstore.New(b.rdb, redisstore.WithPrefix(b.prefix), redisstore.WithLogger(nil))
	if err := store.NameOperation(context.Background(), idemstore.OperationToken("", op), "", op); err != nil {
		t.Fatal(err)
	}
}

// completeAt stores a completed record of op, scope and key under the key
// layout of recordKey.
func completeAt(t *testing.T, b backend, secret []byte, op, scope, key string, recordKey func(op, scope, key string) string) {
	t.Helper()
	ctx := context.Background()
	store := redisstore.New(b.rdb, redisstore.WithPrefix(b.prefix), redisstore.WithLogger(nil)) // the test server keeps records in memory only
	k := recordKey(op, scope, key)
	if scope != "" {
		k = recordKey(op, idemstore.ScopeKey(secret, scope), key)
	}
	if _, err := store.Acquire(ctx, idemstore.AcquireRequest{Key: k, Token: "owner", Fingerprint: "fp"}); err != nil {
		t.Fatal(err)
	}
	if err := store.Complete(ctx, k, "owner", &idemstore.Record{Status: 201, Body: []byte(`{}`)}, time.Hour); err != nil {
		t.Fatal(err)
	}
}

// TestOpTakesOperationID: records live under the Go name; -op finds them
// by the spec's operationId too, whichever normalizer made the Go name.
func TestOpTakesOperationID(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		complete(t, b, nil, "CreatePet", "", "k1")
		complete(t, b, nil, "GetUserID", "", "k2") // ToCamelCaseWithInitialisms
		for _, c := range []struct{ op, key, note string }{
			{"CreatePet", "k1", ""},
			{"createPet", "k1", "stored under its Go name CreatePet"},
			{"create-pet", "k1", "stored under its Go name CreatePet"},
			{"getUserId", "k2", "stored as GetUserID"},
		} {
			code, out, errOut := b.run(t, "inspect", "-op", c.op, "-key", c.key)
			if code != ExitOK || !strings.Contains(out, "status    201") || !strings.Contains(errOut, c.note) {
				t.Errorf("inspect -op %s: exit %d, want %d and a note %q\n%s%s", c.op, code, ExitOK, c.note, out, errOut)
			}
		}
		if code, out, errOut := b.run(t, "forget", "-op", "createPet", "-key", "k1"); code != ExitOK || !strings.Contains(out, "forgot operation CreatePet") {
			t.Errorf("forget -op createPet: exit %d\n%s%s", code, out, errOut)
		}
	})
}

// TestPreviousLayout: a record written under the previous key layout,
// before an upgrade, is found by the same -op and -key and said to be
// one; a token no engine named is listed as such.
func TestPreviousLayout(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		previous := func(op, scope, key string) string { return previouslayout.PreviousRecordKey("", op, scope, key) }
		completeAt(t, b, nil, "CreatePet", "", "k-old", previous)
		code, out, errOut := b.run(t, "inspect", "-op", "createPet", "-key", "k-old")
		if code != ExitOK || !strings.Contains(out, "status    201") || !strings.Contains(out, "previous layout") {
			t.Errorf("inspect of a record of the previous layout: exit %d\n%s%s", code, out, errOut)
		}
		completeAt(t, b, nil, "Unnamed", "", "k1", idemstore.RecordKey)
		code, _, errOut = b.run(t, "inspect", "-op", "deletePet", "-key", "k1")
		for _, want := range []string{"CreatePet (1 records)", `-api "?` + idemstore.OperationToken("", "Unnamed") + `" (1 records)`} {
			if code != ExitNoRecord || !strings.Contains(errOut, want) {
				t.Errorf("inspect of an operation without records: exit %d, stderr lacks %q:\n%s", code, want, errOut)
			}
		}
		if code, out, errOut := b.run(t, "forget", "-op", "CreatePet", "-key", "k-old"); code != ExitOK || !strings.Contains(out, "forgot operation CreatePet") {
			t.Errorf("forget of a record of the previous layout: exit %d\n%s%s", code, out, errOut)
		}
		// During the rollout a record lives under both keys: forget
		// forgets both, so that neither version replays it.
		completeAt(t, b, nil, "CreatePet", "", "k-both", previous)
		completeAt(t, b, nil, "CreatePet", "", "k-both", idemstore.RecordKey)
		if code, out, errOut := b.run(t, "forget", "-op", "CreatePet", "-key", "k-both"); code != ExitOK {
			t.Errorf("forget of a record under both keys: exit %d\n%s%s", code, out, errOut)
		}
		if code, out, _ := b.run(t, "inspect", "-op", "CreatePet", "-key", "k-both"); code != ExitNoRecord {
			t.Errorf("after forget, a record is left under one key: exit %d\n%s", code, out)
		}
	})
}

// TestNotFoundSaysWhatIsThere: a lookup that finds nothing lists the
// operations with records under the prefix, says when the key exists under
// another scope, and says when -scope came without the scope secret.
func TestNotFoundSaysWhatIsThere(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		secret := []byte("0123456789abcdef-secret")
		complete(t, b, secret, "CreatePet", "ak_live_1", "k1")
		complete(t, b, nil, "RefundCharge", "", "k2")
		complete(t, b, nil, "RefundCharge", "", "k3")

		code, _, errOut := b.run(t, "inspect", "-op", "deletePet", "-key", "k1")
		for _, want := range []string{"no record for operation deletePet", "CreatePet (1 records, 1 with key \"k1\" under another scope)", "RefundCharge (2 records)"} {
			if code != ExitNoRecord || !strings.Contains(errOut, want) {
				t.Errorf("inspect of an operation without records: exit %d, stderr lacks %q:\n%s", code, want, errOut)
			}
		}
		if code, _, errOut = b.run(t, "inspect", "-op", "CreatePet", "-key", "k1"); code != ExitNoRecord || !strings.Contains(errOut, "give the tenant, principal or API key with -scope") {
			t.Errorf("inspect of a scoped record without -scope: exit %d:\n%s", code, errOut)
		}
		t.Setenv("IDEM_TEST_SCOPE_SECRET", "")
		args := []string{"inspect", "-op", "CreatePet", "-scope", "ak_live_1", "-key", "k1", "-scope-secret-env", "IDEM_TEST_SCOPE_SECRET"}
		if code, _, errOut = b.run(t, args...); code != ExitNoRecord || !strings.Contains(errOut, "-scope was given without a scope secret ($IDEM_TEST_SCOPE_SECRET is unset or empty)") {
			t.Errorf("inspect -scope without the secret: exit %d:\n%s", code, errOut)
		}
		t.Setenv("IDEM_TEST_SCOPE_SECRET", string(secret))
		if code, out, errOut := b.run(t, args...); code != ExitOK {
			t.Errorf("inspect -scope with the secret: exit %d:\n%s%s", code, out, errOut)
		}
	})
}

// TestNoWarningAboutItsOwnClient: idemctl builds its go-redis client the
// way redisstore asks, so it never warns about it, and logs nothing.
func TestNoWarningAboutItsOwnClient(t *testing.T) {
	rdb, err := newClient("redis://127.0.0.1:1/0")
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	if !rdb.Options().ContextTimeoutEnabled {
		t.Error("idemctl's client is built without ContextTimeoutEnabled")
	}
	var logs bytes.Buffer
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&logs, nil)))
	t.Cleanup(func() { slog.SetDefault(prev) })
	eachBackend(t, func(t *testing.T, b backend) {
		complete(t, b, nil, "CreatePet", "", "k1")
		if code, out, errOut := b.run(t, "inspect", "-op", "CreatePet", "-key", "k1"); code != ExitOK {
			t.Fatalf("inspect: exit %d\n%s%s", code, out, errOut)
		}
	})
	if logs.Len() > 0 {
		t.Errorf("idemctl logged:\n%s", &logs)
	}
}

// TestInspectInProgressOneClock: a live lease is the one expiry an
// in-progress record shows; a lapsed one shows when Redis deletes it.
func TestInspectInProgressOneClock(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		store := redisstore.New(b.rdb, redisstore.WithPrefix(b.prefix))
		for key, lease := range map[string]time.Duration{"live": time.Hour, "lapsed": time.Millisecond} {
			k := idemstore.RecordKey("CreatePet", "", key)
			if _, err := store.Acquire(ctx, idemstore.AcquireRequest{Key: k, Token: "owner", Fingerprint: "fp", Lease: lease}); err != nil {
				t.Fatal(err)
			}
		}
		code, out, errOut := b.run(t, "inspect", "-op", "CreatePet", "-key", "live")
		if code != ExitOK || !strings.Contains(out, "left: a retry now is answered 409") || strings.Contains(out, "expires") || strings.Contains(out, "24h") {
			t.Errorf("inspect of a live lease: exit %d, want the lease alone:\n%s%s", code, out, errOut)
		}
		for {
			info, err := store.Inspect(ctx, idemstore.RecordKey("CreatePet", "", "lapsed"))
			if err != nil {
				t.Fatal(err)
			}
			if info.LeaseRemaining <= 0 {
				break
			}
			if b.mini != nil {
				b.mini.FastForward(time.Millisecond) // miniredis's clock moves only when told
			} else {
				time.Sleep(time.Millisecond) // Redis's clock, not ours, says when the lease lapsed
			}
		}
		code, out, errOut = b.run(t, "inspect", "-op", "CreatePet", "-key", "lapsed")
		if code != ExitOK || !strings.Contains(out, "lapsed") || !strings.Contains(out, "expires   in 2") || strings.Contains(out, "left") {
			t.Errorf("inspect of a lapsed lease: exit %d:\n%s%s", code, out, errOut)
		}
	})
}
