// Package leaseleft rounds the time an in-progress record's lease has
// left as the SQL stores report it in a conflict, the database having
// given them the difference only (see pgstore's and mysqlstore's read).
package leaseleft

import "time"

// Round is left rounded up to whole milliseconds, and at least one: a
// conflict's Remaining, which is never zero (the engine waits it out).
func Round(left time.Duration) time.Duration {
	if left <= 0 {
		return time.Millisecond
	}
	return (left + time.Millisecond - 1).Truncate(time.Millisecond)
}
