package sqlfamily

import "sync"

// Runs are a store's open runs (R: its run's type), by key and owner
// token: the runs whose claim its open transaction holds, for the steps
// they journal. Its zero value is empty.
type Runs[R comparable] struct {
	m sync.Map // runKey -> R
}

// runKey names an open run.
type runKey struct{ key, token string }

// Add adds r, the run of key that token owns.
func (rs *Runs[R]) Add(key, token string, r R) { rs.m.Store(runKey{key, token}, r) }

// Of returns the open run of key that token owns, if any.
func (rs *Runs[R]) Of(key, token string) (r R, ok bool) {
	v, ok := rs.m.Load(runKey{key, token})
	if ok {
		r = v.(R)
	}
	return r, ok
}

// Drop drops r, which is over, unless another run took its place.
func (rs *Runs[R]) Drop(key, token string, r R) { rs.m.CompareAndDelete(runKey{key, token}, r) }
