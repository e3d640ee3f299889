package mysqlstore_test

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/go-sql-driver/mysql"

	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/mysqlstore/internal/mysqltest"
)

// cutProxy forwards TCP connections to a MySQL server; once armed, it
// forwards the next COMMIT it sees (a COM_QUERY packet) and then cuts that
// connection, so that the server commits but its answer never reaches the
// client. With dropCommit, it cuts the connection instead of forwarding
// the next COMMIT.
type cutProxy struct {
	l          net.Listener
	target     string
	armed      atomic.Bool
	dropCommit atomic.Bool  // cut the connection before the next COMMIT instead
	cut        atomic.Int64 // connections cut after a COMMIT
	wg         sync.WaitGroup
}

// commitPacket is go-sql-driver's COMMIT: a packet of 7 bytes, sequence 0,
// COM_QUERY (3), "COMMIT".
var commitPacket = []byte("\x07\x00\x00\x00\x03COMMIT")

func newCutProxy(t *testing.T, target string) *cutProxy {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{l: l, target: target}
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

func (p *cutProxy) serve(client net.Conn) {
	server, err := net.Dial("tcp", p.target)
	if err != nil {
		_ = client.Close()
		return
	}
	closeBoth := func() { _ = client.Close(); _ = server.Close() }
	p.wg.Go(func() { _, _ = io.Copy(client, server); closeBoth() })
	buf := make([]byte, 32<<10)
	for {
		n, err := client.Read(buf)
		if n > 0 && bytes.Contains(buf[:n], commitPacket) && p.dropCommit.CompareAndSwap(true, false) {
			break // the COMMIT never reaches the server
		}
		if n > 0 {
			if _, werr := server.Write(buf[:n]); werr != nil {
				break
			}
			if bytes.Contains(buf[:n], commitPacket) && p.armed.CompareAndSwap(true, false) {
				p.cut.Add(1)
				// The server has the COMMIT; the client never hears back.
				_ = client.Close()
				// Let the server read to the end before it sees the EOF.
				_ = server.(*net.TCPConn).CloseWrite()
				return
			}
		}
		if err != nil {
			break
		}
	}
	closeBoth()
}

// TestLostCommitIsLookedUp: the COMMIT reaches the server, its answer is
// lost with the connection. The store looks the record up on another
// connection instead of guessing: it committed, so the client gets its 201,
// and the key replays it.
func TestLostCommitIsLookedUp(t *testing.T) {
	cfg, err := mysql.ParseDSN(mysqltest.DSN(t))
	if err != nil {
		t.Fatal(err)
	}
	proxy := newCutProxy(t, cfg.Addr)
	cfg.Addr = proxy.l.Addr().String()
	db := mysqltest.DBOf(t, cfg.FormatDSN(), 4)
	s, _ := mysqltest.Store(t, db)
	pay := payments(t, db)
	var runs atomic.Int64
	srv := httptest.NewServer(serve(idem.NewEngine(s), payOp, paymentHandler(pay, func(ctx context.Context) {
		runs.Add(1)
		proxy.armed.Store(true)
	})))
	defer srv.Close()

	st, body := post(t, srv.Client(), srv.URL, "lost")
	if proxy.cut.Load() != 1 {
		t.Fatalf("the proxy cut %d commits, want 1", proxy.cut.Load())
	}
	if st != http.StatusCreated {
		t.Fatalf("answer after the lost commit = %d %s, want the committed 201", st, body)
	}
	st2, body2 := post(t, srv.Client(), srv.URL, "lost")
	if st2 != st || body2 != body || runs.Load() != 1 || mysqltest.Count(t, db, pay, "true") != 1 {
		t.Fatalf("replay %d %s after %d runs, %d rows", st2, body2, runs.Load(), mysqltest.Count(t, db, pay, "true"))
	}
}

// TestLostCommitThatDidNotCommit: the connection is cut with the COMMIT
// unsent (the proxy drops it): the server rolls the transaction back, the
// lookup finds no committed record, and the client gets 503; the retry runs
// once and commits.
func TestLostCommitThatDidNotCommit(t *testing.T) {
	cfg, err := mysql.ParseDSN(mysqltest.DSN(t))
	if err != nil {
		t.Fatal(err)
	}
	proxy := newCutProxy(t, cfg.Addr)
	cfg.Addr = proxy.l.Addr().String()
	db := mysqltest.DBOf(t, cfg.FormatDSN(), 4)
	s, _ := mysqltest.Store(t, db)
	pay := payments(t, db)
	var runs atomic.Int64
	srv := httptest.NewServer(serve(idem.NewEngine(s), payOp, paymentHandler(pay, func(ctx context.Context) {
		if runs.Add(1) == 1 {
			proxy.dropCommit.Store(true)
		}
	})))
	defer srv.Close()

	if st, body := post(t, srv.Client(), srv.URL, "dropped"); st != http.StatusServiceUnavailable {
		t.Fatalf("answer after a COMMIT that never arrived = %d %s, want 503", st, body)
	}
	if n := mysqltest.Count(t, db, pay, "true"); n != 0 {
		t.Fatalf("%d payment rows after the dropped COMMIT, want 0", n)
	}
	if st, body := post(t, srv.Client(), srv.URL, "dropped"); st != http.StatusCreated || runs.Load() != 2 {
		t.Fatalf("retry = %d %s after %d runs; want 201 from the second run", st, body, runs.Load())
	}
	if n := mysqltest.Count(t, db, pay, "true"); n != 1 {
		t.Fatalf("%d payment rows, want 1", n)
	}
}
