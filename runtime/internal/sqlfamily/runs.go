package sqlfamily

import "sync"

// Run is what Runs keeps of a store's run: the fingerprint of the request
// it runs.
type Run interface {
	comparable
	Fingerprint() string
}

// Runs are a store's open runs (R: its run's type), by key and owner
// token: the runs whose claim its open transaction holds, for the steps
// they journal, and the latest of each key, for a request of another
// payload. Its zero value is empty.
type Runs[R Run] struct {
	m     sync.Map // runKey -> R
	byKey sync.Map // key -> R, the latest run of each key
}

// runKey names an open run.
type runKey struct{ key, token string }

// Add adds r, the run of key that token owns.
func (rs *Runs[R]) Add(key, token string, r R) {
	rs.m.Store(runKey{key, token}, r)
	rs.byKey.Store(key, r)
}

// OtherPayload reports whether a run of this process holds key's claim for
// a request of another payload than fp: such a request is answered 422 at
// once, as a completed record of another payload is, rather than 409 (a
// run of another process holds its claim unseen: that is answered 409).
func (rs *Runs[R]) OtherPayload(key, fp string) bool {
	r, ok := rs.byKey.Load(key)
	return ok && r.(R).Fingerprint() != fp
}

// Of returns the open run of key that token owns, if any.
func (rs *Runs[R]) Of(key, token string) (r R, ok bool) {
	v, ok := rs.m.Load(runKey{key, token})
	if ok {
		r = v.(R)
	}
	return r, ok
}

// Drop drops r, which is over, unless another run took its place.
func (rs *Runs[R]) Drop(key, token string, r R) {
	rs.m.CompareAndDelete(runKey{key, token}, r)
	rs.byKey.CompareAndDelete(key, r)
}
