package mysqlstore_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/go-sql-driver/mysql"

	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/mysqlstore"
	"github.com/idemgen/idemgen/runtime/mysqlstore/mysqltest"
)

// checkOf runs Check of a store on dsn, MYSQL_DSN changed by edit.
func checkOf(t *testing.T, edit func(*mysql.Config)) error {
	t.Helper()
	cfg, err := mysql.ParseDSN(mysqltest.DSN(t))
	if err != nil {
		t.Fatal(err)
	}
	edit(cfg)
	db, err := mysqlstore.OpenDB(cfg.FormatDSN())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	s := mysqlstore.New(db, mysqlstore.WithPurgeInterval(-1))
	defer s.Close()
	return s.Check(context.Background())
}

// says fails t unless err's text holds each of want, and none of not.
func says(t *testing.T, err error, want []string, not ...string) {
	t.Helper()
	if err == nil {
		t.Fatal("no error")
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not say %q", err, w)
		}
	}
	for _, n := range not {
		if strings.Contains(err.Error(), n) {
			t.Errorf("error %q says %q", err, n)
		}
	}
}

// TestStartupDatabaseThatDoesNotExist: Check on a DSN whose database does
// not exist says so and what to change, then the server's text; not a
// pointer back to Check.
func TestStartupDatabaseThatDoesNotExist(t *testing.T) {
	err := checkOf(t, func(c *mysql.Config) { c.DBName = "nosuchdb_" + mysqltest.Name(t) })
	if !errors.Is(err, idemstore.ErrStoreMisconfigured) {
		t.Fatalf("Check = %v; want ErrStoreMisconfigured", err)
	}
	says(t, err, []string{"the DSN's database does not exist", "CREATE DATABASE", "nosuchdb_"}, "run Store.Check")
}

// TestStartupWrongPassword: Check with a password the server refuses says
// so and what to change, then the server's text.
func TestStartupWrongPassword(t *testing.T) {
	err := checkOf(t, func(c *mysql.Config) { c.Passwd = "not-the-password" })
	if !errors.Is(err, idemstore.ErrStoreMisconfigured) {
		t.Fatalf("Check = %v; want ErrStoreMisconfigured", err)
	}
	says(t, err, []string{"the server refused the DSN's user and password", "Access denied"}, "run Store.Check", "not-the-password")
}

// TestStartupURLDSN: a DSN written as a URL, which go-sql-driver/mysql does
// not read, is refused by OpenDB with the driver's form of it, and the
// driver's text after; the password is not repeated.
func TestStartupURLDSN(t *testing.T) {
	_, err := mysqlstore.OpenDB("mysql://idem:s3cret@127.0.0.1:33917/idem?parseTime=true")
	says(t, err, []string{"the DSN is a URL", "user:password@tcp(host:port)/database", "idem:<password>@tcp(127.0.0.1:33917)/idem?parseTime=true", "default addr for network"}, "s3cret")
	_, err = mysqlstore.OpenDB("idem@127.0.0.1:33917/idem")
	says(t, err, []string{"user:password@tcp(host:port)/database", "default addr for network"})
}
