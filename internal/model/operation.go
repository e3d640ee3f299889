package model

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Route is "METHOD /path".
func (o Operation) Route() string { return o.Method + " " + o.Path }

// Sentence is the summary as a sentence ending in a period, or "".
func (o Operation) Sentence() string {
	s := strings.Join(strings.Fields(o.Summary), " ")
	if s == "" || strings.HasSuffix(s, ".") {
		return s
	}
	return s + "."
}

// Name is the operation as the spec calls it: its operationId, or its route.
func (o Operation) Name() string {
	if o.SpecID != "" {
		return o.SpecID
	}
	return o.Route()
}

// KeyParamNote explains, for an operation whose spec declares the key
// header as a required parameter, that oapi-codegen's generated wrapper
// rejects a request without it (400, its own plain-text error) before the
// idempotency layer runs; "" otherwise.
func (o Operation) KeyParamNote() string {
	if o.KeyParam == nil || !o.KeyParam.Required {
		return ""
	}
	return "The spec declares " + o.KeyParam.Name + " a required parameter, so oapi-codegen's wrapper answers 400 to a request without it before the idempotency layer runs (missing-key, as the layer would, when its ErrorHandlerFunc is IdempotencyErrorHandler)."
}

// ServerParams is the parameter list of the ServerInterface method after
// its ResponseWriter and Request, starting with ", ".
func (o Operation) ServerParams() string {
	var b strings.Builder
	for _, p := range o.PathParams {
		fmt.Fprintf(&b, ", %s %s", p.Name, p.Type)
	}
	if o.HasParams {
		fmt.Fprintf(&b, ", %s %sParams", o.Names.Server.Params, o.GoName)
	}
	return b.String()
}

// ServerArgs is the argument list matching ServerParams.
func (o Operation) ServerArgs() string {
	var b strings.Builder
	for _, p := range o.PathParams {
		b.WriteString(", " + p.Name)
	}
	if o.HasParams {
		b.WriteString(", " + o.Names.Server.Params)
	}
	return b.String()
}

// HasBody reports whether the operation takes a request body.
func (o Operation) HasBody() bool { return len(o.Bodies) > 0 }

// KeyParamNames are the distinct key header names that operations declare
// as header parameters, sorted: oapi-codegen's wrapper checks those before
// the idempotency layer runs, and IdempotencyErrorHandler answers its
// errors about them as the layer would.
func (f File) KeyParamNames() []string {
	var names []string
	for _, op := range f.Operations {
		if op.KeyParam != nil {
			names = append(names, op.KeyParam.Name)
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// KeyParamCond is a Go condition that holds when the expression v, a
// parameter name in an error of oapi-codegen's wrapper, is one of
// KeyParamNames.
func (f File) KeyParamCond(v string) string {
	var conds []string
	for _, name := range f.KeyParamNames() {
		conds = append(conds, v+" == "+strconv.Quote(name))
	}
	if len(conds) > 1 {
		return "(" + strings.Join(conds, " || ") + ")"
	}
	return strings.Join(conds, "")
}

// SecurityNote is the paragraph of ctor's doc comment that says which
// operations require security and which options choose their key space;
// "" when none requires security.
func (f File) SecurityNote(ctor string) string {
	var names []string
	for _, op := range f.Operations {
		if len(op.Security) > 0 {
			names = append(names, op.GoName)
		}
	}
	if len(names) == 0 {
		return ""
	}
	return "The spec requires security for " + strings.Join(names, ", ") + ", so opts must choose a key space: " +
		"idem.WithScope, idem.WithScopeFromHeader (with idem.WithScopeSecret) or idem.WithSharedKeySpace; without one, " +
		ctor + " panics, saying what to add."
}

// Piece is the data of a partial template about one operation: the file
// and the operation, and for a method of a ServerInterface decorator
// (the template decoratorMethod) the decorator's type and the engine's or
// adapter's function the method calls.
type Piece struct {
	File
	Op   Operation
	Type string // the decorator's type
	Call string // Serve, or ServeBody in front of a strict handler
}

// EngineCall is the start of the call that runs a net/http decorator's
// method through the engine, up to its first argument: the engine's Serve,
// or idemgen's ServeBody in front of a strict handler.
func (p Piece) EngineCall() string {
	engine := p.Receiver() + ".engine"
	if p.Call == "ServeBody" {
		return p.Op.Names.Server.Gen + ".ServeBody(" + engine + ", "
	}
	return engine + "." + p.Call + "("
}

// Piece returns the Piece of op.
func (f File) Piece(op Operation) Piece { return Piece{File: f, Op: op} }

// Method returns the Piece of op's method of the decorator typ, which
// calls call.
func (f File) Method(op Operation, typ, call string) Piece {
	return Piece{File: f, Op: op, Type: typ, Call: call}
}
