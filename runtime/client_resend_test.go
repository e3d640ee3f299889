package idem_test

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"

	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemop"
)

// closingServer is an HTTP/1.1 server on a loopback listener the test
// controls: it answers the first request of every connection 201 and keeps
// the connection alive, then reads the second request of that connection
// whole and closes the connection without answering it (a server that
// crashes, or an idle timeout that fires, right after reading a request).
// It counts every request it read whole, by key.
type closingServer struct {
	ln   net.Listener
	mu   sync.Mutex     // guards seen
	seen map[string]int // requests read whole, by Idempotency-Key
	wg   sync.WaitGroup
}

func newClosingServer(t *testing.T) *closingServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &closingServer{ln: ln, seen: map[string]int{}}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				s.serve(conn)
			}()
		}
	}()
	t.Cleanup(func() { ln.Close(); s.wg.Wait() })
	return s
}

func (s *closingServer) serve(conn net.Conn) {
	defer conn.Close()
	br := bufio.NewReader(conn)
	for i := 0; ; i++ {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		if _, err := io.Copy(io.Discard, req.Body); err != nil {
			return
		}
		s.mu.Lock()
		s.seen[req.Header.Get(idemop.DefaultKeyHeader)]++
		s.mu.Unlock()
		if i == 1 {
			return // read whole, never answered: the connection closes
		}
		io.WriteString(conn, "HTTP/1.1 201 Created\r\nContent-Type: application/json\r\nContent-Length: 8\r\n\r\n{\"id\":1}")
	}
}

func (s *closingServer) seenKey(key string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.seen[key]
}

// TestClientCountsTransportResend: net/http's Transport resends a request
// that carries an Idempotency-Key header (it counts as replayable, see
// Request.isReplayable) on a fresh connection when a reused keep-alive
// connection closes after the request was written. The server then sees the
// request twice within one attempt; CallResult.Sent and AttemptInfo.Sent say
// so, while Attempts stays the number of attempts Run made.
func TestClientCountsTransportResend(t *testing.T) {
	srv := newClosingServer(t)
	url := "http://" + srv.ln.Addr().String() + "/pets"
	hc := &http.Client{Transport: &http.Transport{}} // keep-alives on, as by default
	t.Cleanup(hc.CloseIdleConnections)
	var hooks hookLog
	c := idem.NewCaller(idem.WithAttemptHook(hooks.hook))
	body := []byte(`{"name":"rex"}`)

	call := func() idem.CallResult {
		var res idem.CallResult
		call := c.Begin(createPet, idem.WithResult(&res))
		if err := call.Run(context.Background(), sender(hc, url, call, body)); err != nil {
			t.Fatalf("Run: %v", err)
		}
		if res.Status != http.StatusCreated {
			t.Fatalf("status %d, want 201", res.Status)
		}
		return res
	}
	// The first call opens the connection and leaves it idle; the second
	// reuses it, is read and dropped, and the transport sends it again on a
	// new connection, whose first request is answered.
	first, second := call(), call()
	if got := srv.seenKey(first.Key); got != 1 || first.Attempts != 1 || first.Sent != 1 {
		t.Errorf("first call: the server read it %d times; Attempts %d, Sent %d; want 1, 1, 1", got, first.Attempts, first.Sent)
	}
	seen := srv.seenKey(second.Key)
	if seen != 2 {
		t.Fatalf("second call: the server read it %d times, want 2 (the transport's resend did not happen)", seen)
	}
	if second.Attempts != 1 || second.Sent != seen {
		t.Errorf("second call: Attempts %d, Sent %d; want 1 attempt and %d sends, as the server saw", second.Attempts, second.Sent, seen)
	}
	infos := hooks.Infos()
	if len(infos) != 2 || infos[1].Attempt != 1 || infos[1].Sent != seen {
		t.Errorf("attempt hook: %+v; want the second call's one attempt with Sent %d", infos, seen)
	}
}
