package extension_test

import (
	"os"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/idemgen/idemgen/internal/extension"
	"github.com/idemgen/idemgen/internal/sharedspecs"
)

// TestMisspelt: extensions that, in lower case and with underscores read as
// hyphens, are a small edit away from x-idempotent or start with its stem
// are taken for typos; other tools' extensions, and x-idempotent itself,
// are not.
func TestMisspelt(t *testing.T) {
	for _, key := range []string{
		"x-idempotnet", "x-idempotency", "x-idempotant", "x-Idempotent", "X-IDEMPOTENT",
		"x-idempotet", "x-idempotents", "x-idempoten", "x-idmepotent",
		"x_idempotent", "X_Idempotent", "x_idempotency", "xidempotent", "x-idempotence",
		"x-idempotency-key", "x-idempotent-key", "x_idempotency_key", "X-Idempotency-Key",
		"x-idempotency-key-header", "x-idempotent-settings", "x-idempotently",
	} {
		if !extension.Misspelt(key) {
			t.Errorf("Misspelt(%q) = false, want true", key)
		}
	}
	for _, key := range []string{
		"x-idempotent", "x-go-name", "x-go-type", "x-go-type-skip-optional-pointer",
		"x-oapi-codegen-extra-tags", "x-oapi-codegen-only-honour-go-name", "x-enum-varnames",
		"x-amazon-apigateway-integration", "x-amazon-apigateway-request-validators", "x-order",
		"x-fern-idempotency-headers", "x-fern-idempotent", "x-speakeasy-retries",
		"x-ms-long-running-operation", "x-ms-paths", "x-codegen-request-body-name", "x-nullable",
		"x-internal", "x-webhooks", "x-tagGroups", "x-logo", "x-stoplight", "x-readme",
		"idempotent", "idempotency-key", "xx-idempotent-x", "x-my-idempotent",
	} {
		if extension.Misspelt(key) {
			t.Errorf("Misspelt(%q) = true, want false", key)
		}
	}
}

// TestMisspeltVendorSpecs: no name anywhere in the real vendor specs (every
// key of every object: paths, schemas, properties, headers, extensions) is
// taken for a misspelling of x-idempotent.
func TestMisspeltVendorSpecs(t *testing.T) {
	for _, path := range sharedspecs.All(t) {
		text, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var doc yaml.Node
		if err := yaml.Unmarshal(text, &doc); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		keys := 0
		var walk func(n *yaml.Node)
		walk = func(n *yaml.Node) {
			if n.Kind == yaml.MappingNode {
				for i := 0; i+1 < len(n.Content); i += 2 {
					keys++
					if k := n.Content[i]; extension.Misspelt(k.Value) {
						t.Errorf("%s:%d: %q taken for a misspelling of x-idempotent", path, k.Line, k.Value)
					}
				}
			}
			for _, c := range n.Content {
				walk(c)
			}
		}
		walk(&doc)
		if keys < 20 {
			t.Errorf("%s: only %d keys read", path, keys)
		}
	}
}
