//docblocks:module runtime

// The context of docs/beyond-one-hop.md's fragments: the application's
// own names (a provider's generated client, a message bus, a ledger).
package docs

import (
	"context"
	"net/http"

	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemop"
	"github.com/idemgen/idemgen/runtime/idemstore"
)

type (
	Charge  struct{ ID string }
	Message struct {
		Key  string
		Body []byte
	}
	providerClient struct{}
)

func (providerClient) CreateCharge(ctx context.Context, body any, opts ...idem.CallOption) (*http.Response, error) {
	return nil, nil
}

func (providerClient) Charge(ctx context.Context, order any) (Charge, error) { return Charge{}, nil }

var (
	ctx      context.Context
	provider providerClient
	line     struct{ ID string }
	body     any
	order    any
	entry    []byte
	msg      Message
	store    idemstore.Store
	bus      interface {
		Publish(context.Context, Message)
	}
	ledger interface {
		Apply(context.Context, []byte) ([]byte, error)
	}
)
