package memstore

import "github.com/idemgen/idemgen/runtime/internal/memhooks"

// What the runtime's tests read and write of a store beyond its API is
// memhooks'.
func init() {
	memhooks.Link(memhooks.Hooks{
		Lookup:   func(store any, key string) (memhooks.Entry, bool) { return storeOf(store).lookup(key) },
		TxWrite:  txWrite,
		TxMarked: func(store any, mark string) bool { return storeOf(store).txMarked(mark) },
	})
}

// storeOf returns the Store of a *Store or a *TxStore.
func storeOf(store any) *Store {
	if tx, ok := store.(*TxStore); ok {
		return tx.Store
	}
	return store.(*Store)
}
