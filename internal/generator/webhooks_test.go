package generator_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oapi-codegen/oapi-codegen/v2/pkg/util"

	"github.com/idemgen/idemgen/internal/generator"
)

// goldenConfig is the generator configuration of the golden case name.
func goldenConfig(t *testing.T, name string) generator.Config {
	t.Helper()
	dir := filepath.Join(goldenRoot, name)
	data, err := os.ReadFile(filepath.Join(dir, "cfg.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	cg, _, err := generator.ParseCodegenConfig(data)
	if err != nil {
		t.Fatal(err)
	}
	return generator.Config{Spec: filepath.Join(dir, "openapi.yaml"), Source: "openapi.yaml", Codegen: cg, Output: "api.idem.gen.go", Dir: dir}
}

// A marked webhook or callback is wrapped, never silently left out: before
// idemgen knew them, oapi-codegen's own webhook spec marked with
// x-idempotent generated a file that said "the spec marks no operation
// x-idempotent".
func TestMarkedWebhooksAndCallbacksAreWrapped(t *testing.T) {
	for name, want := range map[string][]string{
		"webhooks":      {"func WithIdempotentWebhooks(", "func NewIdempotentWebhookInitiator(", `KeyHeader: "webhook-id"`},
		"callbacks":     {"func WithIdempotentCallbacks(", "func NewIdempotentCallbackInitiator(", `KeyPointer: "/id"`},
		"webhooks-gin":  {"func WithIdempotentWebhooks(", `KeyPointers: []string{"/id", "/status"}`},
		"callbacks-gin": {"func WithIdempotency(", "func WithIdempotentCallbacks(", "func NewIdempotentClient("},
	} {
		files, err := generator.Generate(goldenConfig(t, name))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got := string(files[0].Content)
		if strings.Contains(got, "wraps no operation") {
			t.Errorf("%s: the marked operations are left unwrapped", name)
		}
		for _, w := range want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: the file lacks %s", name, w)
			}
		}
	}
}

// The overlay publishes a webhook receiver's contract at the webhook, and a
// callback receiver's at the callback, as it does an operation's: applied
// with oapi-codegen's loader it validates and declares the id header, and a
// second overlay over the result has nothing to add.
func TestOverlayPublishesReceivers(t *testing.T) {
	for name, target := range map[string]string{
		"webhooks":      "target: $.webhooks['petStatusChanged'].post\n",
		"callbacks-gin": "target: $.paths['/api/plant_tree'].post.callbacks['treePlanted']['{$request.body#/callbackUrl}'].post\n",
	} {
		c := goldenConfig(t, name)
		f, err := generator.GenerateOverlay(c, "idem.overlay.yaml")
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got := string(f.Content)
		if !strings.Contains(got, target) || !strings.Contains(got, "the receiver deduplicates deliveries") {
			t.Fatalf("%s: the overlay does not publish the receiver at %s:\n%s", name, target, got)
		}
		path := filepath.Join(t.TempDir(), "idem.overlay.yaml")
		if err := os.WriteFile(path, f.Content, 0o644); err != nil {
			t.Fatal(err)
		}
		doc, err := util.LoadSwaggerWithOverlay(c.Spec, util.LoadSwaggerWithOverlayOpts{Path: path, Strict: true})
		if err != nil {
			t.Fatalf("%s: apply the overlay: %v", name, err)
		}
		if err := doc.Validate(context.Background()); err != nil {
			t.Fatalf("%s: the overlaid spec does not validate: %v", name, err)
		}
		if name == "webhooks" {
			op := doc.Webhooks["petStatusChanged"].Post
			if p := op.Parameters.GetByInAndName("header", "webhook-id"); p == nil || !p.Required {
				t.Errorf("the overlaid webhook does not require the webhook-id header: %+v", op.Parameters)
			}
			if op.Responses.Value("422") == nil || op.Responses.Value("409") == nil {
				t.Errorf("the overlaid webhook does not declare 409 and 422")
			}
		}
		again := c
		again.Spec = filepath.Join(t.TempDir(), "openapi.yaml")
		overlaid, err := doc.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(again.Spec, overlaid, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := generator.GenerateOverlay(again, "idem.overlay.yaml"); !errors.Is(err, generator.ErrNothingToPublish) {
			t.Errorf("%s: a second overlay: %v, want nothing to publish", name, err)
		}
	}
}
