// Package demo drives the generated client against the generated server and
// narrates what happened, reading the shop's own execution counters so that
// every claim it prints is checked, not assumed.
package demo

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/redis/go-redis/v9"

	petclient "github.com/idemgen/idemgen/examples/petstore/api/client"
	"github.com/idemgen/idemgen/examples/petstore/server"
	"github.com/idemgen/idemgen/examples/petstore/shop"
	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/redisstore"
	"github.com/idemgen/idemgen/runtime/redisstore/embedredis"
)

// Config selects the Redis the demo runs on.
type Config struct {
	// RedisURL names a real Redis; empty runs an in-process miniredis.
	RedisURL string
}

// Run runs the demo, writing its narration to out. It returns an error when
// the server did not behave as narrated.
func Run(ctx context.Context, out io.Writer, cfg Config) error {
	d, err := start(cfg)
	if err != nil {
		return err
	}
	defer d.close()
	for _, step := range []struct {
		title string
		run   func(context.Context) error
	}{
		{"1. A first call runs the handler once", d.firstCall},
		{"2. The response is lost; the client retries with the same key and gets the replay", d.lostResponse},
		{"3. A duplicate arrives while the original still runs: 409, then the replay", d.concurrentDuplicate},
		{"4. The same key with another body: 422", d.reusedKey},
		{"5. A payment whose key travels in the JSON body", d.bodyKey},
		{"6. Redis becomes unreachable: 503, then recovery", d.outage},
		{"7. Another caller (API key) sends the same key and body: a run of its own", d.otherCaller},
		{"8. What the OpenTelemetry metrics saw (read from the SDK's manual reader)", d.metrics},
	} {
		fmt.Fprintf(out, "\n%s\n", step.title)
		d.out = out
		if err := step.run(ctx); err != nil {
			return fmt.Errorf("%s: %w", step.title, err)
		}
	}
	fmt.Fprintf(out, "\nDone: every write ran exactly as often as the shop's counters say.\n")
	return nil
}

// demo is one running server, its shop and its clients.
type demo struct {
	out    io.Writer
	shop   *shop.Shop
	mr     *embedredis.Server // nil on a real Redis
	rdb    *redis.Client
	srv    *httptest.Server
	client *petclient.IdempotentClient
	lossy  *lossyTransport
	lossyC *petclient.IdempotentClient
	otherC *petclient.IdempotentClient // another caller: another API key
	hold   atomic.Pointer[gate]
	tel    *telemetry // metrics of the server and the clients
}

// gate holds the next createPet run until release is closed.
type gate struct {
	once    sync.Once
	entered chan struct{}
	release chan struct{}
}

func start(cfg Config) (*demo, error) {
	tel, err := newTelemetry()
	if err != nil {
		return nil, err
	}
	d := &demo{shop: shop.New(), tel: tel}
	d.shop.Gate = func(ctx context.Context, op string) {
		if g := d.hold.Load(); g != nil && op == "createPet" {
			g.once.Do(func() {
				close(g.entered)
				<-g.release
			})
		}
	}
	if cfg.RedisURL == "" {
		mr, err := embedredis.Start()
		if err != nil {
			return nil, fmt.Errorf("start in-process redis: %w", err)
		}
		d.mr = mr
		d.rdb = redis.NewClient(&redis.Options{Addr: mr.Addr(), MaxRetries: -1, ContextTimeoutEnabled: true})
	} else {
		opt, err := redis.ParseURL(cfg.RedisURL)
		if err != nil {
			return nil, fmt.Errorf("REDIS_URL: %w", err)
		}
		opt.MaxRetries, opt.ContextTimeoutEnabled = -1, true
		d.rdb = redis.NewClient(opt)
	}
	store := redisstore.New(d.rdb, redisstore.WithPrefix(fmt.Sprintf("petstore-demo-%d", os.Getpid())))
	if err := store.Check(context.Background()); err != nil { // reachable, scripts run, no eviction
		d.rdb.Close()
		if d.mr != nil {
			d.mr.Stop()
		}
		return nil, err
	}
	// The demo's records live only as long as it runs, so a random secret
	// will do; a real deployment reads one shared secret (cmd/petstore).
	secret := []byte(rand.Text())
	d.srv = httptest.NewServer(server.NewStrictHandler(d.shop, store,
		append(server.ScopedByAPIKey(secret), idem.WithHooks(tel.hooks))...))

	if d.client, err = newClient(d.srv.URL, http.DefaultTransport, apiKeyAlice, tel.hook); err != nil {
		return nil, err
	}
	d.lossy = &lossyTransport{next: http.DefaultTransport}
	if d.lossyC, err = newClient(d.srv.URL, d.lossy, apiKeyAlice, tel.hook); err != nil {
		return nil, err
	}
	if d.otherC, err = newClient(d.srv.URL, http.DefaultTransport, apiKeyBob, tel.hook); err != nil {
		return nil, err
	}
	return d, nil
}

// The API keys of the demo's two callers.
const (
	apiKeyAlice = "demo-api-key-alice"
	apiKeyBob   = "demo-api-key-bob"
)

// newClient is the generated client of url over rt, sending apiKey; hook
// sees every attempt.
func newClient(url string, rt http.RoundTripper, apiKey string, hook func(idem.AttemptInfo)) (*petclient.IdempotentClient, error) {
	c, err := petclient.NewClientWithResponses(url, petclient.WithHTTPClient(&http.Client{Transport: rt}),
		petclient.WithRequestEditorFn(func(_ context.Context, r *http.Request) error {
			r.Header.Set(server.APIKeyHeader, apiKey)
			return nil
		}))
	if err != nil {
		return nil, err
	}
	return petclient.NewIdempotentClient(c, idem.WithAttemptHook(hook)), nil
}

func (d *demo) close() {
	d.srv.Close()
	d.rdb.Close()
	_ = d.tel.mp.Shutdown(context.Background())
	if d.mr != nil {
		d.mr.Stop()
	}
}

func (d *demo) say(format string, args ...any) { fmt.Fprintf(d.out, "   "+format+"\n", args...) }

// expectRuns checks the shop's counter for op.
func (d *demo) expectRuns(op string, want int) error {
	got := d.shop.Runs(op)
	d.say("server: %s has run %d time(s)", op, got)
	if got != want {
		return fmt.Errorf("%s ran %d times, want %d", op, got, want)
	}
	return nil
}

// lossyTransport loses the response of the next request: the server handles
// it, the client sees a connection reset.
type lossyTransport struct {
	next     http.RoundTripper
	loseNext atomic.Bool
}

func (t *lossyTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if err != nil || !t.loseNext.CompareAndSwap(true, false) {
		return resp, err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return nil, &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}
}

// raw sends one request by hand, to show the status codes the helper would
// otherwise retry or hide.
func (d *demo) raw(ctx context.Context, method, path, key string, body any) (*http.Response, []byte, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return nil, nil, err
	}
	req, err := http.NewRequestWithContext(ctx, method, d.srv.URL+path, bytes.NewReader(b))
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(server.APIKeyHeader, apiKeyAlice)
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	return resp, data, err
}

var errUnexpected = errors.New("unexpected answer")
