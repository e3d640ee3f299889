package idem

import (
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// maxRetryAfter stands for a Retry-After too large to represent: it exceeds
// every budget.
const maxRetryAfter = time.Duration(math.MaxInt64)

// parseRetryAfter parses a Retry-After value (RFC 9110, section 10.2.3):
// delay-seconds (1*DIGIT) or an HTTP-date, which is turned into a delay from
// now; a date in the past means no delay. Surrounding spaces are allowed. It
// reports false for an empty or malformed value, which the caller ignores.
// A delay too large for a time.Duration saturates at maxRetryAfter.
func parseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.Trim(v, " \t")
	if v == "" {
		return 0, false
	}
	if v[0] >= '0' && v[0] <= '9' {
		for i := 0; i < len(v); i++ {
			if v[i] < '0' || v[i] > '9' {
				return 0, false
			}
		}
		secs, err := strconv.ParseInt(v, 10, 64)
		if err != nil || secs > int64(maxRetryAfter/time.Second) {
			return maxRetryAfter, true // only digits: the error is a range error
		}
		return time.Duration(secs) * time.Second, true
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	d := t.Sub(now) // saturates at the bounds of time.Duration
	if d < 0 {
		d = 0
	}
	return d, true
}
