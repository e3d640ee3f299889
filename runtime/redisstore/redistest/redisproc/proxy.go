package redisproc

import (
	"fmt"
	"net"
	"sync"
)

// Proxy is a TCP proxy on a free loopback port, for tests that partition a
// link or move clients to another server: it forwards every connection to
// its target, can stop forwarding (Freeze: connections stay open and bytes
// pile up, as behind a partitioned network) and can be pointed at another
// target (Retarget: existing connections are closed, new ones go to the new
// target, as a virtual IP that follows a promotion). Its methods are safe
// for concurrent use.
type Proxy struct {
	l net.Listener

	mu     sync.Mutex // guards the fields below
	target string
	frozen bool
	thaw   chan struct{}         // closed by Thaw; replaced by Freeze
	conns  map[net.Conn]struct{} // both ends of every forwarded connection
	closed bool
}

// StartProxy starts a proxy to target (host:port).
func StartProxy(target string) (*Proxy, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("redisproc: proxy: %w", err)
	}
	p := &Proxy{l: l, target: target, thaw: make(chan struct{}), conns: map[net.Conn]struct{}{}}
	close(p.thaw)
	go p.accept()
	return p, nil
}

// Addr is the proxy's host:port.
func (p *Proxy) Addr() string { return p.l.Addr().String() }

// Port is the proxy's port.
func (p *Proxy) Port() int { return p.l.Addr().(*net.TCPAddr).Port }

// Freeze stops forwarding in both directions, without closing anything.
func (p *Proxy) Freeze() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.frozen {
		p.frozen, p.thaw = true, make(chan struct{})
	}
}

// Thaw forwards again what Freeze held back.
func (p *Proxy) Thaw() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.frozen {
		p.frozen = false
		close(p.thaw)
	}
}

// Retarget closes every forwarded connection, dropping what a freeze held
// back, and sends new ones to target. It also thaws the proxy.
func (p *Proxy) Retarget(target string) {
	p.mu.Lock()
	p.target = target
	conns := p.conns
	p.conns = map[net.Conn]struct{}{}
	p.mu.Unlock()
	for c := range conns {
		_ = c.Close()
	}
	p.Thaw()
}

// Close stops the proxy and closes every forwarded connection.
func (p *Proxy) Close() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	_ = p.l.Close()
	p.Retarget("")
}

func (p *Proxy) accept() {
	for {
		c, err := p.l.Accept()
		if err != nil {
			return
		}
		go p.forward(c)
	}
}

// forward connects c to the target and copies both ways until either side
// closes.
func (p *Proxy) forward(c net.Conn) {
	p.mu.Lock()
	target, closed := p.target, p.closed
	p.mu.Unlock()
	if closed || target == "" {
		_ = c.Close()
		return
	}
	up, err := net.Dial("tcp", target)
	if err != nil {
		_ = c.Close()
		return
	}
	p.mu.Lock()
	if p.target != target || p.closed { // retargeted meanwhile
		p.mu.Unlock()
		_ = c.Close()
		_ = up.Close()
		return
	}
	p.conns[c], p.conns[up] = struct{}{}, struct{}{}
	p.mu.Unlock()
	done := make(chan struct{}, 2)
	go func() { p.copy(up, c); done <- struct{}{} }()
	go func() { p.copy(c, up); done <- struct{}{} }()
	<-done
	_ = c.Close()
	_ = up.Close()
	<-done
	p.mu.Lock()
	delete(p.conns, c)
	delete(p.conns, up)
	p.mu.Unlock()
}

// copy copies src to dst, holding each chunk while the proxy is frozen.
func (p *Proxy) copy(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.mu.Lock()
			thaw := p.thaw
			p.mu.Unlock()
			<-thaw
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil { // EOF, a reset or a close: the other direction ends too
			return
		}
	}
}
