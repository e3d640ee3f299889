package idem

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
)

// chunkReader reads at most n bytes per call, then fails with err (nil:
// io.EOF) when its bytes are out.
type chunkReader struct {
	b   []byte
	n   int
	err error
}

func (r *chunkReader) Read(p []byte) (int, error) {
	if len(r.b) == 0 {
		if r.err != nil {
			return 0, r.err
		}
		return 0, io.EOF
	}
	k := copy(p[:min(len(p), r.n)], r.b)
	r.b = r.b[k:]
	return k, nil
}

func TestReadAtMostIsReadAllLimited(t *testing.T) {
	errBroken := errors.New("broken")
	data := []byte(strings.Repeat("0123456789", 200)) // 2000 bytes
	for _, size := range []int{0, 1, 511, 512, 513, 1999, 2000} {
		for _, limit := range []int64{0, 1, 512, 1000, 1999, 2000, 2001, 1 << 20} {
			for _, hint := range []int64{-1, 0, int64(size), int64(size) + 7, 1 << 30} {
				for _, chunk := range []int{1, 100, 4096} {
					for _, fail := range []error{nil, errBroken} {
						want, wantErr := io.ReadAll(io.LimitReader(&chunkReader{b: data[:size], n: chunk, err: fail}, limit+1))
						got, err := readAtMost(&chunkReader{b: data[:size], n: chunk, err: fail}, limit+1, hint)
						if !bytes.Equal(got, want) || got == nil || err != wantErr {
							t.Fatalf("size %d limit %d hint %d chunk %d fail %v: got %d bytes, %v; want %d, %v",
								size, limit, hint, chunk, fail, len(got), err, len(want), wantErr)
						}
					}
				}
			}
		}
	}
}
