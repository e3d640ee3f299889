package mysqlstore

import (
	"context"
	"database/sql"
	"errors"
	"strings"
)

// prepared are the statements of the store's common path, prepared once:
// database/sql prepares a statement on each connection the first time it
// runs there and reuses it after, so that each run is one round trip (not
// a prepare, an execute and a close). The claims (and their INSERTs) do
// not wait for a lock (an open claim's), in the server's dialect.
type prepared struct {
	flavor                                                       flavor
	read, insert, claim, insertTx, claimTx, complete, completeTx *sql.Stmt
}

// statements returns the prepared statements, preparing them (and asking
// the server which kind it is) the first time.
func (s *Store) statements(ctx context.Context) (*prepared, error) {
	if p := s.prep.Load(); p != nil {
		return p, nil
	}
	s.prepMu.Lock()
	defer s.prepMu.Unlock()
	if p := s.prep.Load(); p != nil {
		return p, nil
	}
	if err := s.closed(); err != nil {
		return nil, err
	}
	var version string
	if err := s.db.QueryRowContext(ctx, "SELECT VERSION()").Scan(&version); err != nil {
		return nil, dialect.StoreError("prepare", err)
	}
	p := &prepared{flavor: flavorOf(version)}
	for _, st := range []struct {
		to  **sql.Stmt
		sql string
	}{
		{&p.read, s.sql.read},
		{&p.insert, p.flavor.noWait(s.sql.insert)},
		{&p.claim, p.flavor.noWait(s.sql.claim)},
		{&p.insertTx, p.flavor.noWait(s.sql.insertTx)},
		{&p.claimTx, p.flavor.noWait(s.sql.claimTx)},
		{&p.complete, s.sql.complete},
		{&p.completeTx, s.sql.completeTx + p.flavor.guard()},
	} {
		stmt, err := s.db.PrepareContext(ctx, st.sql)
		if err != nil {
			p.close()
			return nil, s.core.Refused("prepare", dialect.StoreError("prepare", err))
		}
		*st.to = stmt
	}
	s.prep.Store(p)
	return p, nil
}

// errClosed is the failure of a call that needs statements the store no
// longer has.
var errClosed = errors.New("mysqlstore: the store is closed")

// closed returns an error matching idemstore.ErrStoreUnavailable once Close
// has begun: Close closes the store's prepared statements, and one
// prepared after it would stay open on the pool's connections until the
// pool closes. Call it holding prepMu or batchMu, which Close takes after
// it begins.
func (s *Store) closed() error {
	if s.core.Closed() {
		return dialect.StoreError("prepare", errClosed)
	}
	return nil
}

// close closes the statements prepared so far.
func (p *prepared) close() {
	for _, st := range []*sql.Stmt{p.read, p.insert, p.claim, p.insertTx, p.claimTx, p.complete, p.completeTx} {
		if st != nil {
			_ = st.Close()
		}
	}
}

// flavorOf tells the server's kind by its VERSION().
func flavorOf(version string) flavor {
	if strings.Contains(version, "MariaDB") {
		return mariaDB
	}
	return mySQL
}

// noWait makes insert, an INSERT, refuse a row another transaction holds
// instead of waiting for it: at once on MariaDB (innodb_lock_wait_timeout
// 0, for this statement). MySQL has no way to set it for one statement
// (SET_VAR does not take InnoDB's variables) and its least is a second:
// there the claim waits for as long as the session's
// innodb_lock_wait_timeout, which docs/mysql.md says to set to 1 in the
// store's DSN.
func (f flavor) noWait(insert string) string {
	if f == mySQL {
		return insert
	}
	return "SET STATEMENT innodb_lock_wait_timeout=0 FOR " + insert
}
