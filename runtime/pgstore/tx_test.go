package pgstore_test

import (
	"context"
	"testing"

	"github.com/idemgen/idemgen/runtime/pgstore"
)

// TestTxOutsideARun: outside a run's handler there is no transaction.
func TestTxOutsideARun(t *testing.T) {
	if tx := pgstore.Tx(context.Background()); tx != nil {
		t.Fatalf("Tx outside a run = %v, want nil", tx)
	}
}
