package server

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/idemgen/idemgen/examples/petstore/api/echo"
	"github.com/idemgen/idemgen/examples/petstore/shop"
	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemstore"
)

// Echo implements echoapi.ServerInterface: the same shop, written against
// echo. Its failures are returned errors, which echo renders with its
// HTTPErrorHandler; the generated decorator renders them before it stores
// the response, so a replay is what the first client saw.
type Echo struct{ Shop *shop.Shop }

var _ echoapi.ServerInterface = Echo{}

// NewEchoHandler serves the shop through oapi-codegen's echo
// ServerInterface, decorated by idemgen's generated WithIdempotency.
func NewEchoHandler(s *shop.Shop, store idemstore.Store, opts ...idem.Option) *echo.Echo {
	e := echo.New()
	echoapi.RegisterHandlers(e, echoapi.WithIdempotency(Echo{Shop: s}, store, opts...))
	return e
}

// ListPets lists the pets.
func (s Echo) ListPets(ctx echo.Context) error {
	out := []echoapi.Pet{}
	for _, p := range s.Shop.Pets() {
		out = append(out, echoPet(p))
	}
	return ctx.JSON(http.StatusOK, out)
}

// CreatePet adds a pet.
func (s Echo) CreatePet(ctx echo.Context, _ echoapi.CreatePetParams) error {
	var body echoapi.CreatePetJSONRequestBody
	if err := ctx.Bind(&body); err != nil {
		return err
	}
	p := s.Shop.AddPet(ctx.Request().Context(), body.Name, body.Species, deref(body.Tag))
	ctx.Response().Header().Set("Location", fmt.Sprintf("/pets/%d", p.ID))
	return ctx.JSON(http.StatusCreated, echoPet(p))
}

// GetPet fetches one pet.
func (s Echo) GetPet(ctx echo.Context, petID echoapi.PetId) error {
	p, err := s.Shop.Pet(petID)
	if err != nil {
		return echo.NewHTTPError(http.StatusNotFound, err.Error())
	}
	return ctx.JSON(http.StatusOK, echoPet(p))
}

// AdoptPet adopts a pet.
func (s Echo) AdoptPet(ctx echo.Context, petID echoapi.PetId, _ echoapi.AdoptPetParams) error {
	var body echoapi.AdoptPetJSONRequestBody
	if err := ctx.Bind(&body); err != nil {
		return err
	}
	id, err := s.Shop.Adopt(ctx.Request().Context(), petID, body.Adopter)
	switch {
	case errors.Is(err, shop.ErrNotFound):
		return echo.NewHTTPError(http.StatusNotFound, err.Error())
	case errors.Is(err, shop.ErrAdopted):
		return echo.NewHTTPError(http.StatusGone, err.Error())
	case err != nil:
		return err
	}
	return ctx.JSON(http.StatusCreated, echoapi.Adoption{Id: id, PetId: petID, Adopter: body.Adopter})
}

// CreatePayment takes a payment.
func (s Echo) CreatePayment(ctx echo.Context) error {
	var body echoapi.CreatePaymentJSONRequestBody
	if err := ctx.Bind(&body); err != nil {
		return err
	}
	p, err := s.Shop.Pay(ctx.Request().Context(), body.Amount, body.Currency)
	switch {
	case errors.Is(err, shop.ErrDeclined):
		return echo.NewHTTPError(http.StatusPaymentRequired, err.Error())
	case err != nil:
		return err
	}
	return ctx.JSON(http.StatusCreated, echoapi.Payment{Id: p.ID, Amount: p.Amount, Currency: p.Currency, Status: echoapi.Accepted})
}

func echoPet(p shop.Pet) echoapi.Pet {
	out := echoapi.Pet{Id: p.ID, Name: p.Name, Species: p.Species, CreatedAt: p.CreatedAt}
	if p.Tag != "" {
		out.Tag = &p.Tag
	}
	return out
}
