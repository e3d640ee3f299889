package sqlfamily

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/idemgen/idemgen/runtime/idemstore"
)

// Core is what every SQL store keeps beside its driver's state: its
// options, the error of its table's name, its verdict on the schema
// (verify.go) and its background purge (purge.go). A [Store] holds one
// from [NewCore], and sets Check and Purge.
type Core struct {
	Dialect *Dialect
	Options
	Table    Table
	TableErr error // WithTable's, returned by every call

	// Check is the store's Check, which Verified runs; Purge its Purge,
	// which the background purge runs.
	Check func(context.Context) error
	Purge func(context.Context) (int64, error)

	verify verifier

	stop      chan struct{} // closed by Close
	stopOnce  sync.Once
	purgeOnce sync.Once // the background purge starts with the first acquire admitted
	purging   sync.WaitGroup
}

// NewCore returns the core of a store of dialect d, with the options'
// defaults.
func NewCore(d *Dialect) *Core {
	c := &Core{Dialect: d, Options: DefaultOptions(), stop: make(chan struct{})}
	c.Table, _ = d.ParseTable(DefaultTable)
	return c
}

// SetTable sets the records' table (WithTable); a name that is not valid
// makes every call of the store fail with an error that says so.
func (c *Core) SetTable(name string) { c.Table, c.TableErr = c.Dialect.ParseTable(name) }

// CheckArgs rejects an empty key or token, a key longer than the
// dialect's MaxKey, and calls of a store whose WithTable name was not
// valid.
func (c *Core) CheckArgs(key, token string) error {
	switch {
	case c.TableErr != nil:
		return c.TableErr
	case key == "":
		return errors.New("idem: empty storage key")
	case c.Dialect.MaxKey > 0 && len(key) > c.Dialect.MaxKey:
		return fmt.Errorf("idem: storage key of %d bytes: %s keeps keys of at most %d", len(key), c.Dialect.Name, c.Dialect.MaxKey)
	case token == "":
		return errors.New("idem: empty owner token")
	}
	return nil
}

// Admit checks an acquire's arguments (CheckArgs of its key and token, a
// fingerprint, a lease not negative) and returns its lease in the
// dialect's unit, or the misconfiguration that refuses it (Verified). The
// first acquire it admits starts the background purge (startPurge).
func (c *Core) Admit(ctx context.Context, req idemstore.AcquireRequest) (lease int64, err error) {
	lease, err = c.Dialect.Duration("lease", req.Lease, idemstore.DefaultLease)
	if err != nil {
		return 0, err
	}
	if err := c.CheckArgs(req.Key, req.Token); err != nil {
		return 0, err
	}
	if req.Fingerprint == "" {
		return 0, errors.New("idem: acquire: empty fingerprint")
	}
	if err := c.Verified(ctx); err != nil {
		return 0, err
	}
	c.purgeOnce.Do(c.startPurge)
	return lease, nil
}

// CheckComplete checks a completion's arguments (a retention not
// negative, CheckArgs of its key and token, a record) and returns its
// retention in the dialect's unit.
func (c *Core) CheckComplete(key, token string, rec *idemstore.Record, retention time.Duration) (int64, error) {
	ret, err := c.Dialect.Duration("retention", retention, idemstore.DefaultRetention)
	if err != nil {
		return 0, err
	}
	if err := c.CheckArgs(key, token); err != nil {
		return 0, err
	}
	if rec == nil {
		return 0, errors.New("idem: complete: nil record")
	}
	return ret, nil
}

// CheckExtend checks an extension's arguments (a lease not negative,
// CheckArgs of its key and token) and returns its lease in the dialect's
// unit.
func (c *Core) CheckExtend(key, token string, lease time.Duration) (int64, error) {
	l, err := c.Dialect.Duration("lease", lease, idemstore.DefaultLease)
	if err != nil {
		return 0, err
	}
	return l, c.CheckArgs(key, token)
}

// Abandoned is AbandonedTTL in the dialect's unit.
func (c *Core) Abandoned() int64 {
	n, _ := c.Dialect.Duration("abandoned TTL", c.AbandonedTTL, idemstore.DefaultRetention) // > 0: no error
	return n
}

// Owned is the answer of a statement that changes the row token owns:
// [idemstore.ErrNotOwner] when it changed none.
func Owned(rows int64) error {
	if rows == 0 {
		return idemstore.ErrNotOwner
	}
	return nil
}
