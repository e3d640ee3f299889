package model

import "slices"

// Ogen targets: the file generated beside ogen's output (github.com/ogen-go/ogen)
// instead of oapi-codegen's. ogen's server is an http.Handler that finds an
// operation with its FindPath method, so the file wraps that server as a
// whole: one http.Handler that looks the route up, runs the idempotent
// operations through the engine and hands every request to ogen's server.
// ogen's client sends every request through one ht.Client (its WithClient
// option), so the file gives it one that retries the idempotent operations.

// ForOgen returns f as the file for ogen's output: its operations only
// (ogen's server and client are wrapped whole, so none of oapi-codegen's
// decorators, strict middleware, client helpers or receivers), with Ogen
// set, and OgenServer and OgenClient as server and client say (false
// where ogen is told --no-server or --no-client).
func (f File) ForOgen(server, client bool) File {
	f.Ogen = true
	f.Server, f.Strict, f.FrameworkStrict, f.Client = false, false, false, false
	f.Receivers, f.Initiators = false, false
	for _, g := range f.EventGroups() {
		switch {
		case g.Kind == Callback:
			f.Note = "wraps no callback: ogen generates no callback receivers, so the marked callbacks are not served by ogen's output"
		case server:
			g.Operations = slices.Clone(g.Operations)
			for i, op := range g.Operations {
				ev := *op.Event
				ev.Ogen = true
				g.Operations[i].Event = &ev
			}
			f.OgenWebhooks = &g
		}
	}
	f.Events = nil
	if len(f.Operations) > 0 {
		f.OgenServer, f.OgenClient = server, client
	}
	if len(f.Operations) == 0 && f.OgenWebhooks == nil && f.Unwrapped == "" {
		f.Unwrapped = "the spec marks only callbacks, or only webhooks and ogen generates no server"
	}
	return f
}

// ogenImports are the standard library packages the ogen wrappers call.
func (f File) ogenImports() []string {
	var need []string
	if f.OgenServer || f.OgenClient || f.OgenWebhooks != nil {
		need = append(need, "net/http", "time")
	}
	if f.OgenClient {
		need = append(need, "bytes", "context", "encoding/json", "io", "net/url", "strings")
	}
	return need
}
