package sqlfamily

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/idemgen/idemgen/runtime/idemstore"
)

// Core is what every SQL store keeps beside its driver's state: its
// options, the error of its table's name, its verdict on the schema
// (verify.go) and its background purge (purge.go). A store holds one from
// [NewCore], applies its options to it, then sets Check and Purge.
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

	stop     chan struct{} // closed by Close
	stopOnce sync.Once
	purging  sync.WaitGroup
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

// CheckAcquire is CheckArgs of an acquire's key and token, and refuses an
// empty fingerprint.
func (c *Core) CheckAcquire(req idemstore.AcquireRequest) error {
	if err := c.CheckArgs(req.Key, req.Token); err != nil {
		return err
	}
	if req.Fingerprint == "" {
		return errors.New("idem: acquire: empty fingerprint")
	}
	return nil
}

// CheckComplete is CheckArgs of a completion's key and token, and refuses
// a nil record.
func (c *Core) CheckComplete(key, token string, rec *idemstore.Record) error {
	if err := c.CheckArgs(key, token); err != nil {
		return err
	}
	if rec == nil {
		return errors.New("idem: complete: nil record")
	}
	return nil
}

// Owned is the answer of a statement that changes the row token owns:
// [idemstore.ErrNotOwner] when it changed none.
func Owned(rows int64) error {
	if rows == 0 {
		return idemstore.ErrNotOwner
	}
	return nil
}
