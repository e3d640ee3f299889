package sqlfamily

import (
	"runtime"
	"time"

	"github.com/idemgen/idemgen/runtime/idemstore"
)

// Defaults of the options every SQL store takes (each store's
// DefaultPurgeInterval and DefaultPurgeBatch).
const (
	DefaultPurgeInterval = time.Minute
	DefaultPurgeBatch    = 1000
)

// Options are the options every SQL store takes (its WithAbandonedTTL,
// WithPurgeInterval, WithPurgeBatch and WithReadLanes); each store's
// With... function calls the setter of the same name, whose rule for a
// zero or negative argument the store's documentation states.
type Options struct {
	AbandonedTTL time.Duration // lifetime of an in-progress record past its lease
	PurgeEvery   time.Duration // < 0: no background purge
	PurgeBatch   int
	readLanes    int // < 0: none; 0: GOMAXPROCS
}

// DefaultOptions are the options of a store given none.
func DefaultOptions() Options {
	return Options{
		AbandonedTTL: idemstore.DefaultRetention,
		PurgeEvery:   DefaultPurgeInterval,
		PurgeBatch:   DefaultPurgeBatch,
	}
}

// SetAbandonedTTL sets AbandonedTTL; d <= 0 keeps it.
func (o *Options) SetAbandonedTTL(d time.Duration) {
	if d > 0 {
		o.AbandonedTTL = d
	}
}

// SetPurgeInterval sets PurgeEvery; d < 0 turns the background purge off,
// d == 0 keeps it.
func (o *Options) SetPurgeInterval(d time.Duration) {
	if d != 0 {
		o.PurgeEvery = d
	}
}

// SetPurgeBatch sets PurgeBatch; n <= 0 keeps it.
func (o *Options) SetPurgeBatch(n int) {
	if n > 0 {
		o.PurgeBatch = n
	}
}

// SetReadLanes sets the number of read lanes; n < 0 turns them off, n ==
// 0 keeps the default.
func (o *Options) SetReadLanes(n int) {
	if n != 0 {
		o.readLanes = n
	}
}

// ReadLanes is how many read lanes the store keeps: GOMAXPROCS unless set,
// 0 for none.
func (o *Options) ReadLanes() int {
	switch {
	case o.readLanes < 0:
		return 0
	case o.readLanes == 0:
		return runtime.GOMAXPROCS(0)
	}
	return o.readLanes
}
