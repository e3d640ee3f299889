package extension

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// TestExtensionDoc: the x-idempotent reference (docs/extension.md) names
// every field the parser accepts, and its example (comments aside) parses.
func TestExtensionDoc(t *testing.T) {
	doc, err := os.ReadFile("../../docs/extension.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(doc), "# The `x-idempotent` reference")
	_, block, ok2 := strings.Cut(section, "```yaml\n")
	block, _, ok3 := strings.Cut(block, "```")
	if !ok || !ok2 || !ok3 {
		t.Fatal("docs/extension.md has no yaml block under \"# The `x-idempotent` reference\"")
	}
	for _, fields := range [][]string{fieldNames, keyFields, fingerprintFields, retryFields} {
		for _, f := range fields {
			if !regexp.MustCompile(`(?m)^\s*(#\s*)?` + f + `:`).MatchString(block) {
				t.Errorf("docs/extension.md's x-idempotent reference does not mention %s", f)
			}
		}
	}
	var example struct {
		X any `yaml:"x-idempotent"`
	}
	if err := yaml.Unmarshal([]byte(block), &example); err != nil {
		t.Fatal(err)
	}
	// As the loader hands it over: decoded from JSON.
	raw, err := json.Marshal(example.X)
	if err != nil {
		t.Fatal(err)
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	// The example shows every field; api is a document-level one, so the
	// whole of it parses at document level, and all but api on an operation.
	if _, err := ParseDocument(v); err != nil {
		t.Errorf("docs/extension.md's example does not parse at document level: %v", err)
	}
	if m, ok := v.(map[string]any); ok {
		delete(m, "api")
	}
	if _, _, err := ParseOperation(v); err != nil {
		t.Errorf("docs/extension.md's example does not parse on an operation: %v", err)
	}
}
