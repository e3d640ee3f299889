package generator_test

import (
	"strings"
	"testing"

	"github.com/idemgen/idemgen/internal/generator"
)

// ogenConfig is the configuration of a file for ogen's output from spec.
func ogenConfig(spec string) generator.Config {
	return generator.Config{Spec: spec, Codegen: generator.OgenCodegen("api"), Target: generator.TargetOgen}
}

func TestOgenWrapsTheServer(t *testing.T) {
	files, err := generator.Generate(ogenConfig("../../testdata/golden/params/openapi.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	src := string(files[0].Content)
	for _, want := range []string{
		"func WithIdempotency(s *Server, store idemstore.Store, opts ...idem.Option) http.Handler {",
		"route, ok := h.server.FindPath(r.Method, r.URL)",
	} {
		if !strings.Contains(src, want) {
			t.Errorf("the ogen file lacks %q:\n%s", want, src)
		}
	}
	for _, unwanted := range []string{"ServerInterface", "StrictHandler", "ClientWithResponses"} {
		if strings.Contains(src, unwanted) {
			t.Errorf("the ogen file names oapi-codegen's %s:\n%s", unwanted, src)
		}
	}
}

func TestOgenWrapsWebhooks(t *testing.T) {
	files, err := generator.Generate(ogenConfig("../../testdata/golden/webhooks/openapi.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	src := string(files[0].Content)
	if !strings.Contains(src, "func WithIdempotentWebhooks(ws *WebhookServer, store idemstore.Store, opts ...idem.Option) *IdempotentWebhookServer {") ||
		!strings.Contains(src, `case webhookName == "petStatusChanged" && method == "POST":`) || files[0].Note != "" {
		t.Errorf("note %q, file:\n%s", files[0].Note, src)
	}
}

func TestOgenSaysCallbacksAreNotWrapped(t *testing.T) {
	files, err := generator.Generate(ogenConfig("../../testdata/golden/callbacks/openapi.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(files[0].Note, "ogen generates no callback receivers") {
		t.Errorf("note %q, want one saying the marked callbacks are not wrapped", files[0].Note)
	}
	if strings.Contains(string(files[0].Content), "Callback") {
		t.Errorf("the ogen file wraps callbacks:\n%s", files[0].Content)
	}
}

func TestUnknownTarget(t *testing.T) {
	c := ogenConfig("openapi.yaml")
	c.Target = "swagger"
	err := c.Validate()
	if err == nil || !strings.Contains(err.Error(), `target "swagger": must be oapi-codegen (the default) or ogen`) {
		t.Errorf("Validate: %v, want the targets it takes", err)
	}
}

func TestOgenBareFileImportsOnlyTheRuntime(t *testing.T) {
	files, err := generator.Generate(ogenConfig("../../testdata/golden/bare-getonly/openapi.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	src := string(files[0].Content)
	if strings.Contains(src, `"net/http"`) || !strings.Contains(src, "This file wraps no operation") {
		t.Errorf("a file for ogen that wraps nothing:\n%s", src)
	}
}

func TestOgenOverlayPublishesTheWrappedWebhooks(t *testing.T) {
	l, err := generator.Load(ogenConfig("../../testdata/golden/webhooks/openapi.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	f, err := l.Overlay("idempotency.overlay.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(f.Content), "petStatusChanged") {
		t.Errorf("the overlay of a file for ogen does not publish the wrapped webhook:\n%s", f.Content)
	}
}
