package mysqlstore

import (
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/go-sql-driver/mysql"

	"github.com/idemgen/idemgen/runtime/internal/sqlfamily"
)

// dsnForm is how go-sql-driver/mysql reads a DSN.
const dsnForm = "user:password@tcp(host:port)/database?param=value"

// OpenDB opens a pool of go-sql-driver/mysql connections to dsn, as
// sql.Open("mysql", dsn) does, but a DSN the driver cannot read is refused
// with what to write instead: a URL (mysql://user:password@host:3306/db),
// which the driver would read as a network named host:3306, is answered
// with the driver's form of it. No connection is made until the pool's
// first use ([Store.Check]).
func OpenDB(dsn string) (*sql.DB, error) {
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return nil, dsnError(dsn, err)
	}
	c, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, dsnError(dsn, err)
	}
	return sql.OpenDB(c), nil
}

// dsnError is the failure to read dsn, err the driver's. It repeats no
// password.
func dsnError(dsn string, err error) error {
	u, uerr := url.Parse(dsn)
	if uerr != nil || u.Scheme == "" || u.Host == "" || !strings.Contains(dsn, "://") {
		return fmt.Errorf("mysqlstore: go-sql-driver/mysql cannot read the DSN; it takes %s: %w", dsnForm, err)
	}
	var b strings.Builder
	if u.User != nil {
		b.WriteString(u.User.Username())
		if _, ok := u.User.Password(); ok {
			b.WriteString(":<password>")
		}
		b.WriteString("@")
	}
	fmt.Fprintf(&b, "tcp(%s)/%s", u.Host, strings.TrimPrefix(u.Path, "/"))
	if u.RawQuery != "" {
		b.WriteString("?" + u.RawQuery)
	}
	return fmt.Errorf("mysqlstore: the DSN is a URL (%s://...), which go-sql-driver/mysql does not read; it takes %s: write %s: %w", u.Scheme, dsnForm, b.String(), err)
}

// The server's errors of a connection the DSN sets up wrongly.
const (
	errBadDB        = 1049 // ER_BAD_DB_ERROR
	errAccessDenied = 1045 // ER_ACCESS_DENIED_ERROR
)

// connectProblem is err, an error of the first statement of Check (which
// reads no table), as a misconfiguration that says what to change in the
// DSN or on the server when the server refused the connection for what
// the DSN names: a database that does not exist or that the user may not
// use, a user or password it does not know. Other errors are returned as
// they are.
func connectProblem(err error) error {
	var msg string
	switch errorNumber(err) {
	case errBadDB:
		msg = "the DSN's database does not exist: create it (CREATE DATABASE name), or name an existing one after the DSN's slash (" + dsnForm + ")"
	case errDBAccess:
		msg = "the DSN's user may not use the DSN's database, or it does not exist: create it, grant the user its rights (GRANT SELECT, INSERT, UPDATE, DELETE, CREATE, ALTER ON name.* TO user), or name another after the DSN's slash (" + dsnForm + ")"
	case errAccessDenied:
		msg = "the server refused the DSN's user and password: put the user's password in the DSN (" + dsnForm + "), or create the user on the server (CREATE USER)"
	default:
		return err
	}
	return &sqlfamily.ConfigError{Msg: "mysqlstore: " + msg + ": " + err.Error(), Err: err}
}

// isConfigError reports whether err is the store's own finding of a
// misconfiguration, already saying what to change.
func isConfigError(err error) bool {
	var ce *sqlfamily.ConfigError
	return errors.As(err, &ce)
}
