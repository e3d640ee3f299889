package overlay

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/oapi-codegen/oapi-codegen/v2/pkg/util"

	"github.com/idemgen/idemgen/internal/textdiff"
)

var update = flag.Bool("update", false, "rewrite testdata/<case>/overlay.yaml")

// goldenCase holds what a case expects beyond its files.
type goldenCase struct {
	schema     string   // components/schemas name of the problem schema
	noReplayed []string // "METHOD /path status" of replayable responses left without Idempotent-Replayed
}

// goldenCases lists the testdata cases.
func goldenCases() map[string]goldenCase {
	return map[string]goldenCase{
		"plain":       {schema: "IdempotencyProblem"},
		"declared":    {schema: "IdempotencyProblem2"},
		"bodykey":     {schema: "IdempotencyProblem"},
		"refresponse": {schema: "IdempotencyProblem", noReplayed: []string{"POST /a 202"}},
		"policy":      {schema: "IdempotencyProblem"},
	}
}

// TestGolden builds the overlay of each testdata case, compares it with
// overlay.yaml, applies it with oapi-codegen's loader and checks the result:
// it validates, nothing was overwritten, everything was added exactly once,
// a second overlay has nothing to add, and oapi-codegen's client for it has
// typed problem responses.
func TestGolden(t *testing.T) {
	dirs, err := filepath.Glob(filepath.Join("testdata", "*", "openapi.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	cases := goldenCases()
	if len(dirs) != len(cases) {
		t.Fatalf("found %d cases in testdata, want %d", len(dirs), len(cases))
	}
	for _, spec := range dirs {
		dir := filepath.Dir(spec)
		name := filepath.Base(dir)
		gc, ok := cases[name]
		if !ok {
			t.Fatalf("testdata/%s has no goldenCases entry", name)
		}
		// Not parallel: codegen.Generate keeps global state.
		t.Run(name, func(t *testing.T) { runGolden(t, dir, gc) })
	}
}

func runGolden(t *testing.T, dir string, gc goldenCase) {
	spec := filepath.Join(dir, "openapi.yaml")
	doc, err := util.LoadSwagger(spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("the input spec does not validate: %v", err)
	}
	ops := readOps(t, filepath.Join(dir, "ops.json"))
	before := marshal(t, doc)

	got, err := Build(doc, "openapi.yaml", ops)
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	if !bytes.Equal(before, marshal(t, doc)) {
		t.Error("Build modified the document")
	}
	reversed := slices.Clone(ops)
	slices.Reverse(reversed)
	if again, err := Build(doc, "openapi.yaml", reversed); err != nil || !bytes.Equal(got, again) {
		t.Errorf("Build is not deterministic over the order of ops (err %v)", err)
	}
	golden := filepath.Join(dir, "overlay.yaml")
	compareGolden(t, golden, got)

	overlaid, err := util.LoadSwaggerWithOverlay(spec, util.LoadSwaggerWithOverlayOpts{Path: golden, Strict: true})
	if err != nil {
		t.Fatalf("apply the overlay with oapi-codegen's loader: %v", err)
	}
	if err := overlaid.Validate(context.Background()); err != nil {
		t.Fatalf("the overlaid spec does not validate: %v", err)
	}
	checkPreserved(t, doc, overlaid)
	checkAdded(t, doc, overlaid, ops, gc)
	if _, err := Build(overlaid, "openapi.yaml", ops); !errors.Is(err, ErrNothingToAdd) {
		t.Errorf("Build on the overlaid spec: got error %v, want ErrNothingToAdd", err)
	}
	checkClient(t, doc, overlaid, ops, gc.schema)
}

// compareGolden compares got with the file golden, or rewrites it under -update.
func compareGolden(t *testing.T, golden string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if d := textdiff.Short(golden, "want", "got", want, got); d != "" {
		t.Fatalf("the overlay differs from the golden file (go test -update rewrites it):\n%s", d)
	}
}

// testOp is the JSON form of an Operation in ops.json, retention as a Go
// duration string.
type testOp struct {
	Method      string   `json:"method"`
	Path        string   `json:"path"`
	OperationID string   `json:"operationId"`
	KeyHeader   string   `json:"keyHeader"`
	KeyPointer  string   `json:"keyPointer"`
	Optional    bool     `json:"optional"`
	Retention   string   `json:"retention"`
	Final       []string `json:"final"`
	Transient   []int    `json:"transient"`
}

func readOps(t *testing.T, path string) []Operation {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var raw []testOp
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&raw); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	ops := make([]Operation, len(raw))
	for i, r := range raw {
		var d time.Duration
		if r.Retention != "" {
			if d, err = time.ParseDuration(r.Retention); err != nil {
				t.Fatalf("%s: %v", path, err)
			}
		}
		ops[i] = Operation{
			Method: r.Method, Path: r.Path, OperationID: r.OperationID,
			KeyHeader: r.KeyHeader, KeyPointer: r.KeyPointer, Optional: r.Optional, Retention: d,
			Final: r.Final, Transient: r.Transient,
		}
	}
	return ops
}

func marshal(t *testing.T, doc *openapi3.T) []byte {
	t.Helper()
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
