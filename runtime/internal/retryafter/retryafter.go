// Package retryafter parses and formats the value of the Retry-After
// header (RFC 9110, section 10.2.3), for the client's backoff and the
// server's 409 and 503 answers.
package retryafter

import (
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Max stands for a Retry-After too large to represent: it exceeds
// every budget.
const Max = time.Duration(math.MaxInt64)

// Parse parses a Retry-After value (RFC 9110, section 10.2.3):
// delay-seconds (1*DIGIT) or an HTTP-date, which is turned into a delay from
// now; a date in the past means no delay. Surrounding spaces are allowed. It
// reports false for an empty or malformed value, which the caller ignores.
// A delay too large for a time.Duration saturates at [Max].
func Parse(v string, now time.Time) (time.Duration, bool) {
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
		if err != nil || secs > int64(Max/time.Second) {
			return Max, true // only digits: the error is a range error
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

// Format renders d as a Retry-After value: whole seconds, rounded up, at
// least 1.
func Format(d time.Duration) string {
	s := int64(math.Ceil(d.Seconds()))
	if s < 1 {
		s = 1
	}
	return strconv.FormatInt(s, 10)
}
