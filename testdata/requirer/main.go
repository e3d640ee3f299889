// Command requirer places one order through the idempotent client that
// idemgen generates: the program of a user whose module declares Go 1.25.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	idem "github.com/idemgen/idemgen/runtime"

	"example.com/requirer/api"
)

func main() {
	server := flag.String("server", "http://127.0.0.1:8080", "orders API base URL")
	flag.Parse()
	order, res, err := place(context.Background(), *server, "book")
	if err != nil {
		fmt.Fprintln(os.Stderr, "requirer:", err)
		os.Exit(1)
	}
	fmt.Printf("order %d placed in %d attempts (key %s)\n", order.Id, res.Attempts, res.Key)
}

// place creates an order for item with one idempotency key, however many
// attempts it takes.
func place(ctx context.Context, server, item string) (*api.Order, idem.CallResult, error) {
	var res idem.CallResult
	c, err := api.NewClientWithResponses(server)
	if err != nil {
		return nil, res, err
	}
	resp, err := api.NewIdempotentClient(c).CreateOrder(ctx, api.CreateOrderJSONRequestBody{Item: item}, idem.WithResult(&res))
	if err != nil {
		return nil, res, err
	}
	if resp.JSON201 == nil {
		return nil, res, fmt.Errorf("status %d", resp.StatusCode())
	}
	return resp.JSON201, res, nil
}
