//docblocks:module .

// The context of docs/stores.md's fragment: a store of one's own and its
// conformance test.
package docs

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/idemstore/idemstoretest"
	"github.com/idemgen/idemgen/runtime/idemstore/memstore"
)
