package loadtest

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
)

// wordList is the vocabulary of generated text: realistic English-ish
// product data, which compresses about as well as real API responses do.
const wordList = `red blue green small large steel cotton organic premium classic
	wireless portable compact ergonomic waterproof vintage modern handmade recycled
	lamp chair table bottle jacket backpack speaker charger notebook kettle blender
	monitor keyboard mouse headphones blanket pillow mug teapot candle frame`

// minBodySize is the smallest body jsonBody makes: an order without items.
const minBodySize = 160

// jsonBody returns a JSON object of exactly size bytes (at least 160) that
// looks like an order-creation response: ids, a customer, line items with
// prices, timestamps and free text. seed makes it reproducible.
func jsonBody(size int, seed uint64) []byte {
	size = max(size, minBodySize)
	words := strings.Fields(wordList)
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	hexID := func(n int) string {
		const digits = "0123456789abcdef"
		b := make([]byte, n)
		for i := range b {
			b[i] = digits[rng.IntN(16)]
		}
		return string(b)
	}
	phrase := func(n int) string {
		ws := make([]string, n)
		for i := range ws {
			ws[i] = words[rng.IntN(len(words))]
		}
		return strings.Join(ws, " ")
	}
	type item struct {
		SKU        string `json:"sku"`
		Name       string `json:"name"`
		Quantity   int    `json:"quantity"`
		PriceCents int    `json:"price_cents"`
		Currency   string `json:"currency"`
	}
	type order struct {
		ID        string `json:"id"`
		Status    string `json:"status"`
		Customer  string `json:"customer"`
		CreatedAt string `json:"created_at"`
		Items     []item `json:"items"`
		Note      string `json:"note"`
	}
	o := order{
		ID:        "ord_" + hexID(16),
		Status:    "created",
		Customer:  "cus_" + hexID(12),
		CreatedAt: fmt.Sprintf("2025-11-%02dT%02d:%02d:%02dZ", 1+rng.IntN(28), rng.IntN(24), rng.IntN(60), rng.IntN(60)),
		Items:     []item{},
	}
	encode := func() []byte {
		b, err := json.Marshal(o)
		if err != nil { // a struct of strings and ints always encodes
			panic(err)
		}
		return b
	}
	for {
		o.Items = append(o.Items, item{
			SKU:        fmt.Sprintf("SKU-%06d", rng.IntN(1_000_000)),
			Name:       phrase(2 + rng.IntN(3)),
			Quantity:   1 + rng.IntN(5),
			PriceCents: 99 + rng.IntN(50_000),
			Currency:   "EUR",
		})
		if len(encode()) > size {
			o.Items = o.Items[:len(o.Items)-1]
			break
		}
	}
	// Pad the note (plain words, then spaces) to hit size exactly.
	for {
		b := encode()
		if len(b) >= size { // == size: the loop only ever adds what fits
			return b
		}
		gap := size - len(b)
		if gap <= 1 {
			o.Note += strings.Repeat(" ", gap)
			continue
		}
		w := words[rng.IntN(len(words))] + " "
		if len(w) > gap {
			w = strings.Repeat(" ", gap)
		}
		o.Note += w
	}
}
