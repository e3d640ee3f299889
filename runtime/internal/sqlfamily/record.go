package sqlfamily

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/internal/headerjson"
	"github.com/idemgen/idemgen/runtime/internal/leaseleft"
)

// Row is what an acquire's read returns of a key's live record (one not
// expired), as each store scans it.
type Row struct {
	SameFingerprint bool          // the record is of the request's fingerprint
	Completed       bool          // the record holds a response; otherwise it is in progress
	Left            time.Duration // an in-progress record's lease left, by the database's clock
	Status          int32
	HasStatus       bool // Status is not NULL
	Header, Body    []byte
	BodyOmitted     bool
}

// Answer is the acquisition r answers: a mismatch, a replay of the record
// (which holds r's body), or a conflict with the record in progress, where
// lapsed reports that its lease has lapsed, so that a claim takes it over.
func (r *Row) Answer() (acq idemstore.Acquisition, lapsed bool, err error) {
	switch {
	case !r.SameFingerprint:
		return idemstore.Acquisition{Outcome: idemstore.OutcomeMismatch}, false, nil
	case !r.Completed:
		return idemstore.Acquisition{Outcome: idemstore.OutcomeConflict, Remaining: leaseleft.Round(r.Left)}, r.Left <= 0, nil
	case !r.HasStatus:
		return idemstore.Acquisition{}, false, errors.New("completed record without a status")
	}
	rec := &idemstore.Record{Status: int(r.Status), Body: r.Body, BodyOmitted: r.BodyOmitted}
	if rec.Body == nil {
		rec.Body = []byte{}
	}
	if len(r.Header) > 0 {
		if rec.Header, err = headerjson.Decode(r.Header); err != nil {
			return idemstore.Acquisition{}, false, fmt.Errorf("the stored header: %w", err)
		}
	}
	if rec.Header == nil {
		rec.Header = http.Header{}
	}
	return idemstore.Acquisition{Outcome: idemstore.OutcomeReplay, Record: rec}, false, nil
}

// OpenClaimWait is the Remaining of a conflict with a claim that a run's
// open transaction holds, whose end the store cannot foresee (it is the
// handler's): the duplicate's Retry-After.
const OpenClaimWait = time.Second

// Held is the answer to a request whose key an open claim holds, whose
// lease is lease (in the dialect's unit): a conflict of OpenClaimWait, or
// of the lease if shorter.
func (d *Dialect) Held(lease int64) idemstore.Acquisition {
	return idemstore.Acquisition{Outcome: idemstore.OutcomeConflict, Remaining: min(OpenClaimWait, time.Duration(lease)*d.Unit)}
}

// Moment is the answer to a request whose key changed hands between two
// of the store's statements: a conflict of a moment, which the engine's
// wait retries.
func Moment() idemstore.Acquisition {
	return idemstore.Acquisition{Outcome: idemstore.OutcomeConflict, Remaining: time.Millisecond}
}

// Claimed is the answer of a claim that took fence: a first run, or a
// recovered one when it took over an in-progress record whose lease
// lapsed.
func Claimed(fence int64, recovered bool) idemstore.Acquisition {
	if recovered {
		return idemstore.Acquisition{Outcome: idemstore.OutcomeRecovered, Fence: fence}
	}
	return idemstore.Acquisition{Outcome: idemstore.OutcomeFirstRun, Fence: fence}
}
