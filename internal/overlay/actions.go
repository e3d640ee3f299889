package overlay

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
)

// builder holds what the actions of one Build share.
type builder struct {
	doc        *openapi3.T
	users      map[string][]responseUser // uses of each components/responses entry
	idempotent map[string]Operation      // every operation Build was given, by opKey
	schema     string                    // components/schemas name of the problem schema
	schemaUsed bool                      // whether an added response references it
	components []string                  // components/responses that get Idempotent-Replayed
}

// operationAction is the action that completes f's operation, nil when it
// declares everything already. It targets the operation object, so that new
// members are added and existing ones merged (parameters appended to, new
// responses and headers added beside the declared ones); the description is
// the only string it sets, and it keeps the original text as its beginning.
func (b *builder) operationAction(f locatedOp) object {
	update := object{}
	var did, notes []string

	if para := paragraph(f.op); !strings.Contains(f.oper.Description, para) {
		update = update.set("description", appendParagraph(f.oper.Description, para))
	}
	if f.op.KeyHeader != "" && !declaresHeaderParameter(b.doc, f, f.op.KeyHeader) {
		update = update.set("parameters", []any{keyParameter(f.op)})
		did = append(did, "the "+f.op.KeyHeader+" header parameter")
	}

	declared := map[string]*openapi3.ResponseRef{}
	if f.oper.Responses != nil {
		declared = f.oper.Responses.Map()
	}
	responses := map[string]object{}
	var added, marked []string
	for _, r := range errorResponses(f.op) {
		if _, ok := declared[r.status]; !ok {
			responses[r.status] = r.response(b.schema)
			added = append(added, r.status)
			b.schemaUsed = true
		}
	}
	for _, status := range slices.Sorted(maps.Keys(declared)) {
		r := declared[status]
		if !f.op.replayable(status) || r == nil {
			continue
		}
		if r.Ref == "" {
			if r.Value != nil && !hasHeader(r.Value.Headers, replayedHeader) && !b.layerResponse(r.Value) {
				responses[status] = object{}.set("headers", object{}.set(replayedHeader, replayed()))
				marked = append(marked, status)
			}
			continue
		}
		if note := b.componentHeader(status, r); note != "" {
			notes = append(notes, note)
		}
	}
	if len(responses) > 0 {
		obj := object{}
		for _, status := range slices.Sorted(maps.Keys(responses)) {
			obj = obj.set(status, responses[status])
		}
		update = update.set("responses", obj)
	}
	if len(update) == 0 {
		return nil
	}

	if len(added) > 0 {
		did = append(did, plural("response", added))
	}
	if len(marked) > 0 {
		did = append(did, replayedHeader+" on "+plural("response", marked))
	}
	if update.get("description") != nil {
		did = append(did, "the idempotency paragraph of the description")
	}
	desc := f.name() + ": add " + list(did) + "."
	for _, n := range notes {
		desc += " " + n
	}
	return object{}.set("target", f.target).set("description", desc).set("update", update)
}

// layerResponse reports whether r is one of the idempotency layer's own
// responses, added by an earlier application of this overlay: its body is
// the problem schema. The layer answers those itself; they are never replays.
func (b *builder) layerResponse(r *openapi3.Response) bool {
	mt := r.Content.Get(problemMediaType)
	return mt != nil && mt.Schema != nil && mt.Schema.Ref == "#/components/schemas/"+b.schema
}

// componentHeader decides about Idempotent-Replayed on a declared response
// that is a $ref. The header is declared on a components/responses entry
// only when every use of it is a response of an idempotent operation that a
// replay can answer; otherwise a shared response would claim replays for
// operations that never replay. The header is not declared on the
// operation's response either: beside a $ref, OpenAPI ignores it. It returns
// a note for the action's description when the header is left out.
func (b *builder) componentHeader(status string, r *openapi3.ResponseRef) string {
	name, ok := componentResponseName(r)
	if !ok {
		return fmt.Sprintf("Response %s references %s, outside this document's components: %s is not declared on it.", status, r.Ref, replayedHeader)
	}
	var comp *openapi3.ResponseRef
	if b.doc.Components != nil {
		comp = b.doc.Components.Responses[name]
	}
	_, quoteErr := quoteName(name)
	switch {
	case comp == nil || comp.Value == nil || comp.Ref != "" || quoteErr != nil:
		return fmt.Sprintf("Response %s references components/responses/%s, which cannot be updated in place: %s is not declared on it.", status, name, replayedHeader)
	case hasHeader(comp.Value.Headers, replayedHeader), slices.Contains(b.components, name):
		return ""
	}
	for _, u := range b.users[name] {
		op, ok := b.idempotent[opKey(u.path, u.method)]
		if u.method == "" || !ok || !op.replayable(u.status) {
			return fmt.Sprintf("Response %s references components/responses/%s, which is also used where no replay answers: %s is not declared on it.", status, name, replayedHeader)
		}
	}
	b.components = append(b.components, name)
	return ""
}

// componentActions declare Idempotent-Replayed on the components/responses
// entries componentHeader chose, in name order.
func (b *builder) componentActions() []any {
	var out []any
	for _, name := range slices.Sorted(slices.Values(b.components)) {
		quoted, _ := quoteName(name) // checked by componentHeader
		var uses []string
		for _, u := range b.users[name] {
			uses = append(uses, fmt.Sprintf("%s %s %s", u.method, u.path, u.status))
		}
		out = append(out, object{}.
			set("target", "$.components.responses"+quoted).
			set("description", fmt.Sprintf("components/responses/%s, used only where a replay answers (%s): add %s.", name, strings.Join(uses, ", "), replayedHeader)).
			set("update", object{}.set("headers", object{}.set(replayedHeader, replayed()))))
	}
	return out
}

// plural writes "response 201" or "responses 400, 409 and 503".
func plural(noun string, items []string) string {
	if len(items) == 1 {
		return noun + " " + items[0]
	}
	return noun + "s " + list(items)
}

// list joins items as "a", "a and b" or "a, b and c".
func list(items []string) string {
	if len(items) < 2 {
		return strings.Join(items, "")
	}
	return strings.Join(items[:len(items)-1], ", ") + " and " + items[len(items)-1]
}
