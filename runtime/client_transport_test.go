package idem

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"syscall"
	"testing"
)

// timeoutError is a net.Error that timed out, as a transport reports one.
type timeoutError struct{}

func (timeoutError) Error() string   { return "i/o timeout" }
func (timeoutError) Timeout() bool   { return true }
func (timeoutError) Temporary() bool { return false }

func wrapURL(err error) error {
	return &url.Error{Op: "Post", URL: "http://example.test/pets", Err: err}
}

func wrapOp(op string, errno syscall.Errno) error {
	return wrapURL(&net.OpError{Op: op, Net: "tcp", Err: os.NewSyscallError(op, errno)})
}

func TestClientClassifyTransportErrors(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"connection refused", wrapOp("dial", syscall.ECONNREFUSED), true},
		{"connection reset", wrapOp("read", syscall.ECONNRESET), true},
		{"connection aborted", wrapOp("read", syscall.ECONNABORTED), true},
		{"broken pipe", wrapOp("write", syscall.EPIPE), true},
		{"etimedout", wrapOp("read", syscall.ETIMEDOUT), true},
		{"eof", wrapURL(io.EOF), true},
		{"unexpected eof", wrapURL(fmt.Errorf("reading body: %w", io.ErrUnexpectedEOF)), true},
		{"deadline exceeded", wrapURL(&net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}), true},
		{"net.Error timeout", wrapURL(timeoutError{}), true},
		{"attempt context deadline", wrapURL(context.DeadlineExceeded), true},
		{"context canceled", wrapURL(context.Canceled), false},
		{"unknown certificate authority", wrapURL(x509.UnknownAuthorityError{}), false},
		{"certificate for another host", wrapURL(x509.HostnameError{Host: "example.test"}), false},
		{"unsupported scheme", wrapURL(errors.New(`unsupported protocol scheme "ftp"`)), false},
		{"dns not found", wrapURL(&net.OpError{Op: "dial", Net: "tcp", Err: &net.DNSError{Err: "no such host", Name: "x.invalid", IsNotFound: true}}), false},
		{"unreachable", wrapOp("dial", syscall.EHOSTUNREACH), false},
		{"other", errors.New("boom"), false},
		{"nil", nil, false},
	}
	for _, tt := range tests {
		if got := retryableTransportError(tt.err); got != tt.want {
			t.Errorf("%s: retryableTransportError(%v) = %v, want %v", tt.name, tt.err, got, tt.want)
		}
	}
}

// TestClassifyRealRefusal dials a port that was just closed, so the error is
// the platform's own, not one built by hand.
func TestClientClassifyRealRefusal(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	conn, err := net.Dial("tcp", addr)
	if err == nil {
		conn.Close()
		t.Skip("the closed port was reused")
	}
	if !retryableTransportError(err) {
		t.Errorf("dialling a closed port: %v (%T) is not retried", err, err)
	}
}
