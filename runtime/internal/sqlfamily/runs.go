package sqlfamily

import "sync"

// Runs are a store's open runs (R: its run's type), by key and owner
// token: the runs whose claim its open transaction holds, for the steps
// they journal. Its zero value is empty.
type Runs[R comparable] struct {
	m     sync.Map // runKey -> R
	byKey sync.Map // key -> *held, the latest run of each key
}

// held is the run of a key: its owner token, and the fingerprint of the
// request it runs.
type held struct{ token, fp string }

// runKey names an open run.
type runKey struct{ key, token string }

// Add adds r, the run of key that token owns, which runs a request whose
// fingerprint is fp.
func (rs *Runs[R]) Add(key, token, fp string, r R) {
	rs.m.Store(runKey{key, token}, r)
	rs.byKey.Store(key, &held{token: token, fp: fp})
}

// OtherPayload reports whether a run of this process holds key's claim for
// a request of another payload than fp: such a request is answered 422 at
// once, as a completed record of another payload is, rather than 409 (a
// run of another process holds its claim unseen: that is answered 409).
func (rs *Runs[R]) OtherPayload(key, fp string) bool {
	h, ok := rs.byKey.Load(key)
	return ok && h.(*held).fp != fp
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
	if rs.m.CompareAndDelete(runKey{key, token}, r) {
		if h, ok := rs.byKey.Load(key); ok && h.(*held).token == token {
			rs.byKey.CompareAndDelete(key, h)
		}
	}
}
