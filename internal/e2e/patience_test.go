package e2e_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/go-chi/chi/v5"
	"github.com/redis/go-redis/v9"

	"github.com/idemgen/idemgen/internal/e2e/clientapi"
	"github.com/idemgen/idemgen/internal/e2e/patientapi"
	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemop"
	"github.com/idemgen/idemgen/runtime/redisstore"
	"github.com/idemgen/idemgen/runtime/redisstore/redistest"
)

// The client's default patience outlasts the operation's lock. The shop
// (patientapi: lock 5s, no retry settings, so its client runs with the
// defaults) runs as a process of its own on real Redis; its
// handler charges a provider once, through the provider's generated
// client and the request's context, then stalls. The test kills it there
// (SIGKILL), lets the client's retries meet a closed port three times
// (connection refused, as while a service restarts), then starts a second
// shop process on the same address. The second process answers 409 with
// Retry-After until the dead run's lease lapses, then takes the run over
// (fence 2). The client, with its defaults, gets the 201; the handler ran
// once more (the takeover) and the provider charged once.

// envPatient is set in a patient shop process (TestPatientShopProcess):
// "stall" makes its handler wait to be killed after the charge.
const envPatient = "IDEM_E2E_PATIENT"

// TestPatientShopProcess is the patient shop when this test binary runs as
// one (see startPatientShop); otherwise it does nothing. It serves until
// killed.
func TestPatientShopProcess(t *testing.T) {
	mode := os.Getenv(envPatient)
	if mode == "" {
		t.Skip("runs only as a shop process of TestClientOutlastsTheLock")
	}
	opts, err := redis.ParseURL(os.Getenv("REDIS_URL"))
	if err != nil {
		t.Fatal(err)
	}
	store := redisstore.New(redis.NewClient(opts), redisstore.WithPrefix(os.Getenv(envShopSpace)))
	c, err := clientapi.NewClientWithResponses(os.Getenv(envShopUpright), clientapi.WithRequestEditorFn(func(_ context.Context, r *http.Request) error {
		r.Header.Set("X-API-Key", "sk_shop")
		return nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	shop := &patientShop{provider: clientapi.NewIdempotentClient(c), stall: mode == "stall"}
	h := patientapi.HandlerWithOptions(patientapi.WithIdempotency(shop, store), patientapi.ChiServerOptions{BaseRouter: chi.NewRouter()})
	l, err := net.Listen("tcp", os.Getenv(envShopAddr))
	if err != nil {
		t.Fatal(err)
	}
	fmt.Println("listening", l.Addr())
	t.Fatal(http.Serve(l, h))
}

// patientShop's createOrder charges 100 through the provider, then answers
// 201, or stalls until killed.
type patientShop struct {
	patientapi.Unimplemented
	provider *clientapi.IdempotentClient
	stall    bool
}

func (s *patientShop) CreateOrder(w http.ResponseWriter, r *http.Request, _ patientapi.CreateOrderParams) {
	var o patientapi.NewOrder
	if err := json.NewDecoder(r.Body).Decode(&o); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	info, _ := idem.FromContext(r.Context())
	fmt.Println("run", o.Item, "fence", info.Fence)
	resp, err := s.provider.CreatePayment(r.Context(), clientapi.NewPayment{Amount: 100})
	if err != nil || resp.JSON201 == nil {
		http.Error(w, fmt.Sprintf("charge: %v", err), http.StatusBadGateway)
		return
	}
	if s.stall {
		fmt.Println("charged", o.Item)
		<-r.Context().Done() // killed meanwhile
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	json.NewEncoder(w).Encode(patientapi.Order{Id: o.Item, Status: "paid"})
}

// startPatientShop runs a patient shop process in mode ("stall" or
// "serve") with env on top of the test's, and waits until it listens.
func startPatientShop(t *testing.T, mode string, env ...string) *shopProcess {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestPatientShopProcess$", "-test.count=1")
	cmd.Env = append(append(os.Environ(), envPatient+"="+mode), env...)
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

// attempts collects the client's attempts (its AttemptInfo hook) and lets
// the test wait for a number of refused connections.
type attempts struct {
	mu      sync.Mutex
	all     []idem.AttemptInfo
	refused chan struct{} // one value per refused connection
}

func (a *attempts) hook(info idem.AttemptInfo) {
	a.mu.Lock()
	a.all = append(a.all, info)
	a.mu.Unlock()
	if errors.Is(info.Err, syscall.ECONNREFUSED) {
		select {
		case a.refused <- struct{}{}:
		default: // nobody waits for that many
		}
	}
}

// TestClientOutlastsTheLock: a killed and restarted shop, a client with
// the default policy, which waits out the lock and gets the answer.
func TestClientOutlastsTheLock(t *testing.T) {
	rdb := redistest.Real(t)
	prefix := redistest.Prefix(t)
	prov, providerURL := startProvider(t, redisstore.New(rdb, redisstore.WithPrefix(prefix+"-provider")))
	addr := freeAddr(t)
	env := []string{envShopAddr + "=" + addr, envShopSpace + "=" + prefix, envShopUpright + "=" + providerURL}

	first := startPatientShop(t, "stall", env...)
	seen := &attempts{refused: make(chan struct{}, 1000)}
	hc, err := patientapi.NewClientWithResponses("http://" + addr)
	if err != nil {
		t.Fatal(err)
	}
	client := patientapi.NewIdempotentClient(hc, idem.WithAttemptHook(seen.hook))
	type outcome struct {
		resp *patientapi.CreateOrderResponse
		res  idem.CallResult
		err  error
	}
	done := make(chan outcome, 1)
	go func() {
		var o outcome
		o.resp, o.err = client.CreateOrder(context.Background(), patientapi.NewOrder{Item: "order-1"}, idem.WithResult(&o.res))
		done <- o
	}()
	first.await(t, "charged ")
	first.kill(t) // charged, not answered
	for range 3 {
		<-seen.refused // the restart takes a while
	}
	second := startPatientShop(t, "serve", env...)
	o := <-done

	seen.mu.Lock()
	statuses := map[string]int{}
	for _, a := range seen.all {
		switch {
		case errors.Is(a.Err, syscall.ECONNREFUSED):
			statuses["refused"]++
		case a.Err != nil:
			statuses["other transport error"]++
		default:
			statuses[fmt.Sprint(a.Status)]++
		}
	}
	seen.mu.Unlock()
	t.Logf("the client made %d attempts with the default policy: %v", o.res.Attempts, statuses)
	if o.err != nil || o.resp.StatusCode() != http.StatusCreated {
		t.Fatalf("CreateOrder with the default policy: %v (status %d), want 201", o.err, o.resp.StatusCode())
	}
	if o.res.Attempts <= idemop.DefaultRetryPolicy().MaxAttempts {
		t.Logf("note: %d attempts were enough this time; the test proves the most when the restart costs more", o.res.Attempts)
	}

	runs := func(p *shopProcess, fence string) int {
		n := 0
		for _, line := range p.output(t) {
			if strings.HasPrefix(line, "run order-1 fence ") {
				n++
				if !strings.HasSuffix(line, " fence "+fence) {
					t.Errorf("shop process: %q, want fence %s", line, fence)
				}
			}
		}
		return n
	}
	if n := runs(first, "1"); n != 1 {
		t.Errorf("the first shop process ran the order %d times, want 1", n)
	}
	if n := runs(second, "2"); n != 1 {
		t.Errorf("the second shop process ran the order %d times, want 1 (the takeover)", n)
	}
	prov.mu.Lock()
	defer prov.mu.Unlock()
	if n := prov.charged[100]; n != 1 {
		t.Errorf("the provider charged %d times, want 1", n)
	}
}
