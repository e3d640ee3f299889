package pgstore

import "fmt"

// The store's SQL, in one place beside Schema (schema.go). Every time is the
// database's: statement_timestamp(), which inside the run's transaction is
// the time of the statement, not of BEGIN. Durations arrive in whole
// milliseconds. A record whose expires_at has passed does not exist for any
// statement, whether or not the purge has deleted it yet.

// statements are the store's SQL for one table: those of the plain Store
// methods, and those of a run that claims its key inside its transaction
// (tx.go).
type statements struct {
	acquire, read, complete, release, extend, lookup, purge string

	// A run's: the settings and lock sent with BEGIN, the claim, the
	// completion sent with COMMIT, a result stored on its own after the
	// handler's failed statement aborted the transaction, and the
	// outcome of a transaction whose COMMIT's answer was lost.
	begin, settings, claim, completeClaim, store, xactStatus, waitXact string
}

// durable is the synchronous_commit a store's transaction commits with: on
// when the server's (or the session's) is off, else what it is (local,
// remote_write, on, remote_apply all wait for the local flush).
const durable = `set_config('synchronous_commit', CASE current_setting('synchronous_commit') WHEN 'off' THEN 'on' ELSE current_setting('synchronous_commit') END, true)`

// lockKey is the SQL of the key's advisory lock, for the key in parameter
// param: a 64-bit hash of the table and the key. Every claim takes it with
// pg_try_advisory_xact_lock before it writes the key's row, so no claim
// ever waits on a row that another claim's open transaction wrote: it
// finds the lock taken and answers a conflict. Two keys share a lock with
// odds of about 2^-64 per pair, which costs a spurious 409.
func lockKey(t string, param int) string {
	return fmt.Sprintf("hashtextextended(%s || $%d, 0)", quoteLiteral(t+":"), param)
}

// ms turns a parameter of milliseconds into an interval.
const ms = " * interval '1 millisecond'"

func newStatements(t string) statements {
	return statements{
		// $1 key, $2 fingerprint, $3 token, $4 lease ms, $5 abandoned ms.
		// Creates an absent or expired record (fence 1) or takes over an
		// in-progress one with this fingerprint whose lease has lapsed (fence + 1), returning the fence; returns
		// no row, but locks the row, otherwise.
		// The key's advisory lock (lockKey) is tried first: a key claimed
		// by an open run's transaction inserts nothing and so waits for
		// nothing; the read then finds no committed row, a conflict.
		acquire: fmt.Sprintf(`INSERT INTO %[1]s AS r (key, fingerprint, token, fence, lease_until, expires_at)
SELECT $1, $2, $3, 1, statement_timestamp() + $4::bigint`+ms+`, statement_timestamp() + ($4::bigint + $5::bigint)`+ms+`
WHERE pg_try_advisory_xact_lock(%[2]s)
ON CONFLICT (key) DO UPDATE SET
	fingerprint = excluded.fingerprint, completed = false, token = excluded.token,
	fence = CASE WHEN r.expires_at <= statement_timestamp() THEN 1 ELSE r.fence + 1 END,
	lease_until = excluded.lease_until, expires_at = excluded.expires_at,
	status = NULL, header = NULL, body = NULL, body_omitted = false
WHERE r.expires_at <= statement_timestamp()
	OR (NOT r.completed AND r.fingerprint = excluded.fingerprint AND r.lease_until <= statement_timestamp())
RETURNING r.fence`, t, lockKey(t, 1)),

		// $1 key, $2 fingerprint. What a live record holds: whether its
		// fingerprint is $2, and the time its lease has left (an interval,
		// negative once it has lapsed: an in-progress record's). Read-only:
		// no row lock, no transaction id. It computes nothing else: the
		// server prepares every expression of the select list at each
		// execution, evaluated or not, so the store rounds the lease in Go
		// rather than in numeric here (0-8% of a replay's read in
		// BenchmarkPostgresReadShapes, see BENCHMARKS.md).
		read: fmt.Sprintf(`SELECT fingerprint = $2::text, completed, status, header, body, body_omitted,
	lease_until - statement_timestamp()
FROM %[1]s WHERE key = $1 AND expires_at > statement_timestamp()`, t),

		// $1 key, $2 token, $3 fence (0: any), $4 retention ms, $5 status,
		// $6 header, $7 body, $8 body omitted. The token stays, so that a
		// lost commit can be looked up (lookup).
		complete: fmt.Sprintf(`UPDATE %[1]s SET completed = true, lease_until = statement_timestamp(),
	expires_at = statement_timestamp() + $4::bigint`+ms+`,
	status = $5, header = $6, body = $7, body_omitted = $8
WHERE key = $1 AND token = $2 AND ($3::bigint = 0 OR fence = $3::bigint) AND NOT completed AND expires_at > statement_timestamp()`, t),

		// $1 key, $2 token.
		release: fmt.Sprintf(`DELETE FROM %[1]s
WHERE key = $1 AND token = $2 AND NOT completed AND expires_at > statement_timestamp()`, t),

		// $1 key, $2 token, $3 lease ms, $4 abandoned ms.
		extend: fmt.Sprintf(`UPDATE %[1]s SET lease_until = statement_timestamp() + $3::bigint`+ms+`,
	expires_at = statement_timestamp() + ($3::bigint + $4::bigint)`+ms+`
WHERE key = $1 AND token = $2 AND NOT completed AND expires_at > statement_timestamp()`, t),

		// $1 key, $2 token. Whether this token's completion is committed;
		// FOR SHARE waits for a transaction that still holds the row.
		lookup: fmt.Sprintf(`SELECT completed AND token = $2 FROM %[1]s
WHERE key = $1 AND expires_at > statement_timestamp() FOR SHARE`, t),

		// A run's transaction: READ COMMITTED whatever the database's
		// default, so that each statement sees what committed before it
		// (the claim's ON CONFLICT, a handler's own reads).
		begin: `BEGIN ISOLATION LEVEL READ COMMITTED`,

		// $1 key, $2 idle timeout ms (text). Sent with BEGIN: tries the
		// key's lock (whether a claim can be made), makes the commit
		// durable (durable), and has the server end the transaction, and
		// so the claim, once its owner has sent nothing for the lease.
		settings: fmt.Sprintf(`SELECT pg_try_advisory_xact_lock(%[1]s), %[2]s,
	set_config('idle_in_transaction_session_timeout', $2, true)`, lockKey(t, 1), durable),

		// $1 key, $2 fingerprint. The claim, inside the run's transaction:
		// under the key's lock (tried again here: it holds already when the
		// settings took it), a read in a snapshot taken after the lock was
		// granted, so after the commit of whoever held it before. It writes
		// nothing: the record is written once, completed, by completeClaim.
		// One probe of the key's index. It returns the claim's fence, the transaction's id (above every
		// earlier claim's, whose ids are older) or the fence of the key's
		// record plus one, whichever is larger, and the transaction's id;
		// no row when the lock is taken (the settings said so) or a live
		// record that the claim may not take over committed since the
		// read: a completed one, another payload's, or an in-progress one
		// whose lease holds.
		claim: fmt.Sprintf(`SELECT greatest(coalesce(r.fence, 0) + 1, pg_current_xact_id()::text::bigint), pg_current_xact_id()::text::bigint
FROM (VALUES (1)) AS one (x) LEFT JOIN %[1]s r ON r.key = $1
WHERE pg_try_advisory_xact_lock(%[2]s)
	AND (r.key IS NULL OR r.expires_at <= statement_timestamp()
		OR (NOT r.completed AND r.fingerprint = $2::text AND r.lease_until <= statement_timestamp()))`, t, lockKey(t, 1)),

		// $1 key, $2 fingerprint, $3 token, $4 fence, $5 retention ms, $6
		// status, $7 header, $8 body, $9 body omitted. The completion, sent
		// with COMMIT: the record's one write, completed (inserted, or
		// over an expired record or an in-progress one of this payload
		// whose lease lapsed, as the claim found it), in one statement
		// without a subquery. It fails (division by zero, which the CASE
		// evaluates only then, and which length() keeps the planner from
		// folding) rather than overwrite a live record that committed since
		// the claim (an owner of Store.Acquire's that extended or
		// completed its lease after all), so that the COMMIT after it is
		// not run and nothing of the run commits.
		completeClaim: fmt.Sprintf(`INSERT INTO %[1]s AS r (key, fingerprint, token, fence, completed, lease_until, expires_at, status, header, body, body_omitted)
VALUES ($1, $2, $3, $4, true, statement_timestamp(), statement_timestamp() + $5::bigint`+ms+`, $6, $7, $8, $9)
ON CONFLICT (key) DO UPDATE SET
	fingerprint = CASE WHEN r.expires_at <= statement_timestamp()
			OR (NOT r.completed AND r.fingerprint = excluded.fingerprint AND r.lease_until <= statement_timestamp())
		THEN excluded.fingerprint ELSE (1 / (0 * length(excluded.key)))::text END,
	completed = true, token = excluded.token, fence = excluded.fence,
	lease_until = excluded.lease_until, expires_at = excluded.expires_at,
	status = excluded.status, header = excluded.header, body = excluded.body, body_omitted = excluded.body_omitted`, t),

		// $1 key, $2 fingerprint, $3 token, $4 fence, $5 retention ms,
		// $6 status, $7 header, $8 body, $9 body omitted. The result of a
		// run whose transaction the handler's failed statement aborted,
		// stored on its own under the key's lock, unless another claim
		// committed a live record meanwhile (no row).
		store: fmt.Sprintf(`INSERT INTO %[1]s AS r (key, fingerprint, token, fence, completed, lease_until, expires_at, status, header, body, body_omitted)
SELECT $1, $2, $3, $4, true, statement_timestamp(), statement_timestamp() + $5::bigint`+ms+`, $6, $7, $8, $9
WHERE pg_try_advisory_xact_lock(%[2]s)
ON CONFLICT (key) DO UPDATE SET
	fingerprint = excluded.fingerprint, completed = true, token = excluded.token, fence = excluded.fence,
	lease_until = excluded.lease_until, expires_at = excluded.expires_at,
	status = excluded.status, header = excluded.header, body = excluded.body, body_omitted = excluded.body_omitted
WHERE r.expires_at <= statement_timestamp()
	OR (NOT r.completed AND r.lease_until <= statement_timestamp())
RETURNING 1`, t, lockKey(t, 1)),

		// $1 transaction id. Whether it committed: committed, aborted or
		// in progress.
		xactStatus: `SELECT pg_xact_status($1::bigint::text::xid8)`,

		// $1 key. Waits for the key's lock, which the run's transaction
		// holds until it ends: sent before xactStatus when that says the
		// transaction is still in progress (committing).
		waitXact: fmt.Sprintf(`SELECT pg_advisory_xact_lock(%s)`, lockKey(t, 1)),

		// $1 batch size. Deletes up to that many expired records, skipping
		// rows another transaction holds (an acquire taking one over, or
		// another instance's purge).
		purge: fmt.Sprintf(`DELETE FROM %[1]s WHERE key IN (
	SELECT key FROM %[1]s WHERE expires_at <= statement_timestamp()
	ORDER BY expires_at LIMIT $1 FOR UPDATE SKIP LOCKED)
AND expires_at <= statement_timestamp()`, t),
	}
}
