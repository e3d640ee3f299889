package redisstore

import (
	"errors"
	"fmt"
	"time"

	"github.com/idemgen/idemgen/runtime/idemstore"
)

// errMalformedReply is wrapped by every error of decodeAcquireReply.
var errMalformedReply = errors.New("malformed acquire reply")

// decodeAcquireReply decodes the reply of lua/acquire.lua as go-redis
// returns it: a []any whose first element is the outcome, integers as
// int64 and strings as string. It checks every element and returns an error
// wrapping errMalformedReply instead of guessing.
func decodeAcquireReply(v any) (idemstore.Acquisition, error) {
	fail := func(format string, args ...any) (idemstore.Acquisition, error) {
		return idemstore.Acquisition{}, fmt.Errorf("%w: %s", errMalformedReply, fmt.Sprintf(format, args...))
	}
	arr, ok := v.([]any)
	if !ok || len(arr) == 0 {
		return fail("want a non-empty array, got %T", v)
	}
	outcome, ok := arr[0].(string)
	if !ok {
		return fail("outcome is %T, want string", arr[0])
	}
	want := 2
	switch outcome {
	case "mismatch":
		want = 1
	case "proceed", "recovered", "conflict", "replay":
	default:
		return fail("unknown outcome %q", outcome)
	}
	if len(arr) != want {
		return fail("%s has %d elements, want %d", outcome, len(arr), want)
	}
	switch outcome {
	case "mismatch":
		return idemstore.Acquisition{Outcome: idemstore.OutcomeMismatch}, nil
	case "conflict":
		ms, ok := arr[1].(int64)
		if !ok || ms < 1 {
			return fail("conflict remaining %v (%T), want a positive integer", arr[1], arr[1])
		}
		if ms > int64(maxDuration/time.Millisecond) {
			return fail("conflict remaining %d ms out of range", ms)
		}
		return idemstore.Acquisition{Outcome: idemstore.OutcomeConflict, Remaining: time.Duration(ms) * time.Millisecond}, nil
	case "proceed", "recovered":
		fence, ok := arr[1].(int64)
		if !ok || fence < 1 {
			return fail("%s fence %v (%T), want a positive integer", outcome, arr[1], arr[1])
		}
		acq := idemstore.Acquisition{Outcome: idemstore.OutcomeFirstRun, Fence: fence}
		if outcome == "recovered" {
			acq.Outcome = idemstore.OutcomeRecovered
		}
		return acq, nil
	}
	s, ok := arr[1].(string)
	if !ok {
		return fail("replay record is %T, want string", arr[1])
	}
	r, err := parseRecord(s)
	if err == nil && r.state != stateCompleted {
		err = errors.New("record is not completed")
	}
	if err != nil {
		return fail("replay: %v", err)
	}
	return idemstore.Acquisition{Outcome: idemstore.OutcomeReplay, Record: r.result}, nil
}

// maxDuration is the longest time.Duration.
const maxDuration = time.Duration(1<<63 - 1)
