package pgstore

import "fmt"

// The store's SQL, in one place beside Schema (schema.go). Every time is the
// database's: statement_timestamp(), which inside the run's transaction is
// the time of the statement, not of BEGIN. Durations arrive in whole
// milliseconds. A record whose expires_at has passed does not exist for any
// statement, whether or not the purge has deleted it yet.

// statements are the store's SQL for one table.
type statements struct {
	acquire, read, complete, release, extend, lookup, purge string
}

// ms turns a parameter of milliseconds into an interval.
const ms = " * interval '1 millisecond'"

func newStatements(t string) statements {
	return statements{
		// $1 key, $2 fingerprint, $3 token, $4 lease ms, $5 abandoned ms,
		// $6 the previous fingerprint ('' for none).
		// Creates an absent or expired record (fence 1) or takes over an
		// in-progress one with this fingerprint (or the previous one)
		// whose lease has lapsed (fence + 1), returning the fence; returns
		// no row, but locks the row, otherwise.
		acquire: fmt.Sprintf(`INSERT INTO %[1]s AS r (key, fingerprint, token, fence, lease_until, expires_at)
VALUES ($1, $2, $3, 1, statement_timestamp() + $4::bigint`+ms+`, statement_timestamp() + ($4::bigint + $5::bigint)`+ms+`)
ON CONFLICT (key) DO UPDATE SET
	fingerprint = excluded.fingerprint, completed = false, token = excluded.token,
	fence = CASE WHEN r.expires_at <= statement_timestamp() THEN 1 ELSE r.fence + 1 END,
	lease_until = excluded.lease_until, expires_at = excluded.expires_at,
	status = NULL, header = NULL, body = NULL, body_omitted = false
WHERE r.expires_at <= statement_timestamp()
	OR (NOT r.completed AND r.fingerprint IN (excluded.fingerprint, $6) AND r.lease_until <= statement_timestamp())
RETURNING r.fence`, t),

		// $1 key. What a live record holds, with its remaining lease in ms
		// (at least 1).
		read: fmt.Sprintf(`SELECT fingerprint, completed,
	greatest(ceil(extract(epoch FROM lease_until - statement_timestamp()) * 1000), 1)::bigint,
	status, header, body, body_omitted
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

		// $1 batch size. Deletes up to that many expired records, skipping
		// rows another transaction holds (an acquire taking one over, or
		// another instance's purge).
		purge: fmt.Sprintf(`DELETE FROM %[1]s WHERE key IN (
	SELECT key FROM %[1]s WHERE expires_at <= statement_timestamp()
	ORDER BY expires_at LIMIT $1 FOR UPDATE SKIP LOCKED)
AND expires_at <= statement_timestamp()`, t),
	}
}
