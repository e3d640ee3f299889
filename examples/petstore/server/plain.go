package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/idemgen/idemgen/examples/petstore/api/plain"
	"github.com/idemgen/idemgen/examples/petstore/shop"
)

// Plain implements plainapi.ServerInterface: the same shop, written against
// http.ResponseWriter.
type Plain struct{ Shop *shop.Shop }

var _ plainapi.ServerInterface = Plain{}

// ListPets lists the pets.
func (s Plain) ListPets(w http.ResponseWriter, r *http.Request) {
	out := []plainapi.Pet{}
	for _, p := range s.Shop.Pets() {
		out = append(out, plainPet(p))
	}
	writeJSON(w, http.StatusOK, out)
}

// CreatePet adds a pet.
func (s Plain) CreatePet(w http.ResponseWriter, r *http.Request, _ plainapi.CreatePetParams) {
	var body plainapi.CreatePetJSONRequestBody
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		writeProblem(w, http.StatusBadRequest, err)
		return
	}
	p := s.Shop.AddPet(r.Context(), body.Name, body.Species, deref(body.Tag))
	w.Header().Set("Location", fmt.Sprintf("/pets/%d", p.ID))
	writeJSON(w, http.StatusCreated, plainPet(p))
}

// GetPet fetches one pet.
func (s Plain) GetPet(w http.ResponseWriter, r *http.Request, petID plainapi.PetId) {
	p, err := s.Shop.Pet(petID)
	if err != nil {
		writeProblem(w, http.StatusNotFound, err)
		return
	}
	writeJSON(w, http.StatusOK, plainPet(p))
}

// AdoptPet adopts a pet.
func (s Plain) AdoptPet(w http.ResponseWriter, r *http.Request, petID plainapi.PetId, _ plainapi.AdoptPetParams) {
	var body plainapi.AdoptPetJSONRequestBody
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		writeProblem(w, http.StatusBadRequest, err)
		return
	}
	id, err := s.Shop.Adopt(r.Context(), petID, body.Adopter)
	switch {
	case errors.Is(err, shop.ErrNotFound):
		writeProblem(w, http.StatusNotFound, err)
	case errors.Is(err, shop.ErrAdopted):
		writeProblem(w, http.StatusGone, err)
	case err != nil:
		writeProblem(w, http.StatusInternalServerError, err)
	default:
		writeJSON(w, http.StatusCreated, plainapi.Adoption{Id: id, PetId: petID, Adopter: body.Adopter})
	}
}

// CreatePayment takes a payment.
func (s Plain) CreatePayment(w http.ResponseWriter, r *http.Request) {
	var body plainapi.CreatePaymentJSONRequestBody
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		writeProblem(w, http.StatusBadRequest, err)
		return
	}
	p, err := s.Shop.Pay(r.Context(), body.Amount, body.Currency)
	switch {
	case errors.Is(err, shop.ErrDeclined):
		writeProblem(w, http.StatusPaymentRequired, err)
	case err != nil:
		writeProblem(w, http.StatusInternalServerError, err)
	default:
		writeJSON(w, http.StatusCreated, plainapi.Payment{Id: p.ID, Amount: p.Amount, Currency: p.Currency, Status: plainapi.Accepted})
	}
}

func plainPet(p shop.Pet) plainapi.Pet {
	out := plainapi.Pet{Id: p.ID, Name: p.Name, Species: p.Species, CreatedAt: p.CreatedAt}
	if p.Tag != "" {
		out.Tag = &p.Tag
	}
	return out
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v) // the status is sent; a failed write has no one to report to
}

func writeProblem(w http.ResponseWriter, status int, err error) {
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"title": http.StatusText(status), "status": status, "detail": err.Error()})
}
