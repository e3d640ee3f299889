// Package server implements the petstore API twice over one shop: as
// oapi-codegen's strict server (Strict) and as its plain ServerInterface
// (Plain). Neither knows about idempotency keys; the generated wrappers add
// them.
package server

import (
	"context"
	"errors"
	"fmt"

	"github.com/idemgen/idemgen/examples/petstore/api/strict"
	"github.com/idemgen/idemgen/examples/petstore/shop"
)

// Strict implements strictapi.StrictServerInterface.
type Strict struct{ Shop *shop.Shop }

var _ strictapi.StrictServerInterface = Strict{}

// ListPets lists the pets.
func (s Strict) ListPets(ctx context.Context, _ strictapi.ListPetsRequestObject) (strictapi.ListPetsResponseObject, error) {
	out := strictapi.ListPets200JSONResponse{}
	for _, p := range s.Shop.Pets() {
		out = append(out, strictPet(p))
	}
	return out, nil
}

// CreatePet adds a pet.
func (s Strict) CreatePet(ctx context.Context, req strictapi.CreatePetRequestObject) (strictapi.CreatePetResponseObject, error) {
	p := s.Shop.AddPet(ctx, req.Body.Name, req.Body.Species, deref(req.Body.Tag))
	loc := fmt.Sprintf("/pets/%d", p.ID)
	return strictapi.CreatePet201JSONResponse{
		Body:    strictPet(p),
		Headers: strictapi.CreatePet201ResponseHeaders{Location: &loc},
	}, nil
}

// GetPet fetches one pet.
func (s Strict) GetPet(ctx context.Context, req strictapi.GetPetRequestObject) (strictapi.GetPetResponseObject, error) {
	p, err := s.Shop.Pet(req.PetId)
	if err != nil {
		return strictapi.GetPet404ApplicationProblemPlusJSONResponse(strictProblem(404, err)), nil
	}
	return strictapi.GetPet200JSONResponse(strictPet(p)), nil
}

// AdoptPet adopts a pet.
func (s Strict) AdoptPet(ctx context.Context, req strictapi.AdoptPetRequestObject) (strictapi.AdoptPetResponseObject, error) {
	id, err := s.Shop.Adopt(ctx, req.PetId, req.Body.Adopter)
	switch {
	case errors.Is(err, shop.ErrNotFound):
		return strictapi.AdoptPet404ApplicationProblemPlusJSONResponse(strictProblem(404, err)), nil
	case errors.Is(err, shop.ErrAdopted):
		return strictapi.AdoptPet410ApplicationProblemPlusJSONResponse(strictProblem(410, err)), nil
	case err != nil:
		return nil, err
	}
	return strictapi.AdoptPet201JSONResponse{Id: id, PetId: req.PetId, Adopter: req.Body.Adopter}, nil
}

// CreatePayment takes a payment.
func (s Strict) CreatePayment(ctx context.Context, req strictapi.CreatePaymentRequestObject) (strictapi.CreatePaymentResponseObject, error) {
	p, err := s.Shop.Pay(ctx, req.Body.Amount, req.Body.Currency)
	if errors.Is(err, shop.ErrDeclined) {
		return strictapi.CreatePayment402ApplicationProblemPlusJSONResponse(strictProblem(402, err)), nil
	}
	if err != nil {
		return nil, err
	}
	return strictapi.CreatePayment201JSONResponse{Id: p.ID, Amount: p.Amount, Currency: p.Currency, Status: strictapi.Accepted}, nil
}

func strictPet(p shop.Pet) strictapi.Pet {
	out := strictapi.Pet{Id: p.ID, Name: p.Name, Species: p.Species, CreatedAt: p.CreatedAt}
	if p.Tag != "" {
		out.Tag = &p.Tag
	}
	return out
}

func strictProblem(status int, err error) strictapi.Problem {
	title, detail := fmt.Sprint(status), err.Error()
	return strictapi.Problem{Status: &status, Title: &title, Detail: &detail}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
