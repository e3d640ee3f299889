package sqlfamily

import (
	"context"
	"log/slog"
	"time"
)

// PurgeAll deletes expired rows batch after batch: the records' through
// records, then the step journal's through steps (each deletes one batch
// of at most n rows), each until a batch deletes fewer than the purge
// batch or ctx ends; it returns how many it deleted. A journal table that
// does not exist (a store set up before it existed, which never journaled
// a step) is no error.
func (c *Core) PurgeAll(ctx context.Context, records, steps func(ctx context.Context, n int) (int64, error)) (int64, error) {
	if c.TableErr != nil {
		return 0, c.TableErr
	}
	total, err := c.purgeBatches(ctx, records)
	if err != nil {
		return total, c.Dialect.StoreError("purge", err)
	}
	n, err := c.purgeBatches(ctx, steps)
	if err != nil && !c.Dialect.NoTable(err) {
		return total + n, c.Dialect.StoreError("purge", err)
	}
	return total + n, nil
}

// purgeBatches runs batch until it deletes fewer than the purge batch.
func (c *Core) purgeBatches(ctx context.Context, batch func(context.Context, int) (int64, error)) (int64, error) {
	var total int64
	for {
		n, err := batch(ctx, c.PurgeBatch)
		if err != nil {
			return total, err
		}
		total += n
		if n < int64(c.PurgeBatch) {
			return total, nil
		}
	}
}

// startPurge starts the background purge, unless it is off: Purge every
// purge interval, each run bounded by the interval and cut short by
// Close.
func (c *Core) startPurge() {
	if c.PurgeEvery < 0 {
		return
	}
	c.purging.Add(1)
	go func() {
		defer c.purging.Done()
		t := time.NewTicker(c.PurgeEvery)
		defer t.Stop()
		for {
			select {
			case <-c.stop:
				return
			case <-t.C:
			}
			ctx, cancel := context.WithTimeout(context.Background(), c.PurgeEvery)
			go func() { // Close cuts a purge short
				select {
				case <-c.stop:
					cancel()
				case <-ctx.Done():
				}
			}()
			if _, err := c.Purge(ctx); err != nil && ctx.Err() == nil {
				slog.Warn(c.Dialect.Name+": purge of expired records failed; it runs again in "+c.PurgeEvery.String(), slog.Any("err", err))
			}
			cancel()
		}
	}()
}

// Close stops the background purge and waits for a purge in flight.
func (c *Core) Close() {
	c.stopOnce.Do(func() { close(c.stop) })
	c.purging.Wait()
}

// Closed reports whether Close has begun.
func (c *Core) Closed() bool {
	select {
	case <-c.stop:
		return true
	default:
		return false
	}
}
