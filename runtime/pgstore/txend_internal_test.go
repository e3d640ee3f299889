package pgstore

import "testing"

func TestEndsTransaction(t *testing.T) {
	for sql, want := range map[string]bool{
		"COMMIT":                          true,
		"commit;":                         true,
		"COMMIT AND CHAIN":                true,
		"end transaction":                 true,
		"  ABORT":                         true,
		"ROLLBACK":                        true,
		"ROLLBACK WORK":                   true,
		"-- undo\nrollback":               true,
		"/* undo */ROLLBACK AND NO CHAIN": true,
		"PREPARE TRANSACTION 'p'":         true,
		"ROLLBACK TO SAVEPOINT idem_sp_1": false,
		"rollback work to sp":             false,
		"ROLLBACK TRANSACTION TO sp":      false,
		"PREPARE q AS SELECT 1":           false,
		"RELEASE SAVEPOINT idem_sp_1":     false,
		"INSERT INTO commit VALUES (1)":   false,
		"SELECT 1; COMMIT":                false, // left to the transaction status
		"COMMITTED":                       false,
		"ending":                          false,
		"":                                false,
		"-- only a comment":               false,
		"/* unclosed":                     false,
	} {
		if got := endsTransaction(sql); got != want {
			t.Errorf("endsTransaction(%q) = %v, want %v", sql, got, want)
		}
	}
}
