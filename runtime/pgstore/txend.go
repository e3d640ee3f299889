package pgstore

import (
	"strings"
	"unicode"
)

// endsTransaction reports whether sql is a statement that ends the
// transaction it runs in: COMMIT, END, ROLLBACK or ABORT (but ROLLBACK
// TO, to a savepoint), PREPARE TRANSACTION, with or without a clause
// (COMMIT AND CHAIN). It reads the first words only, after blanks and
// comments: an end behind another statement of a multi-statement string
// is left to the connection's transaction status (runTx.Commit).
func endsTransaction(sql string) bool {
	first, rest := word(sql)
	switch first {
	case "COMMIT", "END", "ABORT":
		return true
	case "ROLLBACK":
		next, rest := word(rest)
		if next == "WORK" || next == "TRANSACTION" {
			next, _ = word(rest)
		}
		return next != "TO"
	case "PREPARE":
		next, _ := word(rest)
		return next == "TRANSACTION"
	}
	return false
}

// word returns the first word of sql, after blanks and comments, in upper
// case, and what follows it.
func word(sql string) (string, string) {
	for {
		sql = strings.TrimLeftFunc(sql, unicode.IsSpace)
		switch {
		case strings.HasPrefix(sql, "--"):
			if i := strings.IndexByte(sql, '\n'); i >= 0 {
				sql = sql[i+1:]
				continue
			}
			return "", ""
		case strings.HasPrefix(sql, "/*"):
			if i := strings.Index(sql, "*/"); i >= 0 {
				sql = sql[i+2:]
				continue
			}
			return "", ""
		}
		break
	}
	end := strings.IndexFunc(sql, func(r rune) bool { return !unicode.IsLetter(r) && r != '_' })
	if end < 0 {
		end = len(sql)
	}
	return strings.ToUpper(sql[:end]), sql[end:]
}
