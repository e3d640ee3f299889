package generator

import (
	"github.com/idemgen/idemgen/internal/model"
	"github.com/idemgen/idemgen/internal/overlay"
)

// overlayOperation is what the overlay publishes of the path operation o.
func overlayOperation(o model.Operation) overlay.Operation {
	return overlay.Operation{
		Method:      o.Method,
		Path:        o.Path,
		OperationID: o.SpecID,
		KeyHeader:   o.KeyHeader,
		KeyPointer:  o.KeyPointer,
		KeyPointers: o.KeyPointers,
		Optional:    o.Optional,
		Retention:   o.Retention,
		Final:       o.Final,
		Transient:   o.Transient,
	}
}

// eventOverlayOperations are what the overlay publishes of m's webhook and
// callback operations, where the file wraps their receivers or initiators:
// the receiver's contract, addressed at the webhook or callback.
func eventOverlayOperations(m model.File) []overlay.Operation {
	var groups []model.EventGroup
	switch {
	case m.OgenWebhooks != nil: // ogen's WebhookServer, the only events it wraps
		groups = []model.EventGroup{*m.OgenWebhooks}
	case !m.HasEvents():
		return nil
	default:
		groups = m.EventGroups()
	}
	var out []overlay.Operation
	for _, g := range groups {
		for _, o := range g.Operations {
			op := overlayOperation(o)
			op.Path = ""
			if e := o.Event; e.Kind == model.Webhook {
				op.Webhook = e.Name
			} else {
				op.Callback = &overlay.Callback{Path: e.ParentPath, Method: e.ParentMethod, Name: e.Name, Expression: e.Expression}
			}
			out = append(out, op)
		}
	}
	return out
}
