package extension

import (
	"net/textproto"
	"strconv"
	"strings"
	"time"

	"github.com/idemgen/idemgen/runtime/idemop"
)

// Settings is the complete configuration of one idempotent operation: the
// operation's x-idempotent over the document's defaults over the documented
// defaults.
type Settings struct {
	KeyHeader  string // set for a header key
	KeyPointer string // set for a body key
	// KeyPointers is set for a composite body key.
	KeyPointers []string
	// Provider is the provider as given ("" when not: the loader applies
	// the default, which depends on where the operation is).
	Provider  string
	Required  bool
	Retention time.Duration
	Lock      time.Duration
	Wait      time.Duration

	FingerprintIgnore  []string
	FingerprintHeaders []string // canonical header names

	// Final and Transient are the storage policy; Final is
	// idemop.DefaultFinal() unless the spec says otherwise.
	Final     []string
	Transient []int

	Retry RetrySettings
}

// RetrySettings is the client helper's default policy.
type RetrySettings struct {
	MaxAttempts     int
	InitialInterval time.Duration
	MaxInterval     time.Duration
	Multiplier      float64
	MaxElapsed      time.Duration
	AttemptTimeout  time.Duration // 0: none
	RetryOn         []int
}

// Defaults returns the settings of an operation that says nothing but
// x-idempotent: true. They are the runtime's own defaults (package idem), so
// that what the generated code states is what the runtime would do anyway.
func Defaults() Settings {
	p := idemop.DefaultRetryPolicy()
	return Settings{
		KeyHeader: idemop.DefaultKeyHeader,
		Required:  true,
		Retention: idemop.DefaultRetention,
		Lock:      idemop.DefaultLock,
		Final:     idemop.DefaultFinal(),
		Retry: RetrySettings{
			MaxAttempts:     p.MaxAttempts,
			InitialInterval: p.InitialInterval,
			MaxInterval:     p.MaxInterval,
			Multiplier:      p.Multiplier,
			MaxElapsed:      idemop.DefaultMaxElapsed(idemop.DefaultLock),
			AttemptTimeout:  p.AttemptTimeout,
			RetryOn:         p.RetryOn,
		},
	}
}

// Policy is the retry policy of r as the runtime takes it.
func (r RetrySettings) Policy() idemop.RetryPolicy {
	return idemop.RetryPolicy{
		MaxAttempts:     r.MaxAttempts,
		InitialInterval: r.InitialInterval,
		MaxInterval:     r.MaxInterval,
		Multiplier:      r.Multiplier,
		MaxElapsed:      r.MaxElapsed,
		AttemptTimeout:  r.AttemptTimeout,
		RetryOn:         r.RetryOn,
	}
}

// Resolve merges op over doc and over the Defaults, and checks the fields
// against each other and the retry policy against the runtime's own rules
// (idemop.RetryPolicy.Validate). The key is replaced as a whole; fingerprint
// and retry are merged member by member; lists replace lists. The error
// joins every problem found, each an *Error.
func Resolve(doc, op Spec) (Settings, error) {
	s := Defaults()
	s.Retry.MaxElapsed = 0 // unless a layer sets it: the lock's, below
	for _, layer := range []Spec{doc, op} {
		s.apply(layer)
	}
	if s.Retry.MaxElapsed == 0 {
		s.Retry.MaxElapsed = idemop.DefaultMaxElapsed(s.Lock)
	}
	var p problems
	for i, h := range s.FingerprintHeaders {
		s.FingerprintHeaders[i] = textproto.CanonicalMIMEHeaderKey(h)
		if s.KeyHeader != "" && strings.EqualFold(h, s.KeyHeader) {
			p.add("fingerprint.headers["+strconv.Itoa(i)+"]", "%s is the key header, which is never part of the fingerprint; remove it", strconv.Quote(h))
		}
	}
	if r := s.Retry; r.MaxInterval < r.InitialInterval {
		p.add("retry.maxInterval", "must be at least initialInterval (%s), got %s", r.InitialInterval, r.MaxInterval)
	}
	if err := idemop.CheckFinal(s.Final, s.Transient); err != nil {
		for _, e := range unwrapAll(err) {
			if fe, ok := e.(*idemop.FinalError); ok {
				p.add(fe.Field, "%s", fe.Msg)
			}
		}
	}
	if err := s.Retry.Policy().Validate(); err != nil {
		p.add("retry", "the runtime refuses the policy (%v): the generated client would fail every call", err)
	}
	if len(p) > 0 {
		return Settings{}, p.err()
	}
	return s, nil
}

func (s *Settings) apply(l Spec) {
	if l.Key != nil {
		s.KeyHeader, s.KeyPointer, s.KeyPointers = l.Key.Header, l.Key.Body, l.Key.Composite
	}
	setIf(&s.Provider, l.Provider)
	setIf(&s.Required, l.Required)
	setIf(&s.Retention, l.Retention)
	setIf(&s.Lock, l.Lock)
	setIf(&s.Wait, l.Wait)
	if l.Final != nil {
		s.Final = append([]string(nil), l.Final...)
	}
	if l.Transient != nil {
		s.Transient = append([]int(nil), l.Transient...)
	}
	if f := l.Fingerprint; f != nil {
		if f.Ignore != nil {
			s.FingerprintIgnore = append([]string(nil), f.Ignore...)
		}
		if f.Headers != nil {
			s.FingerprintHeaders = append([]string(nil), f.Headers...)
		}
	}
	if r := l.Retry; r != nil {
		setIf(&s.Retry.MaxAttempts, r.MaxAttempts)
		setIf(&s.Retry.InitialInterval, r.InitialInterval)
		setIf(&s.Retry.MaxInterval, r.MaxInterval)
		setIf(&s.Retry.Multiplier, r.Multiplier)
		setIf(&s.Retry.MaxElapsed, r.MaxElapsed)
		setIf(&s.Retry.AttemptTimeout, r.AttemptTimeout)
		if r.RetryOn != nil {
			s.Retry.RetryOn = append([]int(nil), r.RetryOn...)
		}
	}
}

func setIf[T any](dst *T, v *T) {
	if v != nil {
		*dst = *v
	}
}

// unwrapAll returns the errors err joins, or err itself.
func unwrapAll(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}
