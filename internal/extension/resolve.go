package extension

import (
	"net/textproto"
	"strconv"
	"strings"
	"time"
)

// The documented defaults, used when neither the operation nor the document
// says otherwise. They match the runtime's (package idem).
const (
	DefaultKeyHeader       = "Idempotency-Key"
	DefaultRetention       = 24 * time.Hour
	DefaultLock            = 30 * time.Second
	DefaultMaxAttempts     = 5
	DefaultInitialInterval = 200 * time.Millisecond
	DefaultMaxInterval     = 5 * time.Second
	DefaultMultiplier      = 2.0
	DefaultMaxElapsed      = 30 * time.Second
)

// DefaultRetryOn is the list of statuses retried by default.
func DefaultRetryOn() []int { return []int{409, 429, 502, 503, 504} }

// Settings is the complete configuration of one idempotent operation: the
// operation's x-idempotent over the document's defaults over the documented
// defaults.
type Settings struct {
	KeyHeader  string // set for a header key
	KeyPointer string // set for a body key
	Required   bool
	Retention  time.Duration
	Lock       time.Duration
	Wait       time.Duration

	FingerprintIgnore  []string
	FingerprintHeaders []string // canonical header names

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

// Resolve merges op over doc and over the defaults, and checks the fields
// against each other. The key is replaced as a whole; fingerprint and retry
// are merged member by member; lists replace lists.
func Resolve(doc, op Spec) (Settings, error) {
	s := Settings{
		KeyHeader: DefaultKeyHeader,
		Required:  true,
		Retention: DefaultRetention,
		Lock:      DefaultLock,
		Retry: RetrySettings{
			MaxAttempts:     DefaultMaxAttempts,
			InitialInterval: DefaultInitialInterval,
			MaxInterval:     DefaultMaxInterval,
			Multiplier:      DefaultMultiplier,
			MaxElapsed:      DefaultMaxElapsed,
			RetryOn:         DefaultRetryOn(),
		},
	}
	for _, layer := range []Spec{doc, op} {
		s.apply(layer)
	}
	for i, h := range s.FingerprintHeaders {
		s.FingerprintHeaders[i] = textproto.CanonicalMIMEHeaderKey(h)
		if s.KeyHeader != "" && strings.EqualFold(h, s.KeyHeader) {
			return Settings{}, errorf("fingerprint.headers["+strconv.Itoa(i)+"]", "%s is the key header, which is never part of the fingerprint; remove it", strconv.Quote(h))
		}
	}
	if r := s.Retry; r.MaxInterval < r.InitialInterval {
		return Settings{}, errorf("retry.maxInterval", "must be at least initialInterval (%s), got %s", r.InitialInterval, r.MaxInterval)
	}
	return s, nil
}

func (s *Settings) apply(l Spec) {
	if l.Key != nil {
		s.KeyHeader, s.KeyPointer = l.Key.Header, l.Key.Body
	}
	setIf(&s.Required, l.Required)
	setIf(&s.Retention, l.Retention)
	setIf(&s.Lock, l.Lock)
	setIf(&s.Wait, l.Wait)
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
