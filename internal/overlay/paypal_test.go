package overlay

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/oapi-codegen/oapi-codegen/v2/pkg/util"

	"github.com/idemgen/idemgen/internal/sharedspecs"
)

// TestPayPal marks every POST of PayPal's specs idempotent under
// PayPal-Request-Id, which some of them declare already, and checks the
// overlay as TestGolden does (without a golden file).
func TestPayPal(t *testing.T) {
	for _, spec := range sharedspecs.PayPal(t) {
		t.Run(strings.TrimSuffix(filepath.Base(spec), ".json"), func(t *testing.T) {
			doc, err := util.LoadSwagger(spec)
			if err != nil {
				t.Fatal(err)
			}
			var ops []Operation
			for _, path := range doc.Paths.InMatchingOrder() {
				if doc.Paths.Value(path).Post != nil {
					ops = append(ops, Operation{Method: "POST", Path: path, KeyHeader: "PayPal-Request-Id", Retention: 72 * time.Hour})
				}
			}
			slices.SortFunc(ops, func(a, b Operation) int { return strings.Compare(a.Path, b.Path) })
			got, err := Build(doc, filepath.Base(spec), ops)
			if err != nil {
				t.Fatalf("Build: %v", err)
			}
			file := filepath.Join(t.TempDir(), "overlay.yaml")
			if err := os.WriteFile(file, got, 0o644); err != nil {
				t.Fatal(err)
			}
			overlaid, err := util.LoadSwaggerWithOverlay(spec, util.LoadSwaggerWithOverlayOpts{Path: file, Strict: true})
			if err != nil {
				t.Fatalf("apply the overlay: %v", err)
			}
			// Some of PayPal's specs do not validate as published: the
			// overlay must not add to what is wrong with them.
			origErr, err := doc.Validate(context.Background()), overlaid.Validate(context.Background())
			switch {
			case err == nil:
			case origErr != nil && err.Error() == origErr.Error():
				t.Logf("the spec does not validate, with or without the overlay: %v", err)
			default:
				t.Fatalf("the overlaid spec does not validate: %v (without the overlay: %v)", err, origErr)
			}
			checkPreserved(t, doc, overlaid)
			checkAdded(t, doc, overlaid, ops, goldenCase{schema: problemSchemaBase})
			if _, err := Build(overlaid, filepath.Base(spec), ops); !errors.Is(err, ErrNothingToAdd) {
				t.Errorf("Build on the overlaid spec: got error %v, want ErrNothingToAdd", err)
			}
			checkClient(t, doc, overlaid, ops, problemSchemaBase)
		})
	}
}
