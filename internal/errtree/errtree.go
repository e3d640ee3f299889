// Package errtree walks an error tree: the errors that errors.Join (or
// any error with an Unwrap() []error method) holds, as the generator's
// stages report every problem of a run rather than the first.
package errtree

// Leaves returns the errors that err joins, depth first, in order: each
// error of the tree that joins no others. An error that wraps a single
// error (fmt.Errorf with one %w) is a leaf. Leaves(nil) is nil.
func Leaves(err error) []error {
	if err == nil {
		return nil
	}
	j, ok := err.(interface{ Unwrap() []error })
	if !ok {
		return []error{err}
	}
	var out []error
	for _, e := range j.Unwrap() {
		out = append(out, Leaves(e)...)
	}
	return out
}
