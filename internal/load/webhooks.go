package load

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/oapi-codegen/oapi-codegen/v2/pkg/codegen"
	"gopkg.in/yaml.v3"

	"github.com/idemgen/idemgen/internal/extension"
	"github.com/idemgen/idemgen/internal/model"
)

// eventPlace is where a webhook or callback operation is in the spec.
type eventPlace struct {
	kind model.EventKind
	name string // the webhook's or callback's name
	// at is the pseudo-path the line index knows the operation under
	// (eventPath), with its method.
	at string
	// parent is a callback's path operation and expr its URL expression.
	parent callbackParent
}

// eventPath is the pseudo-path under which the line index keeps a webhook
// (parent "") or a callback of the path operation parent ("/path METHOD")
// at URL expression expr.
func eventPath(kind model.EventKind, parent, name, expr string) string {
	if kind == model.Webhook {
		return "webhooks " + name
	}
	return parent + " callbacks " + name + " " + expr
}

// describeEvents describes the spec's webhook and callback operations as
// oapi-codegen does (describe holds its global state).
func describeEvents(spec *openapi3.T, responseTypeName func(string) string) ([]codegenOp, error) {
	webhooks, err := codegen.WebhookOperationDefinitions(spec)
	if err != nil {
		return nil, err
	}
	callbacks, err := codegen.CallbackOperationDefinitions(spec)
	if err != nil {
		return nil, err
	}
	parents := callbackParents(spec)
	var out []codegenOp
	for _, def := range append(webhooks, callbacks...) {
		d := fromDefinition(def, def.Spec.OperationID, responseTypeName)
		d.path = ""
		if def.IsWebhook {
			d.event = &eventPlace{kind: model.Webhook, name: def.WebhookName, at: eventPath(model.Webhook, "", def.WebhookName, "")}
		} else {
			p := parents[def.Spec]
			d.event = &eventPlace{kind: model.Callback, name: def.CallbackName, at: eventPath(model.Callback, p.path+" "+p.method, def.CallbackName, p.expr), parent: p}
		}
		out = append(out, d)
	}
	return out, nil
}

// callbackParent is where a callback operation is declared: its path
// operation (path and upper-case method) and URL expression.
type callbackParent struct{ path, method, expr string }

// callbackParents maps each callback operation of spec to where it is.
func callbackParents(spec *openapi3.T) map[*openapi3.Operation]callbackParent {
	out := map[*openapi3.Operation]callbackParent{}
	for path, item := range spec.Paths.Map() {
		for method, op := range item.Operations() {
			for _, cb := range op.Callbacks {
				if cb == nil || cb.Value == nil {
					continue
				}
				for _, expr := range cb.Value.Keys() {
					if cbItem := cb.Value.Value(expr); cbItem != nil {
						for _, cbOp := range cbItem.Operations() {
							out[cbOp] = callbackParent{path: path, method: strings.ToUpper(method), expr: expr}
						}
					}
				}
			}
		}
	}
	return out
}

// markedEvents counts the event operations that opt in to x-idempotent.
func markedEvents(events []codegenOp) int {
	n := 0
	for _, d := range events {
		if v, ok := d.op.Extensions[extension.Name]; ok {
			if enabled, _, err := extension.ParseOperation(v); err != nil || enabled {
				n++
			}
		}
	}
	return n
}

// eventRetryOn is an event initiator's default retryOn: every status the
// receiver's layer does not store (5xx, 408, 409, 425, 429), since a
// sender redelivers until the receiver answers for good.
var eventRetryOn = []int{408, 409, 425, 429, 500, 502, 503, 504}

// events adds to f the groups of the marked webhook and callback
// operations, each sorted by Go name, and says whether f wraps their
// receivers or initiators; doc holds the document-level settings.
func (l *loader) events(f *model.File, doc extension.Spec) {
	groups := []model.EventGroup{{Kind: model.Webhook}, {Kind: model.Callback}}
	report, misspelt := l.report, l.misspelt
	for _, d := range l.cg.events {
		name := d.specID
		if name == "" {
			name = d.event.name
		}
		misspelt(d.op.Extensions, d.event.at, d.method, name, strings.ToLower(string(d.event.kind))+" operation")
		v, ok := d.op.Extensions[extension.Name]
		if !ok {
			continue
		}
		enabled, s, err := extension.ParseOperation(v)
		if err != nil {
			report(d.event.at, d.method, name, err)
			continue
		}
		if !enabled {
			continue
		}
		op, err := buildEvent(*f, d, doc, s)
		if err != nil {
			report(d.event.at, d.method, name, err)
			continue
		}
		g := &groups[0]
		if d.event.kind == model.Callback {
			g = &groups[1]
		}
		g.Operations = append(g.Operations, op)
	}
	for i := range groups {
		slices.SortFunc(groups[i].Operations, func(a, b model.Operation) int { return cmp.Compare(a.GoName, b.GoName) })
	}
	f.Events = groups
	hasEvents := len(f.EventGroups()) > 0
	f.Receivers, f.Initiators = hasEvents && f.Server, hasEvents && f.Client
}

// buildEvent is build for a webhook or callback operation: its provider,
// a composite key checked against the body schema, the initiator's
// default retryOn, and no security scheme (a sender proves itself by a
// signature, which the user's middleware checks before the layer runs).
func buildEvent(f model.File, d codegenOp, doc, s extension.Spec) (model.Operation, error) {
	set, err := extension.Resolve(doc, s)
	if err != nil {
		return model.Operation{}, err
	}
	op, err := build(f, d, doc, s, nil)
	var errs []error
	if err != nil {
		errs = append(errs, err)
	}
	op.Path = ""
	op.KeyPointers = set.KeyPointers
	op.Event = &model.Event{
		Kind: d.event.kind, Name: d.event.name, Provider: cmp.Or(set.Provider, d.event.name),
		ParentPath: d.event.parent.path, ParentMethod: d.event.parent.method, Expression: d.event.parent.expr,
	}
	if len(op.KeyPointers) > 0 {
		op.KeyPointer, op.KeyHeader = "", ""
		if !op.HasBody() {
			errs = append(errs, &extension.Error{Field: "key.body", Msg: "operation has no request body; a composite key needs a JSON body: use key.header instead"})
		}
		for i, p := range op.KeyPointers {
			field := fmt.Sprintf("key.body[%d]", i)
			for _, b := range op.Bodies {
				if b.Kind != model.BodyJSON {
					errs = append(errs, &extension.Error{Field: field, Msg: fmt.Sprintf("operation accepts %s, which is not JSON; a composite key needs every request body to be JSON", b.ContentType)})
					break
				}
			}
			if err := checkKeySchema(d.op, p, field, true); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if !retryOnGiven(doc) && !retryOnGiven(s) {
		op.Retry.RetryOn = eventRetryOn
	}
	if f.Client {
		for _, b := range op.Bodies {
			if b.Kind != model.BodyJSON {
				errs = append(errs, &extension.Error{Msg: fmt.Sprintf(
					"the %s takes %s; the generated initiator sends JSON bodies only (the receiver would take it): mark it for a configuration without client", strings.ToLower(string(d.event.kind)), b.ContentType)})
				break
			}
		}
		if len(op.Bodies) > 1 {
			errs = append(errs, &extension.Error{Msg: "the generated initiator sends one JSON body; this operation takes several media types"})
		}
	}
	if len(errs) > 0 {
		return model.Operation{}, errors.Join(errs...)
	}
	return op, nil
}

// retryOnGiven reports whether s gives retry.retryOn.
func retryOnGiven(s extension.Spec) bool { return s.Retry != nil && s.Retry.RetryOn != nil }

// providerOnPath is the problem of a path operation whose x-idempotent
// gives a provider, nil for one without.
func providerOnPath(s extension.Spec) error {
	if s.Provider == nil {
		return nil
	}
	return &extension.Error{Field: "provider", Msg: "is allowed on webhook and callback operations only: a path operation's keys are its clients', not a sender's ids"}
}

// indexEvents adds the webhook and callback operations of the spec's YAML
// root to ix, under their eventPath.
func (ix lineIndex) indexEvents(root *yaml.Node) {
	addOps := func(at string, item *yaml.Node) {
		if item == nil || item.Kind != yaml.MappingNode {
			return
		}
		for j := 0; j+1 < len(item.Content); j += 2 {
			method, op := item.Content[j], item.Content[j+1]
			place := placeKey(at, strings.ToUpper(method.Value))
			ix[place] = method.Line
			ix.addMisspelt(place, op)
			if ext := member(op, extension.Name); ext != nil {
				ix.addExtension(place, ext.key, ext.value)
			}
		}
	}
	if hooks := member(root, "webhooks"); hooks != nil && hooks.value.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(hooks.value.Content); i += 2 {
			name := hooks.value.Content[i]
			at := eventPath(model.Webhook, "", name.Value, "")
			ix[placeKey(at, "")] = name.Line
			addOps(at, hooks.value.Content[i+1])
		}
	}
	paths := member(root, "paths")
	if paths == nil || paths.value.Kind != yaml.MappingNode {
		return
	}
	for i := 0; i+1 < len(paths.value.Content); i += 2 {
		path, item := paths.value.Content[i], paths.value.Content[i+1]
		if item.Kind != yaml.MappingNode {
			continue
		}
		for j := 0; j+1 < len(item.Content); j += 2 {
			method, op := item.Content[j], item.Content[j+1]
			cbs := member(op, "callbacks")
			if cbs == nil || cbs.value.Kind != yaml.MappingNode {
				continue
			}
			parent := path.Value + " " + strings.ToUpper(method.Value)
			for k := 0; k+1 < len(cbs.value.Content); k += 2 {
				name, cb := cbs.value.Content[k], cbs.value.Content[k+1]
				if cb.Kind != yaml.MappingNode {
					continue
				}
				for l := 0; l+1 < len(cb.Content); l += 2 {
					expr := cb.Content[l]
					at := eventPath(model.Callback, parent, name.Value, expr.Value)
					ix[placeKey(at, "")] = expr.Line
					addOps(at, cb.Content[l+1])
				}
			}
		}
	}
}
