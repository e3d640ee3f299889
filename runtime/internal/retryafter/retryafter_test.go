package retryafter

import (
	"net/http"
	"strconv"
	"testing"
	"time"
)

func TestRetryAfterParse(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"0", 0, true},
		{"5", 5 * time.Second, true},
		{" 7\t", 7 * time.Second, true},
		{"007", 7 * time.Second, true},
		{"99999999999999999999", Max, true},
		{"9223372037", Max, true}, // seconds beyond time.Duration
		{"9223372036", 9223372036 * time.Second, true},
		{now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second, true},
		{now.Add(-time.Hour).Format(http.TimeFormat), 0, true},
		{"Sunday, 01-Mar-26 12:00:30 GMT", 30 * time.Second, true}, // RFC 850
		{"Sun Mar  1 12:01:00 2026", time.Minute, true},            // asctime
		{"", 0, false},
		{"   ", 0, false},
		{"-1", 0, false},
		{"+5", 0, false},
		{"1.5", 0, false},
		{"5s", 0, false},
		{"1 2", 0, false},
		{"tomorrow", 0, false},
	}
	for _, tt := range tests {
		got, ok := Parse(tt.in, now)
		if got != tt.want || ok != tt.ok {
			t.Errorf("Parse(%q) = %v, %v; want %v, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

// FuzzRetryAfter checks that any header value parses without panicking, to
// a non-negative delay, and only when it is delay-seconds or an HTTP-date.
func FuzzRetryAfter(f *testing.F) {
	for _, s := range []string{"0", "120", " 3 ", "-1", "1e3", "99999999999999999999",
		"Sun, 01 Mar 2026 12:00:00 GMT", "Sunday, 01-Mar-26 12:00:30 GMT", "Sun Mar  1 12:01:00 2026", ""} {
		f.Add(s)
	}
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, v string) {
		d, ok := Parse(v, now)
		if d < 0 {
			t.Fatalf("Parse(%q) = %v, negative", v, d)
		}
		if !ok {
			if d != 0 {
				t.Fatalf("Parse(%q) = %v with ok false", v, d)
			}
			return
		}
		trimmed := trimOWS(v)
		if secs, err := strconv.ParseUint(trimmed, 10, 64); err == nil && secs <= uint64(Max/time.Second) {
			if d != time.Duration(secs)*time.Second {
				t.Fatalf("Parse(%q) = %v, want %ds", v, d, secs)
			}
			return
		}
		if _, err := http.ParseTime(trimmed); err != nil && d != Max {
			t.Fatalf("Parse(%q) accepted a value that is neither delay-seconds nor an HTTP-date", v)
		}
	})
}

func trimOWS(s string) string {
	for len(s) > 0 && (s[0] == ' ' || s[0] == '\t') {
		s = s[1:]
	}
	for len(s) > 0 && (s[len(s)-1] == ' ' || s[len(s)-1] == '\t') {
		s = s[:len(s)-1]
	}
	return s
}
