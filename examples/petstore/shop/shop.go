// Package shop is the petstore example's domain: an in-memory pet shop that
// counts how many times each write really ran, so the demo and the tests can
// show what idempotency keys prevent instead of assuming it.
package shop

import (
	"context"
	"errors"
	"sync"
	"time"
)

// Errors of the shop's operations.
var (
	ErrNotFound = errors.New("no such pet")
	ErrAdopted  = errors.New("pet was adopted by someone else")
	ErrDeclined = errors.New("payment declined")
)

// Pet is a pet in the shop.
type Pet struct {
	ID        int64
	Name      string
	Species   string
	Tag       string
	CreatedAt time.Time
	Adopter   string
}

// Payment is an accepted payment.
type Payment struct {
	ID       int64
	Amount   int64
	Currency string
}

// Shop is a concurrency-safe in-memory pet shop.
type Shop struct {
	// Gate, when set, is called at the start of every write with the
	// operation's name; the demo uses it to hold a request in flight.
	Gate func(ctx context.Context, op string)

	mu       sync.Mutex // guards everything below
	nextID   int64
	pets     map[int64]*Pet
	payments []Payment
	runs     map[string]int
}

// New returns an empty shop.
func New() *Shop {
	return &Shop{pets: map[int64]*Pet{}, runs: map[string]int{}}
}

// Runs reports how many times the write op has executed.
func (s *Shop) Runs(op string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.runs[op]
}

func (s *Shop) enter(ctx context.Context, op string) {
	if s.Gate != nil {
		s.Gate(ctx, op)
	}
	s.mu.Lock()
	s.runs[op]++
	s.nextID++
}

// AddPet stores a new pet and returns it.
func (s *Shop) AddPet(ctx context.Context, name, species, tag string) Pet {
	s.enter(ctx, "createPet")
	defer s.mu.Unlock()
	p := &Pet{ID: s.nextID, Name: name, Species: species, Tag: tag, CreatedAt: time.Now().UTC().Truncate(time.Millisecond)}
	s.pets[p.ID] = p
	return *p
}

// Pet returns the pet with the given id.
func (s *Shop) Pet(id int64) (Pet, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.pets[id]
	if !ok {
		return Pet{}, ErrNotFound
	}
	return *p, nil
}

// Pets returns every pet, oldest first.
func (s *Shop) Pets() []Pet {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Pet, 0, len(s.pets))
	for id := int64(1); id <= s.nextID; id++ {
		if p, ok := s.pets[id]; ok {
			out = append(out, *p)
		}
	}
	return out
}

// Adopt gives pet id to adopter and returns the adoption's id.
func (s *Shop) Adopt(ctx context.Context, id int64, adopter string) (int64, error) {
	s.enter(ctx, "adoptPet")
	defer s.mu.Unlock()
	p, ok := s.pets[id]
	switch {
	case !ok:
		return 0, ErrNotFound
	case p.Adopter != "":
		return 0, ErrAdopted
	}
	p.Adopter = adopter
	return s.nextID, nil
}

// Pay records a payment; amounts over 1,000,000 minor units are declined.
func (s *Shop) Pay(ctx context.Context, amount int64, currency string) (Payment, error) {
	s.enter(ctx, "createPayment")
	defer s.mu.Unlock()
	if amount > 1_000_000 {
		return Payment{}, ErrDeclined
	}
	p := Payment{ID: s.nextID, Amount: amount, Currency: currency}
	s.payments = append(s.payments, p)
	return p, nil
}
