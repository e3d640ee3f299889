package mysqlstore

import "strings"

// The store's SQL, in one place beside Schema (schema.go). Every time is the
// database's, in UTC: UTC_TIMESTAMP(6), which MySQL evaluates once per
// statement, whatever the session's time_zone. Durations arrive in whole
// microseconds (the store rounds them up to whole milliseconds first). A
// record whose expires_at has passed is absent for every statement (the
// read reports it as not live), whether or not the purge has deleted it
// yet.

// statements are the store's SQL for one table.
type statements struct {
	read, insert, claim, insertTx, claimTx, complete, completeTx, release, extend, owned, lookup, purgeSelect, purgeDelete string
}

// now is the database's clock.
const now = "UTC_TIMESTAMP(6)"

// readColumns are what the reads return of a key's row (statements.read):
// whether it is live (not expired), its fingerprint, whether it is
// completed, the microseconds its lease has left (negative once it has
// lapsed), and the response. Whether the record has expired is a column,
// not a condition: on MariaDB 10.11 a primary-key read with the condition
// costs the server more (93 against 87 µs a read, measured on the
// statements alone), and an expired row,
// which the purge has not deleted yet, is then known to be there.
const readColumns = "expires_at > " + now + " AS live, fingerprint, completed, TIMESTAMPDIFF(MICROSECOND, " + now + ", lease_until) AS lease_left,\n" +
	"\tstatus, header, body, body_omitted"

// readIn is the read of n keys at once (readbatch.go): each row's key,
// then what read returns of it.
func readIn(t string, n int) string {
	return sqlFor("SELECT `key`, "+readColumns+"\nFROM $T WHERE `key` IN (?"+strings.Repeat(", ?", n-1)+")", t)
}

// sqlFor replaces T in s with the table t.
func sqlFor(s, t string) string { return strings.ReplaceAll(s, "$T", t) }

func newStatements(t string) statements {
	return statements{
		// ? key. What the key's row holds (readColumns). A consistent
		// read: no lock, no transaction id, no write; a replay is this one
		// statement. The store rounds the lease (leaseleft.Round): the
		// server computes nothing but the difference.
		read: sqlFor("SELECT "+readColumns+"\nFROM $T WHERE `key` = ?", t),

		// The acquire's claim (claimSQL): fence 1 for a new or expired
		// record, fence + 1 for a lapsed one; insert is its first half
		// alone, for a key the read found no record of.
		insert: insertSQL(t, "1"),
		claim:  claimSQL(t, "1", "fence + 1"),

		// As insert and claim, for a claim inside the run's transaction:
		// its fence is the clock in microseconds, above the fence of the
		// record it takes over.
		insertTx: insertSQL(t, nowUS),
		claimTx:  claimSQL(t, nowUS, "GREATEST(fence + 1, "+nowUS+")"),

		// The completion (completeSQL) of a record still in progress and
		// live. The token stays, so that a lost commit can be looked up
		// (lookup). Under the row's lock, until the transaction ends.
		//
		// The record expires a retention from now, unless it already
		// expires between then and a retention after its lease's deadline:
		// a run that completes before its lease lapses, with the
		// abandoned TTL equal to the retention (both are
		// idemstore.DefaultRetention unless configured), keeps the expiry
		// its claim wrote, so that the expires_at index is not changed a
		// second time (a delete-marked entry, a new one, their undo and
		// their purge: 859 against 816 µs of machine CPU per first request,
		// measured on the statements alone).
		// Such a record is kept for its retention after completion and at
		// most its lease longer. expires_at is assigned first, so that it
		// reads lease_until as the claim left it whether or not the
		// sql_mode has SIMULTANEOUS_ASSIGNMENT.
		complete: completeSQL(t, " AND expires_at > "+now),

		// The completion in the run's transaction (Commit): complete's,
		// without the condition on expires_at. The transaction has held
		// the row's lock since its claim, so the record cannot have been
		// taken over; and one that expired meanwhile (a run longer than
		// its lease and the abandoned TTL) is given a retention from now
		// all the same. A condition on the indexed expires_at makes
		// MariaDB's single-table UPDATE weigh that index at every
		// execution: it cost the connection's thread 10-22 µs more per
		// first request.
		completeTx: completeSQL(t, ""),

		// ? key, ? token.
		release: sqlFor("DELETE FROM $T WHERE `key` = ? AND token = ? AND NOT completed AND expires_at > "+now, t),

		// ? lease µs, ? lease+abandoned µs, ? key, ? token.
		extend: sqlFor("UPDATE $T SET lease_until = "+now+" + INTERVAL ? MICROSECOND, expires_at = "+now+" + INTERVAL ? MICROSECOND\n"+
			"WHERE `key` = ? AND token = ? AND NOT completed AND expires_at > "+now, t),

		// ? key, ? token. Whether token owns key's in-progress record: an
		// Extend that changed nothing (a deadline equal to the one before,
		// to the microsecond) asks it.
		owned: sqlFor("SELECT 1 FROM $T WHERE `key` = ? AND token = ? AND NOT completed AND expires_at > "+now, t),

		// ? token, ? key. Whether this token's completion is committed;
		// LOCK IN SHARE MODE (FOR SHARE, in MySQL 8's words, which MariaDB
		// does not know) waits for a transaction that still holds the row.
		lookup: sqlFor("SELECT completed AND token = ? FROM $T WHERE `key` = ? AND expires_at > "+now+" LOCK IN SHARE MODE", t),

		// ? batch size. The keys of up to that many expired records,
		// locked, skipping rows another transaction holds (an acquire
		// taking one over, or another instance's purge); then their
		// deletion, in the same transaction.
		purgeSelect: sqlFor("SELECT `key` FROM $T WHERE expires_at <= "+now+" ORDER BY expires_at LIMIT ? FOR UPDATE SKIP LOCKED", t),
		purgeDelete: sqlFor("DELETE FROM $T WHERE `key` IN (%s) AND expires_at <= "+now, t),
	}
}

// completeSQL is the completion of a record of table t, the WHERE clause
// ending with also.
//
// ? retention µs (three times), ? status, ? header, ? body, ? body
// omitted, ? key, ? token, ? fence (0: any), ? fence again.
func completeSQL(t, also string) string {
	return sqlFor("UPDATE $T SET expires_at = IF(expires_at BETWEEN "+now+" + INTERVAL ? MICROSECOND AND lease_until + INTERVAL ? MICROSECOND,\n"+
		"\t\texpires_at, "+now+" + INTERVAL ? MICROSECOND),\n"+
		"\tcompleted = 1, lease_until = "+now+", status = ?, header = ?, body = ?, body_omitted = ?\n"+
		"WHERE `key` = ? AND token = ? AND (? = 0 OR fence = ?) AND NOT completed"+also, t)
}

// insertSQL is the first half of claimSQL alone: the INSERT of a new
// record with fence fresh, which fails (ER_DUP_ENTRY) where the key has a
// row. A claim of a key that the read found no record of sends it first:
// the ON DUPLICATE KEY UPDATE costs the server more even where it inserts
// (846 against 807 µs of machine CPU per first request, measured on the
// statements alone), and is sent only
// when the INSERT finds a row (an expired record not yet purged, or one
// written since the read).
//
// ? key, ? fingerprint, ? token, ? lease µs, ? lease+abandoned µs.
func insertSQL(t, fresh string) string {
	return sqlFor("INSERT INTO $T (`key`, fingerprint, completed, token, fence, lease_until, expires_at, body_omitted)\n"+
		"VALUES (?, ?, 0, ?, LAST_INSERT_ID("+fresh+"), "+now+" + INTERVAL ? MICROSECOND, "+now+" + INTERVAL ? MICROSECOND, 0)", t)
}

// nowUS is the database's clock in microseconds since 1970, UTC.
const nowUS = "TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', " + now + ")"

// claimSQL is the claim of table t whose fence is fresh for a new or
// expired record and taken for a lapsed one.
//
// ? key, ? fingerprint, ? token, ? lease µs, ? lease+abandoned µs. It
// creates an absent record, or, on the key's row, takes over an expired one
// or an in-progress one of this fingerprint whose lease has lapsed; it leaves any
// other row as it is. The insert id it answers (LAST_INSERT_ID(n), which
// needs no AUTO_INCREMENT column) is the fence taken, or 0 for none: the
// affected-rows count cannot tell, as it depends on the client's
// CLIENT_FOUND_ROWS flag.
//
// MySQL assigns ON DUPLICATE KEY UPDATE's columns left to right, each
// seeing the ones before: token is decided first, and every later column
// asks whether the row now holds this attempt's token (tokens are random),
// so the decision is made once.
func claimSQL(t, fresh, taken string) string {
	mine := "token = VALUES(token)"
	return insertSQL(t, fresh) + "\n" + sqlFor("ON DUPLICATE KEY UPDATE\n"+
		"\ttoken = IF(expires_at <= "+now+" OR (NOT completed AND fingerprint = VALUES(fingerprint) AND lease_until <= "+now+"), VALUES(token), token),\n"+
		"\tfence = IF("+mine+", LAST_INSERT_ID(IF(expires_at <= "+now+", "+fresh+", "+taken+")), fence + LAST_INSERT_ID(0)),\n"+
		"\tfingerprint = IF("+mine+", VALUES(fingerprint), fingerprint),\n"+
		"\tcompleted = IF("+mine+", 0, completed),\n"+
		"\tstatus = IF("+mine+", NULL, status),\n"+
		"\theader = IF("+mine+", NULL, header),\n"+
		"\tbody = IF("+mine+", NULL, body),\n"+
		"\tbody_omitted = IF("+mine+", 0, body_omitted),\n"+
		"\tlease_until = IF("+mine+", VALUES(lease_until), lease_until),\n"+
		"\texpires_at = IF("+mine+", VALUES(expires_at), expires_at)", t)
}
