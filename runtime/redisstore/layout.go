package redisstore

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/idemgen/idemgen/runtime/idemstore"
)

// A server that processes of the previous key layout served (record keys
// with the API's and operation's full names) is upgraded through package
// previouslayout, which reads and writes the records of that layout for a
// window: a day of rollout from when its first process used the server,
// then the retention. A store built without it inside that window would
// not find those records (their retries would run again) nor fence a
// previous-version run still in its handler, so it refuses to serve such a
// server until the window ends, and says when that is.

// KeyLayoutMarker is the key, under the store's prefix, of the time the
// current key layout started on the server: Unix ms as a decimal string,
// which the first process running package previouslayout writes (the
// server's time), or 0 when an operator ended the window. It has no ':'
// after the prefix, so it is never a record's key of either layout.
const KeyLayoutMarker = "key-layout-4"

// KeyLayoutRetention is the key, under the store's prefix, of the longest
// retention, in ms, that a process running previouslayout was given on the
// server: the window ends a day of rollout and that retention after the
// marker's time.
const KeyLayoutRetention = "key-layout-4-retention"

// previousRollout is previouslayout.Rollout: how long after the marker's
// time processes of the previous layout may still write records.
const previousRollout = 24 * time.Hour

// KeyLayout is what a server holds of the upgrade between the key layouts,
// under a store's prefix ([Store.KeyLayout]).
type KeyLayout struct {
	Now    time.Time // the server's clock when it was read
	Marker string    // the value of KeyLayoutMarker; "" when there is none
	// Since is when the first process running previouslayout used the
	// server (the marker's time); zero without a marker, with the marker
	// at 0 (the window ended by hand) or a malformed one.
	Since time.Time
	// WindowEnd is when previouslayout's window ends, or ended: Since
	// plus a day of rollout and the retention at KeyLayoutRetention, or,
	// when no process recorded one (Estimated: a release before it wrote
	// the marker), the default retention (24 h). Zero when Since is.
	WindowEnd time.Time
	Estimated bool
	// RolloutEnd is when processes of the previous layout are taken to
	// stop writing records: Since plus a day. Until then previouslayout
	// writes every record under both layouts. Zero when Since is.
	RolloutEnd time.Time
	Malformed  bool // the marker is neither 0 nor a time (previouslayout answers 503 until it is fixed)
}

// Open reports whether previouslayout's window is open: records of the
// previous key layout may still be read or written on the server.
func (l KeyLayout) Open() bool { return !l.WindowEnd.IsZero() && l.Now.Before(l.WindowEnd) }

// readKey returns the value of KEYS[1] ("" when absent) and the server's
// time, TIME's seconds and microseconds.
var readKey = redis.NewScript(`
local t = redis.call('TIME')
local v = redis.call('GET', KEYS[1])
if not v then v = '' end
return {v, t[1], t[2]}
`)

// KeyLayout reads what the store's server holds of the upgrade between
// the key layouts: the marker and the end of previouslayout's window. On a
// Cluster the two keys may live on two masters; the time is the first's.
func (s *Store) KeyLayout(ctx context.Context) (KeyLayout, error) {
	var l KeyLayout
	marker, now, err := s.readLayoutKey(ctx, KeyLayoutMarker)
	if err != nil {
		return l, err
	}
	l.Now, l.Marker = now, marker
	ms, perr := strconv.ParseInt(marker, 10, 64)
	switch {
	case marker == "" || marker == "0":
		return l, nil
	case perr != nil || ms < 0:
		l.Malformed = true
		return l, nil
	}
	l.Since = time.UnixMilli(ms)
	v, _, err := s.readLayoutKey(ctx, KeyLayoutRetention)
	if err != nil {
		return l, err
	}
	retention := idemstore.DefaultRetention
	if ms, err := strconv.ParseInt(v, 10, 64); err == nil && ms > 0 {
		retention = time.Duration(ms) * time.Millisecond
	} else {
		l.Estimated = true
	}
	l.RolloutEnd, l.WindowEnd = l.Since.Add(previousRollout), l.Since.Add(previousRollout+retention)
	return l, nil
}

// readLayoutKey returns the value of the key name under the prefix ("" for
// none) and the server's time.
func (s *Store) readLayoutKey(ctx context.Context, name string) (string, time.Time, error) {
	key := s.storageKey(name)
	v, err := readKey.Run(ctx, s.rdb, []string{key}).StringSlice()
	if err != nil {
		return "", time.Time{}, &idemstore.StoreError{Op: "read key layout", Err: fmt.Errorf("%s: %w", key, err)}
	}
	if len(v) != 3 {
		return "", time.Time{}, &idemstore.StoreError{Op: "read key layout", Err: fmt.Errorf("%s: malformed reply %q", key, v)}
	}
	sec, _ := strconv.ParseInt(v[1], 10, 64)
	usec, _ := strconv.ParseInt(v[2], 10, 64)
	return v[0], time.Unix(sec, usec*1000), nil
}

// WithPreviousLayoutIgnored lets the store serve a server on which
// previouslayout's window is still open ([KeyLayout.Open]), which it
// otherwise refuses (503 store-misconfigured, naming the window's end) until
// the window ends. What it gives up, until then: a retry of a request that
// a process of the previous key layout answered runs again, and a run of
// that layout still in its handler gets a second run beside it.
// previouslayout.New sets it on the stores it wraps, which serve the window.
func WithPreviousLayoutIgnored() Option {
	return func(s *Store) { s.layout.ignored = true }
}

// layoutGate is what the store's verification knows of the key layouts.
type layoutGate struct {
	ignored bool        // WithPreviousLayoutIgnored
	passed  atomic.Bool // a verification found no open window: it is not read again
}

// layoutProblem is the verification's look at the key layouts: what is
// wrong ("" if nothing), or the error that kept it from asking. Once a
// verification finds no open window, the store does not ask again: a
// window opened under a serving store is one a process of this layout
// opened, through previouslayout, which the deployment knows of.
func (s *Store) layoutProblem(ctx context.Context) (string, error) {
	if s.layout.ignored || s.layout.passed.Load() {
		return "", nil
	}
	l, err := s.KeyLayout(ctx)
	switch {
	case err != nil:
		return "", err
	case !l.Open():
		s.layout.passed.Store(true)
		return "", nil
	}
	retention := fmt.Sprintf("the longest retention a process running it was given, %v", l.WindowEnd.Sub(l.Since)-previousRollout)
	if l.Estimated {
		retention = "the default retention, 24h; a longer one ends it later"
	}
	return fmt.Sprintf("the upgrade from the previous key layout is in its window on this server until %s (%s: the first process running "+
		"previouslayout used it at %s; then a day of rollout and %s): until then records of the previous layout may be read and written, "+
		"and a store built without previouslayout would run their retries again and give a run of the previous version still in its handler "+
		"a second run: build the store with previouslayout.New(rdb, retention, ...) until then, or pass redisstore.WithPreviousLayoutIgnored() "+
		"to accept that; SET %s 0 ends the window at once if no process of the previous layout ran within the retention",
		l.WindowEnd.UTC().Format(time.RFC3339), s.storageKey(KeyLayoutMarker), l.Since.UTC().Format(time.RFC3339), retention,
		s.storageKey(KeyLayoutMarker)), nil
}
