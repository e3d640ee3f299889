package idemop

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
)

// DefaultFinal is what an [Operation] whose Final is nil stores and
// replays: every 2xx, 3xx and 4xx answer, except the statuses that are
// never final (see [NeverFinal]).
func DefaultFinal() []string { return []string{"2xx", "3xx", "4xx"} }

// NeverFinal returns the statuses that are never stored, whatever an
// operation's policy says: 408 Request Timeout, 409 Conflict, 425 Too
// Early and 429 Too Many Requests each tell the client to try again, so a
// replay of one would refuse the key for good. A class in Final leaves them
// out; naming one in Final is an error ([CheckFinal]).
func NeverFinal() []int {
	return []int{http.StatusRequestTimeout, http.StatusConflict, http.StatusTooEarly, http.StatusTooManyRequests}
}

// FinalError is one problem of an operation's storage policy: Field names
// the entry ("final[2]", "transient[0]").
type FinalError struct {
	Field string
	Msg   string
}

// Error returns "field: msg".
func (e *FinalError) Error() string { return e.Field + ": " + e.Msg }

// CheckFinal reports what is wrong with a storage policy (an [Operation]'s
// Final and Transient): every problem, joined, each a *[FinalError]; nil
// when there is none. Final entries are status codes ("500") and classes
// ("2xx" to "5xx"); a code must be 200 to 599 and not one of [NeverFinal].
// Transient entries are status codes from 100 to 599, none of which Final
// names exactly. An entry listed twice is an error. The generator applies
// it to x-idempotent; idemgen.NewEngineFor and idem.Do refuse a policy it
// refuses.
func CheckFinal(final []string, transient []int) error {
	var errs []error
	add := func(field, format string, args ...any) {
		errs = append(errs, &FinalError{Field: field, Msg: fmt.Sprintf(format, args...)})
	}
	for i, f := range final {
		field := "final[" + strconv.Itoa(i) + "]"
		code, class, ok := parseFinal(f)
		switch {
		case !ok:
			add(field, "%q is neither a status code (500) nor a class (2xx, 3xx, 4xx, 5xx)", f)
		case class == 1 || code > 0 && code < 200:
			add(field, "%q: a 1xx answer is never final", f)
		case code > 0 && slices.Contains(NeverFinal(), code):
			add(field, "%d is never stored: it tells the client to try again, and a replay would refuse the key for good", code)
		case slices.Contains(final[:i], f):
			add(field, "%q is listed twice", f)
		}
	}
	for i, n := range transient {
		field := "transient[" + strconv.Itoa(i) + "]"
		switch {
		case n < 100 || n > 599:
			add(field, "must be an HTTP status code from 100 to 599, got %d", n)
		case slices.Contains(transient[:i], n):
			add(field, "%d is listed twice", n)
		case slices.Contains(final, strconv.Itoa(n)):
			add(field, "%d is also listed in final; say once whether it is stored", n)
		}
	}
	return errors.Join(errs...)
}

// parseFinal parses a Final entry: a status code (code set) or a class
// "Nxx" (class N set).
func parseFinal(f string) (code, class int, ok bool) {
	if len(f) != 3 || f[0] < '1' || f[0] > '5' {
		return 0, 0, false
	}
	if f[1] == 'x' && f[2] == 'x' || f[1] == 'X' && f[2] == 'X' {
		return 0, int(f[0] - '0'), true
	}
	if f[1] < '0' || f[1] > '9' || f[2] < '0' || f[2] > '9' {
		return 0, 0, false
	}
	return int(f[0]-'0')*100 + int(f[1]-'0')*10 + int(f[2]-'0'), 0, true
}

// Stores reports whether op's storage policy stores and replays an answer
// with status: one that Final names (by code or class; DefaultFinal when
// nil), that Transient does not, and that is not one of NeverFinal. The
// engine asks it of every answer a handler completes; the generator and
// the overlay ask it too, so that what they publish is what runs.
func (op *Operation) Stores(status int) bool {
	switch status {
	case http.StatusRequestTimeout, http.StatusConflict, http.StatusTooEarly, http.StatusTooManyRequests:
		return false // NeverFinal
	}
	if op.Final == nil && op.Transient == nil {
		return status >= 200 && status < 500 // DefaultFinal
	}
	if slices.Contains(op.Transient, status) {
		return false
	}
	if op.Final == nil {
		return status >= 200 && status < 500
	}
	for _, f := range op.Final {
		code, class, ok := parseFinal(f)
		if ok && (code == status || class >= 2 && code == 0 && status/100 == class) {
			return true
		}
	}
	return false
}
