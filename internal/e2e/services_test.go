package e2e_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/idemgen/idemgen/internal/e2e/clientapi"
	"github.com/idemgen/idemgen/internal/e2e/plainapi"
	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemop"
	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/pgstore"
	"github.com/idemgen/idemgen/runtime/pgstore/pgtest"
	"github.com/idemgen/idemgen/runtime/redisstore"
	"github.com/idemgen/idemgen/runtime/redisstore/redistest"
)

// Runs once across services: the shop's createOrder charges a provider
// twice (deposit, balance) through the provider's generated client,
// passing the request's context; both services are protected by idemgen.
// The shop runs as a process of its own (this test binary, run again as
// TestShopProcess), which the test kills with SIGKILL after the provider
// answered both charges, before the order's answer is stored. The client
// retries with the same key; a second shop process takes the lease over
// (fence 2) and runs the handler again from the top. Its charges carry the
// keys the first run's did (derived from the run), so the provider runs
// each charge once.

// Environment of a shop process (TestShopProcess).
const (
	envShop        = "IDEM_E2E_SHOP"         // the shop's mode: "charges" (this file), "steps" (steps_test.go)
	envShopAddr    = "IDEM_E2E_SHOP_ADDR"    // where it listens
	envShopStore   = "IDEM_E2E_SHOP_STORE"   // "redis" (REDIS_URL), "cluster" (REDIS_CLUSTER_ADDRS), "postgres" (DATABASE_URL) or "mariadb" (MYSQL_DSN)
	envShopSpace   = "IDEM_E2E_SHOP_SPACE"   // Redis key prefix or PostgreSQL table of its records
	envShopStall   = "IDEM_E2E_SHOP_STALL"   // where the handler stalls until killed; "" nowhere
	envShopUpright = "IDEM_E2E_SHOP_UPRIGHT" // the provider's URL (charges), or a table of the shop's (steps)
)

// shopProcess is a running shop: its stdout lines, its process.
type shopProcess struct {
	cmd    *exec.Cmd
	lines  chan string   // stdout, line by line, for await
	ended  chan struct{} // closed when stdout ends
	stderr *strings.Builder

	mu  sync.Mutex // guards all
	all []string   // every line of stdout so far
}

// startShop runs the shop in a process of its own, with env on top of the
// test's, and waits until it listens.
func startShop(t *testing.T, env ...string) *shopProcess {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestShopProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p := &shopProcess{cmd: cmd, lines: make(chan string, 1024), ended: make(chan struct{}), stderr: &strings.Builder{}}
	cmd.Stderr = &lockedWriter{w: p.stderr}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			p.mu.Lock()
			p.all = append(p.all, sc.Text())
			p.mu.Unlock()
			select {
			case p.lines <- sc.Text():
			default: // nobody awaits that many lines
			}
		}
		close(p.lines)
		close(p.ended)
	}()
	p.await(t, "listening")
	return p
}

// await reads the shop's stdout until a line that starts with prefix, and
// returns the line; the end of its output fails the test.
func (p *shopProcess) await(t *testing.T, prefix string) string {
	t.Helper()
	stuck := time.NewTimer(2 * time.Minute) // a safety net, not a measurement: the lines come in seconds
	defer stuck.Stop()
	for {
		select {
		case line, ok := <-p.lines:
			if !ok {
				t.Fatalf("the shop process ended before %q; stderr:\n%s", prefix, p.stderr.String())
			}
			if strings.HasPrefix(line, prefix) {
				return line
			}
		case <-stuck.C:
			t.Fatalf("no %q from the shop process in 2 minutes; stderr:\n%s", prefix, p.stderr.String())
		}
	}
}

// kill sends SIGKILL to the shop and waits for it to be gone.
func (p *shopProcess) kill(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = p.cmd.Wait()
}

// output kills the shop (if it still runs) and returns every line it
// wrote to stdout.
func (p *shopProcess) output(t *testing.T) []string {
	t.Helper()
	_ = p.cmd.Process.Kill()
	<-p.ended
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.all
}

// lockedWriter serialises writes to w.
type lockedWriter struct {
	mu sync.Mutex
	w  *strings.Builder
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

// freeAddr returns a loopback address that was free a moment ago; both
// shop processes listen on it in turn, so the client's retries reach the
// second.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// shopSpace creates what the shop's records need on store ("redis" or
// "postgres") and returns its key prefix or table, and a store on the same
// server for the provider.
func shopSpace(t *testing.T, store string) (space string, provider idemstore.Store) {
	t.Helper()
	switch store {
	case "redis":
		rdb := redistest.Real(t)
		prefix := redistest.Prefix(t)
		return prefix, redisstore.New(rdb, redisstore.WithPrefix(prefix+"-provider"))
	case "cluster":
		rdb, prefix := redistest.Cluster(t)
		return prefix, redisstore.New(rdb, redisstore.WithPrefix(prefix+"-provider"))
	case "postgres":
		pool := pgtest.Pool(t, 20)
		_, table := pgtest.Store(t, pool)
		p, _ := pgtest.Store(t, pool)
		return table, p
	case "mariadb":
		return mariadbShopSpace(t)
	}
	t.Fatalf("store %q", store)
	return "", nil
}

// openStore is the shop process's store, from its environment.
func openStore(ctx context.Context) (idemstore.Store, error) {
	space := os.Getenv(envShopSpace)
	switch os.Getenv(envShopStore) {
	case "redis":
		opts, err := redis.ParseURL(os.Getenv("REDIS_URL"))
		if err != nil {
			return nil, err
		}
		return redisstore.New(redis.NewClient(opts), redisstore.WithPrefix(space)), nil
	case "cluster":
		rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: strings.Split(os.Getenv("REDIS_CLUSTER_ADDRS"), ","), ContextTimeoutEnabled: true})
		return redisstore.New(rdb, redisstore.WithPrefix(space)), nil
	case "postgres":
		cfg, err := pgxpool.ParseConfig(os.Getenv("DATABASE_URL"))
		if err != nil {
			return nil, err
		}
		cfg.MaxConns = 64 // every stalled run holds its transaction's connection
		pool, err := pgxpool.NewWithConfig(ctx, cfg)
		if err != nil {
			return nil, err
		}
		return pgstore.New(pool, pgstore.WithTable(space), pgstore.WithPurgeInterval(-1)), nil
	case "mariadb":
		return openMariaDBStore(space)
	}
	return nil, fmt.Errorf("%s=%q", envShopStore, os.Getenv(envShopStore))
}

// TestShopProcess is the shop when this test binary runs as one (see
// startShop); otherwise it does nothing. It serves until killed.
func TestShopProcess(t *testing.T) {
	mode := os.Getenv(envShop)
	if mode == "" {
		t.Skip("runs only as a shop process of TestRunsOnceAcrossServices and TestStepsResumeAfterKill")
	}
	ctx := context.Background()
	store, err := openStore(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var impl plainapi.ServerInterface
	switch mode {
	case "charges":
		impl = newChargingShop(os.Getenv(envShopUpright), os.Getenv(envShopStall))
	default:
		impl = newStepShop(ctx, os.Getenv(envShopUpright), os.Getenv(envShopStall), store)
	}
	h := plainapi.HandlerWithOptions(plainapi.WithIdempotency(impl, store, scoped()...), plainapi.ChiServerOptions{
		BaseRouter: chi.NewRouter(), ErrorHandlerFunc: plainapi.IdempotencyErrorHandler})
	l, err := net.Listen("tcp", os.Getenv(envShopAddr))
	if err != nil {
		t.Fatal(err)
	}
	fmt.Println("listening", l.Addr())
	t.Fatal(http.Serve(l, h))
}

// chargingShop is the shop of the reproduction: createOrder charges the
// order's deposit and balance through the provider's generated client,
// with the request's context and no key of its own.
type chargingShop struct {
	plainapi.Unimplemented
	provider *clientapi.IdempotentClient
	stall    bool // after both charges: say so on stdout, and wait to be killed
}

func newChargingShop(providerURL, stall string) *chargingShop {
	c, err := clientapi.NewClientWithResponses(providerURL, clientapi.WithRequestEditorFn(func(_ context.Context, r *http.Request) error {
		r.Header.Set("X-API-Key", "sk_shop")
		return nil
	}))
	if err != nil {
		panic(err)
	}
	return &chargingShop{provider: clientapi.NewIdempotentClient(c), stall: stall != ""}
}

// CreateOrder charges order n (its item is "order-n") n*100+1 (deposit),
// then n*100+2 (balance).
func (s *chargingShop) CreateOrder(w http.ResponseWriter, r *http.Request, _ plainapi.CreateOrderParams) {
	var o plainapi.NewOrder
	if err := json.NewDecoder(r.Body).Decode(&o); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	n, err := strconv.Atoi(strings.TrimPrefix(o.Item, "order-"))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	info, _ := idem.FromContext(r.Context())
	fmt.Println("run", o.Item, "fence", info.Fence)
	for _, amount := range []int{n*100 + 1, n*100 + 2} {
		resp, err := s.provider.CreatePayment(r.Context(), clientapi.NewPayment{Amount: amount})
		if err != nil || resp.JSON201 == nil {
			http.Error(w, fmt.Sprintf("charge %d: %v", amount, err), http.StatusBadGateway)
			return
		}
	}
	if s.stall {
		fmt.Println("charged", o.Item)
		<-r.Context().Done() // killed meanwhile
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	json.NewEncoder(w).Encode(plainapi.Order{Id: o.Item, Item: o.Item, Quantity: o.Quantity, Status: "paid"})
}

// provider is the payment provider: a generated server of its own,
// protected by idemgen, that counts how often each amount was charged.
type provider struct {
	plainapi.Unimplemented
	mu      sync.Mutex
	charged map[int]int
}

// CreatePayment charges the amount.
func (p *provider) CreatePayment(w http.ResponseWriter, r *http.Request) {
	var np plainapi.NewPayment
	if err := json.NewDecoder(r.Body).Decode(&np); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	p.mu.Lock()
	p.charged[np.Amount]++
	p.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	json.NewEncoder(w).Encode(plainapi.Payment{Id: "pay_" + strconv.Itoa(np.Amount), Amount: np.Amount})
}

// startProvider serves a provider on store, under an API identity of its
// own.
func startProvider(t *testing.T, store idemstore.Store) (*provider, string) {
	p := &provider{charged: map[int]int{}}
	h := plainapi.HandlerWithOptions(plainapi.WithIdempotency(p, store, append(scoped(), idem.WithAPI("provider"))...), plainapi.ChiServerOptions{
		BaseRouter: chi.NewRouter(), ErrorHandlerFunc: plainapi.IdempotencyErrorHandler})
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	return p, ts.URL
}

// patientPolicy is the retry policy of the shop's client: long enough to
// outlast a killed process's lease (lock 10s in the spec).
var patientPolicy = idemop.RetryPolicy{MaxAttempts: 1000, InitialInterval: 20 * time.Millisecond, MaxInterval: 500 * time.Millisecond, MaxElapsed: time.Minute}

// placeOrders places orders 1..n with the shop at addr, each with key
// "order-i" and a patient policy, concurrently, and returns a channel that
// yields each call's outcome.
func placeOrders(t *testing.T, addr string, n int) <-chan string {
	c := newClient(t, "http://"+addr, "sk_customer")
	done := make(chan string, n)
	for i := 1; i <= n; i++ {
		go func() {
			item := "order-" + strconv.Itoa(i)
			var res idem.CallResult
			resp, err := c.CreateOrder(context.Background(), nil, clientapi.NewOrder{Item: item, Quantity: 1},
				idem.WithKey(item), idem.WithCallPolicy(patientPolicy), idem.WithResult(&res))
			switch {
			case err != nil:
				done <- fmt.Sprintf("%s: %v", item, err)
			case resp.StatusCode() != http.StatusCreated:
				done <- fmt.Sprintf("%s: status %d %s", item, resp.StatusCode(), resp.Body)
			default:
				done <- ""
			}
		}()
	}
	return done
}

// TestRunsOnceAcrossServices: a run's calls to another service run once,
// against real Redis, real PostgreSQL, real MariaDB and a real Redis
// Cluster (the shop's records and the provider's spread over three
// masters): 10 orders, each run charging twice, the shop process killed after both charges of every
// order were answered; the retries succeed on a second shop process, and
// each charge ran once.
func TestRunsOnceAcrossServices(t *testing.T) {
	for _, store := range []string{"redis", "postgres", "cluster", "mariadb"} {
		t.Run(store, func(t *testing.T) {
			t.Parallel()
			const orders = 10
			space, pstore := shopSpace(t, store)
			prov, providerURL := startProvider(t, pstore)
			addr := freeAddr(t)
			env := []string{envShop + "=charges", envShopAddr + "=" + addr, envShopStore + "=" + store,
				envShopSpace + "=" + space, envShopUpright + "=" + providerURL}

			first := startShop(t, append(env, envShopStall+"=after-charges")...)
			done := placeOrders(t, addr, orders)
			for range orders {
				first.await(t, "charged ")
			}
			first.kill(t) // every order charged, none answered
			second := startShop(t, env...)
			for range orders {
				if msg := <-done; msg != "" {
					t.Error(msg)
				}
			}
			reruns := 0
			for _, line := range second.output(t) {
				// Every run of the second process is a re-run: on fence 2
				// after Redis's lease, on a claim of its own after
				// PostgreSQL rolled the first one's back.
				if strings.HasPrefix(line, "run ") {
					reruns++
				}
			}
			if reruns != orders {
				t.Errorf("the second shop process ran %d orders again, want all %d", reruns, orders)
			}

			prov.mu.Lock()
			defer prov.mu.Unlock()
			twice := 0
			for i := 1; i <= orders; i++ {
				for _, amount := range []int{i*100 + 1, i*100 + 2} {
					if n := prov.charged[amount]; n != 1 {
						twice++
						t.Errorf("order %d: charge %d ran %d times, want 1", i, amount, n)
					}
				}
			}
			t.Logf("%d of %d charges ran other than once; the provider ran %d charges for %d orders", twice, 2*orders, total(prov.charged), orders)
			if store == "cluster" {
				if records, _ := clusterSpread(t, space); records != orders {
					t.Errorf("cluster: %d records of the shop, want %d", records, orders)
				}
			}
		})
	}
}

// total sums the counts of m.
func total(m map[int]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}
