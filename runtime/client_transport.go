package idem

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"syscall"
)

// retryableTransportError reports whether err, an error of an attempt that
// got no response while the caller's context was still live, is worth
// another attempt. It is retried when the connection was refused, reset,
// aborted or broken (EPIPE), when it ended early (io.EOF,
// io.ErrUnexpectedEOF), or when something timed out (ETIMEDOUT,
// os.ErrDeadlineExceeded, a net.Error whose Timeout is true, or
// context.DeadlineExceeded, which here can only come from the per-attempt
// timeout or an http.Client timeout since the caller's own context is
// checked first).
//
// Anything else is final: TLS and certificate errors, a malformed URL, an
// unknown scheme, DNS failures, a request the transport refused to send.
// net.Error.Temporary is deprecated and not consulted.
func retryableTransportError(err error) bool {
	if err == nil {
		return false
	}
	for _, target := range []error{
		syscall.ECONNREFUSED,
		syscall.ECONNRESET,
		syscall.ECONNABORTED,
		syscall.EPIPE,
		syscall.ETIMEDOUT,
		io.EOF,
		io.ErrUnexpectedEOF,
		os.ErrDeadlineExceeded,
		context.DeadlineExceeded,
	} {
		if errors.Is(err, target) {
			return true
		}
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
