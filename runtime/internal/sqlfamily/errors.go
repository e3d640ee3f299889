package sqlfamily

import (
	"github.com/idemgen/idemgen/runtime/idemstore"
)

// Misconfigured is the *idemstore.StoreError of op for a database set up
// so that the store cannot work on it: msg says what to change.
func Misconfigured(op, msg string) error {
	return &idemstore.StoreError{Op: op, Err: &ConfigError{Msg: msg}}
}

// ConfigError is a database set up so that the store cannot work on it. Its
// message says what to change.
type ConfigError struct {
	Msg string
	Err error // the database's error, if any
}

func (e *ConfigError) Error() string { return "misconfigured: " + e.Msg }

// Is makes errors.Is(err, idemstore.ErrStoreMisconfigured) true.
func (e *ConfigError) Is(target error) bool { return target == idemstore.ErrStoreMisconfigured }

// Unwrap returns the database's error.
func (e *ConfigError) Unwrap() error { return e.Err }
