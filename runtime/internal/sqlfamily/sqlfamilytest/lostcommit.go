package sqlfamilytest

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"

	idem "github.com/idemgen/idemgen/runtime"
)

// CutProxy forwards TCP connections to a database server. Once Armed, it
// forwards the next COMMIT it sees (as [Dialect.IsCommit] tells), holds
// the server's answer back and cuts that connection once the answer is
// whole ([Dialect.CommitAnswered]), so that the server commits but its
// answer never reaches the client; with DropCommit, it cuts the connection instead of
// forwarding the next COMMIT. With a First, it reads each connection's
// first bytes from the client before it dials the server (a protocol whose
// client speaks first) and closes the connections First refuses. Stall
// holds the next bytes a client sends until the test releases them.
type CutProxy struct {
	Addr       string      // where it listens
	Armed      atomic.Bool // cut the connection after forwarding the next COMMIT
	DropCommit atomic.Bool // cut the connection before the next COMMIT instead
	Cut        atomic.Int64
	Refused    atomic.Int64 // connections First refused

	isCommit       func([]byte) bool
	commitSent     func([]byte) bool
	commitAnswered func([]byte) bool
	first          *First
	target         string
	stall          atomic.Pointer[stall]
	wg             sync.WaitGroup
}

// stall is a Stall under way.
type stall struct {
	held    chan struct{} // closed once the bytes are held
	release chan struct{} // closed to forward them
}

// Stall holds the next bytes any client sends (a statement: its connection
// waits for the server's answer) until release, or until the test ends;
// held is closed once they are held.
func (p *CutProxy) Stall(t testing.TB) (held <-chan struct{}, release func()) {
	st := &stall{held: make(chan struct{}), release: make(chan struct{})}
	p.stall.Store(st)
	release = sync.OnceFunc(func() { close(st.release) })
	t.Cleanup(release)
	return st.held, release
}

// First is a check of each connection's first message, client to server.
type First struct {
	Len    int               // the bytes to read first
	Refuse func([]byte) bool // whether to close the connection instead
}

// NewCutProxy starts a proxy to target, closed when the test ends; first
// may be nil.
func NewCutProxy(t testing.TB, d Dialect, target string, first *First) *CutProxy {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &CutProxy{Addr: l.Addr().String(), isCommit: d.IsCommit, commitSent: d.CommitSent, commitAnswered: d.CommitAnswered, first: first, target: target}
	p.wg.Go(func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			p.wg.Go(func() { p.serve(c) })
		}
	})
	t.Cleanup(func() { _ = l.Close(); p.wg.Wait() })
	return p
}

func (p *CutProxy) serve(client net.Conn) {
	var head []byte
	if p.first != nil {
		head = make([]byte, p.first.Len)
		if _, err := io.ReadFull(client, head); err != nil {
			_ = client.Close()
			return
		}
		if p.first.Refuse(head) {
			p.Refused.Add(1)
			_ = client.Close()
			return
		}
	}
	server, err := net.Dial("tcp", p.target)
	if err != nil {
		_ = client.Close()
		return
	}
	closeBoth := func() { _ = client.Close(); _ = server.Close() }
	if _, err := server.Write(head); err != nil {
		closeBoth()
		return
	}
	var cut atomic.Bool // a COMMIT went to the server; its answer never reaches the client
	p.wg.Go(func() { p.answer(client, server, &cut); closeBoth() })
	buf := make([]byte, 32<<10)
	var tail []byte // the end of the previous read: a COMMIT may straddle two
	for {
		n, err := client.Read(buf)
		seen := append(tail, buf[:n]...)
		tail = append([]byte(nil), seen[max(0, len(seen)-tailLen):]...)
		if n > 0 && p.isCommit(seen) && p.DropCommit.CompareAndSwap(true, false) {
			break // the COMMIT never reaches the server
		}
		if n > 0 && p.isCommit(seen) && p.Armed.CompareAndSwap(true, false) {
			cut.Store(true)
			p.Cut.Add(1)
			// Forward the rest of the COMMIT's message, should the read
			// have cut it short; answer cuts the client once the server
			// has answered it.
			sent := append([]byte(nil), buf[:n]...)
			for {
				if _, werr := server.Write(buf[:n]); werr != nil || p.commitSent(sent) {
					return
				}
				if n, err = client.Read(buf); err != nil {
					return
				}
				sent = append(sent, buf[:n]...)
			}
		}
		if n > 0 {
			if st := p.stall.Swap(nil); st != nil {
				close(st.held)
				<-st.release
			}
			if _, werr := server.Write(buf[:n]); werr != nil {
				break
			}
		}
		if err != nil {
			break
		}
	}
	closeBoth()
}

// tailLen is how much of a read the proxy keeps, to find a COMMIT that
// straddles two reads.
const tailLen = 256

// answer forwards the server's bytes to the client until cut; from then on
// it keeps them, and once they end the server's answer to the COMMIT (the
// server ran it, so a CancelRequest the client's driver sends when it
// finds its connection gone cancels nothing), it closes the client's
// connection: the server committed, and the client never hears back.
func (p *CutProxy) answer(client, server net.Conn, cut *atomic.Bool) {
	buf := make([]byte, 32<<10)
	var held []byte
	for {
		n, err := server.Read(buf)
		if n > 0 && !cut.Load() {
			if _, werr := client.Write(buf[:n]); werr != nil {
				return
			}
		} else if n > 0 {
			held = append(held, buf[:n]...)
			if p.commitAnswered(held) {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// ProxiedDB returns a pool of the shared server through a new [CutProxy],
// with at most maxConns connections.
func ProxiedDB(t testing.TB, d Dialect, maxConns int, first *First) (DB, *CutProxy) {
	t.Helper()
	dsn := d.DSN(t)
	proxy := NewCutProxy(t, d, d.Addr(t, dsn), first)
	return d.Open(t, d.WithAddr(t, dsn, proxy.Addr), maxConns), proxy
}

// testLostCommitIsLookedUp: the COMMIT reaches the server, its answer is
// lost with the connection. The store looks the record up on another
// connection instead of guessing: it committed, so the client gets its
// 201, and the key replays it.
func testLostCommitIsLookedUp(t *testing.T, d Dialect) {
	db, proxy := ProxiedDB(t, d, 4, nil)
	s, _ := db.Store(t, StoreConfig{})
	pay := db.Payments(t)
	var runs atomic.Int64
	op := PayOp()
	srv := httptest.NewServer(Serve(idem.NewEngine(s), &op, PaymentHandler(d, pay, func(ctx context.Context) {
		runs.Add(1)
		proxy.Armed.Store(true)
	})))
	defer srv.Close()

	st, body := Post(t, srv.Client(), srv.URL, "lost")
	if proxy.Cut.Load() != 1 {
		t.Fatalf("the proxy cut %d commits, want 1", proxy.Cut.Load())
	}
	if st != http.StatusCreated {
		t.Fatalf("answer after the lost commit = %d %s, want the committed 201", st, body)
	}
	st2, body2 := Post(t, srv.Client(), srv.URL, "lost")
	if st2 != st || body2 != body || runs.Load() != 1 || db.Count(t, pay, "true") != 1 {
		t.Fatalf("replay %d %s after %d runs, %d rows", st2, body2, runs.Load(), db.Count(t, pay, "true"))
	}
}

// testLostCommitThatDidNotCommit: the connection is cut with the COMMIT
// unsent (the proxy drops it): the server rolls the transaction back, the
// lookup finds no committed record, and the client gets 503; the retry
// runs once and commits.
func testLostCommitThatDidNotCommit(t *testing.T, d Dialect) {
	db, proxy := ProxiedDB(t, d, 4, nil)
	s, _ := db.Store(t, StoreConfig{})
	pay := db.Payments(t)
	var runs atomic.Int64
	srv := httptest.NewServer(ServePayments(idem.NewEngine(s), PaymentHandler(d, pay, func(ctx context.Context) {
		if runs.Add(1) == 1 {
			proxy.DropCommit.Store(true)
		}
	})))
	defer srv.Close()

	if st, body := Post(t, srv.Client(), srv.URL, "dropped"); st != http.StatusServiceUnavailable {
		t.Fatalf("answer after a COMMIT that never arrived = %d %s, want 503", st, body)
	}
	if n := db.Count(t, pay, "true"); n != 0 {
		t.Fatalf("%d payment rows after the dropped COMMIT, want 0", n)
	}
	if st, body := Post(t, srv.Client(), srv.URL, "dropped"); st != http.StatusCreated || runs.Load() != 2 {
		t.Fatalf("retry = %d %s after %d runs; want 201 from the second run", st, body, runs.Load())
	}
	if n := db.Count(t, pay, "true"); n != 1 {
		t.Fatalf("%d payment rows, want 1", n)
	}
}
