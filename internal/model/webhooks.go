package model

import "strings"

// Webhooks and callbacks: the operations a service receives from a sender
// (OpenAPI 3.1 webhooks:, and callbacks: since 3.0), which oapi-codegen
// generates as a WebhookReceiverInterface (CallbackReceiverInterface) for
// the receiving side and a WebhookInitiator (CallbackInitiator) for the
// sending side. idemgen wraps the marked ones as it wraps operations:
// WithIdempotentWebhooks decorates the receiver interface, and
// IdempotentWebhookInitiator sends each event with one delivery id.

// EventKind is what delivers an event operation; it is also the prefix
// oapi-codegen gives the names of its receiver and initiator.
type EventKind string

// The kinds of event operations.
const (
	Webhook  EventKind = "Webhook"  // a webhooks: entry (OpenAPI 3.1)
	Callback EventKind = "Callback" // a callbacks: entry of a path operation
)

// Event is what an Operation that receives webhooks or callbacks adds.
type Event struct {
	Kind EventKind
	// Name is the webhook's key under webhooks:, or the callback's under
	// its operation's callbacks:.
	Name string
	// Provider is the sender whose ids the keys are, part of the storage
	// key: x-idempotent's provider, by default Name.
	Provider string
	// ParentPath, ParentMethod and Expression locate a callback: the path
	// operation that declares it and its URL expression ("" for a webhook).
	ParentPath, ParentMethod, Expression string
	// Ogen: the webhook is received by ogen's WebhookHandler (File.ForOgen).
	Ogen bool
}

// EventGroup is the marked operations of one kind, sorted by GoName.
type EventGroup struct {
	Kind       EventKind
	Operations []Operation
	// ReceiverType is the receiver interface decorator's type
	// (idempotentWebhookReceiver), allocated by AllocateNames.
	ReceiverType string
}

// EventGroups are the groups of f's marked event operations that are not
// empty, webhooks first.
func (f File) EventGroups() []EventGroup {
	var out []EventGroup
	for _, g := range f.Events {
		if len(g.Operations) > 0 {
			out = append(out, g)
		}
	}
	return out
}

// HasEvents reports whether f wraps any webhook or callback: a receiver or
// an initiator.
func (f File) HasEvents() bool { return f.Receivers || f.Initiators }

// WithoutPaths returns f for a run whose marked operations are all webhooks
// and callbacks: no path operation's wrappers (Server, Strict, Client off).
func (f File) WithoutPaths() File {
	f.Server, f.Strict, f.FrameworkStrict, f.Client = false, false, false, false
	return f
}

// Interface is oapi-codegen's receiver interface, WebhookReceiverInterface.
func (g EventGroup) Interface() string { return string(g.Kind) + "ReceiverInterface" }

// Wrap is the function that decorates the receiver interface,
// WithIdempotentWebhooks.
func (g EventGroup) Wrap() string { return "WithIdempotent" + string(g.Kind) + "s" }

// Lower is the kind in lower case, for comments.
func (g EventGroup) Lower() string { return strings.ToLower(string(g.Kind)) }

// InitiatorInterface is oapi-codegen's initiator interface,
// WebhookInitiatorInterface.
func (g EventGroup) InitiatorInterface() string { return string(g.Kind) + "InitiatorInterface" }

// InitiatorType is the generated initiator, IdempotentWebhookInitiator.
func (g EventGroup) InitiatorType() string { return "Idempotent" + string(g.Kind) + "Initiator" }

// NewInitiator is InitiatorType's constructor.
func (g EventGroup) NewInitiator() string { return "New" + g.InitiatorType() }

// ReceiverMethod is the receiver interface's method of the operation,
// HandlePetStatusChangedWebhook.
func (o Operation) ReceiverMethod() string {
	if o.Event.Ogen {
		return o.GoName // ogen's WebhookHandler method
	}
	return "Handle" + o.GoName + string(o.Event.Kind)
}

// EventRoute names the operation in comments: "the POST petStatusChanged
// webhook".
func (o Operation) EventRoute() string {
	return "the " + o.Method + " " + o.Event.Name + " " + strings.ToLower(string(o.Event.Kind))
}

// ReceiverParams is the receiver method's parameter list after the
// framework's context (or ResponseWriter and Request), starting with ", ":
// oapi-codegen passes event operations no path parameters.
func (o Operation) ReceiverParams() string { return o.ServerParams() }

// InitiatorParams is the initiator helper's parameter list after its
// context and target URL, starting with ", ".
func (o Operation) InitiatorParams() string {
	var b strings.Builder
	if o.HasParams {
		b.WriteString(", " + o.Names.Client.Params + " *" + o.GoName + "Params")
	}
	if o.HasBody() {
		b.WriteString(", " + o.Names.Client.Body + " " + o.Bodies[0].Type)
	}
	return b.String()
}

// InitiatorCall is the method of oapi-codegen's initiator interface the
// helper calls, and its arguments after the context and target URL, the
// body given as the bytes marshalled once.
func (o Operation) InitiatorCall() string {
	var b strings.Builder
	b.WriteString(o.GoName)
	if o.HasBody() {
		b.WriteString("WithBody")
	}
	b.WriteString("(" + o.Names.Client.Ctx + ", " + o.Names.Client.TargetURL)
	if o.HasParams {
		b.WriteString(", " + o.Names.Client.Params)
	}
	if o.HasBody() {
		b.WriteString(", \"" + o.Bodies[0].ContentType + "\", " + o.Names.Client.Bytes + ".NewReader(" + o.Names.Client.Buf + ")")
	}
	b.WriteString(", " + o.Names.Client.Gen + ".Editor(" + o.Names.Client.Call + "))")
	return b.String()
}

// allocateEventNames chooses the names of f's event groups and their
// operations in pkg, the package scope, and reports the exported ones that
// declared already holds.
func (f *File) allocateEventNames(pkg scope, exported func(op int, name string)) {
	for gi := range f.Events {
		g := &f.Events[gi]
		if len(g.Operations) == 0 {
			continue
		}
		if f.Receivers {
			exported(-1, g.Wrap())
		}
		if f.Initiators {
			exported(-1, g.InitiatorType())
			exported(-1, g.NewInitiator())
		}
		g.ReceiverType = pkg.fresh("idempotent" + string(g.Kind) + "Receiver")
		for i := range g.Operations {
			op := &g.Operations[i]
			op.Names.OpVar = pkg.fresh(unexported(op.GoName) + "IdempotencyOp")
			op.Names.ClientOpVar = pkg.fresh(unexported(op.GoName) + "IdempotencyClientOp")
			// Event operations have no path parameters: nothing of the
			// user's is in scope in their methods but package-level names,
			// which oapi-codegen exports, so fixed lower-case names are free.
			fw := f.Facts()
			op.Names.Server = ServerLocals{W: "w", R: "r", Params: "params", Ctx: fw.CtxVarName(), HTTP: "http", Framework: fw.Pkg, Adapter: fw.Adapter, Gen: "idemgen"}
			op.Names.Client = ClientLocals{
				Ctx: "ctx", TargetURL: "targetURL", Params: "params", Body: "body", Opts: "opts",
				Call: "call", Buf: "buf", Err: "err", Resp: "resp", R: "r",
				Context: "context", HTTP: "http", Bytes: "bytes", Gen: "idemgen",
			}
		}
	}
}

// ReceiverPiece returns the Piece of op's method of g's receiver decorator
// (the template decoratorMethod).
func (f File) ReceiverPiece(g EventGroup, op Operation) Piece {
	return Piece{File: f, Op: op, Type: g.ReceiverType, Call: "Serve"}
}

// Embedded is the interface a decorator embeds: ServerInterface, or the
// receiver interface of a webhook or callback operation.
func (p Piece) Embedded() string {
	if p.Op.Event != nil {
		return string(p.Op.Event.Kind) + "ReceiverInterface"
	}
	return "ServerInterface"
}

// MethodName is the decorator's method of the operation: its GoName, or
// the receiver interface's method (HandlePetStatusChangedWebhook).
func (p Piece) MethodName() string {
	if p.Op.Event != nil {
		return p.Op.ReceiverMethod()
	}
	return p.Op.GoName
}

// InitiatorKeyDoc says, for the initiator helper's doc comment, where the
// delivery id comes from and where it is sent.
func (o Operation) InitiatorKeyDoc() string {
	const given = "The delivery id is the one given with idem.WithKey (pass the event's own id, so that a sender restarted mid-delivery sends it again), "
	switch {
	case o.KeyHeader != "":
		return given + "else a fresh random one; every attempt sends it in the " + o.KeyHeader + " header."
	case o.KeyPointer != "":
		return given + "else the body's " + o.KeyPointer + ", else a fresh random one filled in there."
	}
	return "The receiver keys the event by its " + strings.Join(o.KeyPointers, " and ") + " in the body, the same on every attempt; the call's key, sent in the " + "Idempotency-Key header, is informative (idem.WithKey sets it)."
}
