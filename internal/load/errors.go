package load

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// Error is a problem in the spec, located as precisely as the loader can.
type Error struct {
	File      string // the spec, as named on the command line
	Line      int    // 0 when unknown
	Operation string // operationId (or "METHOD /path"); "" for the document
	Err       error
}

// Error returns "file:line: operation op: message".
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	b.WriteString(": ")
	if e.Operation != "" {
		b.WriteString("operation " + e.Operation + ": ")
	}
	b.WriteString(e.Err.Error())
	return b.String()
}

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

// Errors is every problem of one run, sorted by line, then operation, then
// message, so a spec with several problems is reported in full, like a
// compiler's errors.
type Errors []*Error

// Error returns the problems, one a line.
func (es Errors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap returns the problems, for errors.Is and errors.As.
func (es Errors) Unwrap() []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}

func (es Errors) sort() {
	slices.SortStableFunc(es, func(a, b *Error) int {
		return cmp.Or(cmp.Compare(a.Line, b.Line), cmp.Compare(a.Operation, b.Operation), cmp.Compare(a.Err.Error(), b.Err.Error()))
	})
}

// leaves returns the errors that err joins (errors.Join, at any depth), or
// err alone.
func leaves(err error) []error {
	j, ok := err.(interface{ Unwrap() []error })
	if !ok {
		return []error{err}
	}
	var out []error
	for _, e := range j.Unwrap() {
		out = append(out, leaves(e)...)
	}
	return out
}
