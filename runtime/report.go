package idem

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"log/slog"
)

// Log levels the engine uses.
const (
	levelInfo  = slog.LevelInfo
	levelWarn  = slog.LevelWarn
	levelError = slog.LevelError
)

// keyHash is the redacted form of a storage key used in logs and events.
func keyHash(storageKey string) string {
	sum := sha256.Sum256([]byte(storageKey))
	return hex.EncodeToString(sum[:6])
}

// report calls hook h (if set) with ev and, when msg is not empty and the
// logger is enabled at level, logs msg. ev gets t's operation and key hash;
// the hash (a SHA-256) is computed only when a hook or a log line will see
// it.
func (e *Engine) report(ctx context.Context, k *keyedRequest, h func(context.Context, Event), ev Event, level slog.Level, msg string) {
	logIt := msg != "" && e.cfg.logger.Enabled(ctx, level)
	if h == nil && !logIt {
		return
	}
	ev.Operation, ev.KeyHash = k.op.ID, keyHash(k.storageKey)
	if h != nil {
		h(ctx, ev)
	}
	if logIt {
		e.cfg.logger.LogAttrs(ctx, level, msg, logAttrs(ev)...)
	}
}

// logAttrs are the attributes every engine log line carries.
func logAttrs(ev Event) []slog.Attr {
	attrs := []slog.Attr{slog.String("op", ev.Operation), slog.String("key_hash", ev.KeyHash)}
	if ev.Fence != 0 {
		attrs = append(attrs, slog.Int64("fence", ev.Fence))
	}
	if ev.Err != nil {
		attrs = append(attrs, slog.Any("err", ev.Err))
	}
	return attrs
}
