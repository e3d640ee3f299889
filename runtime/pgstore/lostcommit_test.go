package pgstore_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"

	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/pgstore/internal/pgtest"
)

// cutProxy forwards TCP connections to a PostgreSQL server; once armed, it
// forwards the next COMMIT it sees (the Bind of pgx's prepared COMMIT, as
// the store sends it after the completion) and then cuts that connection, so that the server commits but its answer
// never reaches the client. With dropCancels, it closes every connection
// that carries a CancelRequest instead of forwarding it, so that a
// statement the client gave up on runs to its end, as a COMMIT past the
// point where a cancel can stop it does.
type cutProxy struct {
	l           net.Listener
	target      string
	armed       atomic.Bool
	cut         atomic.Int64 // connections cut after a COMMIT
	dropCancels atomic.Bool
	dropped     atomic.Int64 // CancelRequests not forwarded
	wg          sync.WaitGroup
}

// cancelRequestCode is the code of a CancelRequest, the first message of
// its connection: length 16, then this.
const cancelRequestCode = 80877102

// commitBind is the Bind of COMMIT as pgx prepares it (its statement
// cache names a statement "stmtcache_" and the hex of 24 bytes of its
// SQL's SHA-256): the empty portal's name, then the statement's.
var commitBind = func() []byte {
	sum := sha256.Sum256([]byte("COMMIT"))
	return []byte("\x00stmtcache_" + hex.EncodeToString(sum[:24]) + "\x00")
}()

// bindsCommit reports whether b holds a Bind message of COMMIT.
func bindsCommit(b []byte) bool {
	i := bytes.Index(b, commitBind)
	return i >= 5 && b[i-5] == 'B'
}

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
	head := make([]byte, 8) // the first message's length and code
	if _, err := io.ReadFull(client, head); err != nil {
		_ = client.Close()
		return
	}
	if p.dropCancels.Load() && binary.BigEndian.Uint32(head[4:]) == cancelRequestCode {
		p.dropped.Add(1)
		_ = client.Close()
		return
	}
	server, err := net.Dial("tcp", p.target)
	if err != nil {
		_ = client.Close()
		return
	}
	if _, err := server.Write(head); err != nil {
		_ = client.Close()
		_ = server.Close()
		return
	}
	closeBoth := func() { _ = client.Close(); _ = server.Close() }
	p.wg.Go(func() { _, _ = io.Copy(client, server); closeBoth() })
	buf := make([]byte, 32<<10)
	for {
		n, err := client.Read(buf)
		if n > 0 {
			if _, werr := server.Write(buf[:n]); werr != nil {
				break
			}
			if bindsCommit(buf[:n]) && p.armed.CompareAndSwap(true, false) {
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
	u, err := url.Parse(pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	proxy := newCutProxy(t, u.Host)
	u.Host = proxy.l.Addr().String()
	pool := pgtest.PoolOf(t, u.String(), 4)
	s, _ := pgtest.Store(t, pool)
	pay := payments(t, pool)
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
	if st2 != st || body2 != body || runs.Load() != 1 || pgtest.Count(t, pool, pay, "true") != 1 {
		t.Fatalf("replay %d %s after %d runs, %d rows", st2, body2, runs.Load(), pgtest.Count(t, pool, pay, "true"))
	}
}
