package idem

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestInfoCtxIsWithInfo: the context a lease keeps for its handler answers
// as withInfo's does: the Info, the parent's other values, deadline and
// cancellation (with its cause), also through contexts derived from it.
func TestInfoCtxIsWithInfo(t *testing.T) {
	type otherKey struct{}
	info := &Info{Key: "k", Operation: "op", Fence: 2}
	cause := errors.New("client gone")
	for name, derive := range map[string]func(context.Context) context.Context{
		"withInfo": func(ctx context.Context) context.Context { return withInfo(ctx, info) },
		"infoCtx":  func(ctx context.Context) context.Context { return &infoCtx{Context: ctx, info: info} },
	} {
		deadline := time.Now().Add(time.Hour)
		parent, cancelDeadline := context.WithDeadline(context.WithValue(context.Background(), otherKey{}, "v"), deadline)
		parent, cancel := context.WithCancelCause(parent)
		ctx := derive(parent)
		child, cancelChild := context.WithCancel(context.WithValue(ctx, otherKey{}, "w"))
		if got, ok := FromContext(child); !ok || got != *info {
			t.Errorf("%s: FromContext = %+v, %v", name, got, ok)
		}
		if got := ctx.Value(otherKey{}); got != "v" {
			t.Errorf("%s: other value %v, want the parent's", name, got)
		}
		if d, ok := child.Deadline(); !ok || !d.Equal(deadline) {
			t.Errorf("%s: deadline %v, %v", name, d, ok)
		}
		cancel(cause)
		if child.Err() == nil { // at once: the context package found the parent's cancellation, no goroutine waits for it
			t.Errorf("%s: a derived context not cancelled with its parent", name)
		}
		if err := context.Cause(child); !errors.Is(err, cause) {
			t.Errorf("%s: cause %v, want %v", name, err, cause)
		}
		cancelChild()
		cancelDeadline()
	}
}
