package model

import (
	"maps"
	"slices"
	"strconv"
	"unicode"
	"unicode/utf8"
)

// The generator owns its names and the user owns theirs: the parameter
// names come from oapi-codegen and stay as it gives them, and every name
// the generated code chooses itself (locals, receivers, unexported
// package-level identifiers, and a second name for a package that a path
// parameter hides) is allocated by AllocateNames so that it cannot collide
// with them, the way protoc-gen-go allocates names per file. Only a clash
// of an exported identifier, which users call by name, is an error.

// FileNames are the names of a generated file that idemgen chooses itself.
type FileNames struct {
	ServerType     string // the ServerInterface decorator type (idempotentServer)
	StrictType     string // the strict server's router step, a ServerInterface decorator (idempotentStrictServer)
	StrictMW       string // the function returning the strict middleware (idempotencyStrictMiddleware)
	ServerReceiver string // the receiver of its methods (s)
	ClientReceiver string // the receiver of IdempotentClient's methods (c)
	// Aliases are the extra imports (name -> path) that give a package a
	// second name where a path parameter hides its own.
	Aliases map[string]string
}

// OpNames are the names one operation's generated code chooses itself.
type OpNames struct {
	OpVar       string // package-level idem.Operation of the server wrappers
	ClientOpVar string // package-level idem.ClientOperation of the client helper
	StrictFunc  string // package-level function wrapping the strict handler
	Server      ServerLocals
	Client      ClientLocals
}

// ServerLocals are the names in the decorator's method of the operation,
// where its path parameters are in scope.
type ServerLocals struct {
	W, R, Params string // parameters besides the path parameters
	Ctx          string // the framework's context parameter (echo.Context, *gin.Context, ...)
	HTTP         string // package net/http
	Framework    string // the framework's package (echo, gin, ...)
	Adapter      string // the runtime's adapter package (idemecho, idemgin, ...)
}

// ClientLocals are the names in the client helper's method of the
// operation, where its path parameters are in scope.
type ClientLocals struct {
	Ctx, Params, Body, ContentType, Opts string // parameters besides the path parameters
	TargetURL                            string // an initiator's target URL
	Call, Buf, Err, Key, P, Resp, R      string // locals
	Context, HTTP, IO, Bytes             string // packages
}

// Clash is an exported identifier that idemgen would declare and the
// package declares already: users call it by name, so it is not renamed.
type Clash struct {
	Operation int    // index in File.Operations; -1 for a name of the file
	Name      string // the identifier
}

// scope is the set of names taken in one Go scope.
type scope map[string]bool

func newScope(names ...[]string) scope {
	s := scope{}
	for _, list := range names {
		for _, n := range list {
			s[n] = true
		}
	}
	return s
}

// fresh returns base, or else base1, base2, ..., the first that s has not
// taken, and takes it.
func (s scope) fresh(base string) string {
	name := base
	for i := 1; s[name]; i++ {
		name = base + strconv.Itoa(i)
	}
	s[name] = true
	return name
}

// paramNames are the Go names of the operation's path parameters.
func (o Operation) paramNames() []string {
	names := make([]string, len(o.PathParams))
	for i, p := range o.PathParams {
		names[i] = p.Name
	}
	return names
}

// AllocateNames chooses the names that f's generated code declares itself.
// declared holds the identifiers that the package declares already at
// package level (oapi-codegen's output). It returns the exported
// identifiers idemgen would declare that clash with them.
func (f *File) AllocateNames(declared map[string]bool) []Clash {
	var clashes []Clash
	exported := func(op int, name string) {
		if declared[name] {
			clashes = append(clashes, Clash{Operation: op, Name: name})
		}
	}
	if f.Server && len(f.Operations) > 0 {
		exported(-1, "WithIdempotency")
	}
	if f.NetHTTPServer() {
		exported(-1, "IdempotencyErrorHandler")
	}
	if f.AnyStrict() {
		exported(-1, "NewStrictHandlerWithIdempotency")
	}
	if f.Strict {
		exported(-1, "NewStrictHandlerWithIdempotencyOptions")
	}
	if f.Client && len(f.Operations) > 0 {
		exported(-1, "IdempotentClient")
		exported(-1, "NewIdempotentClient")
	}

	var params []string
	for _, op := range f.Operations {
		params = append(params, op.paramNames()...)
	}
	imports := []string{"bytes", "context", "errors", "fmt", "http", "idem", "io", "time"}
	for _, fw := range frameworks {
		if fw.Pkg != "" {
			imports = append(imports, fw.Pkg, fw.Adapter)
		}
	}
	for name := range f.TypeImports {
		imports = append(imports, name)
	}
	// Package-level names: not oapi-codegen's, not an import's, and not a
	// path parameter's, which would hide them in the methods that use them.
	pkg := newScope(slices.Collect(maps.Keys(declared)), imports, params)
	for _, op := range f.Operations {
		pkg[op.GoName+"IdempotentResponse"] = true
	}
	f.allocateEventNames(pkg, exported)
	f.Names = FileNames{
		ServerType: pkg.fresh("idempotentServer"),
		StrictType: pkg.fresh("idempotentStrictServer"),
		StrictMW:   pkg.fresh("idempotencyStrictMiddleware"),
		Aliases:    map[string]string{},
	}
	// Receivers are in scope with every operation's path parameters.
	f.Names.ServerReceiver = newScope(imports, params).fresh("s")
	f.Names.ClientReceiver = newScope(imports, params).fresh("c")
	// alias is how a method body where the path parameters hidden are in
	// scope names the package path whose name is name; used says whether
	// the body refers to it at all (an unused import does not compile).
	alias := func(hidden []string, used bool, name, path string) string {
		if !used || !slices.Contains(hidden, name) {
			return name
		}
		for a, p := range f.Names.Aliases {
			if p == path {
				return a
			}
		}
		a := pkg.fresh(name)
		f.Names.Aliases[a] = path
		return a
	}
	fw := f.Facts()
	for i := range f.Operations {
		op := &f.Operations[i]
		if f.AnyStrict() {
			exported(i, op.GoName+"IdempotentResponse")
		}
		op.Names.OpVar = pkg.fresh(unexported(op.GoName) + "IdempotencyOp")
		op.Names.ClientOpVar = pkg.fresh(unexported(op.GoName) + "IdempotencyClientOp")
		op.Names.StrictFunc = pkg.fresh(unexported(op.GoName) + "IdempotencyStrict")

		hidden := op.paramNames()
		body := newScope(hidden, imports, []string{f.Names.ServerReceiver})
		op.Names.Server = ServerLocals{
			W:         body.fresh("w"),
			R:         body.fresh("r"),
			Params:    body.fresh("params"),
			HTTP:      alias(hidden, f.NetHTTPServer(), "http", "net/http"),
			Framework: alias(hidden, f.FrameworkServer() || f.FrameworkStrict, fw.Pkg, fw.Import),
			Adapter:   alias(hidden, f.FrameworkServer() || f.FrameworkStrict, fw.Adapter, fw.AdapterImport()),
			Ctx:       body.fresh(fw.CtxVarName()),
		}
		body = newScope(hidden, imports, []string{f.Names.ClientReceiver})
		op.Names.Client = ClientLocals{
			Ctx:         body.fresh("ctx"),
			Params:      body.fresh("params"),
			Body:        body.fresh("body"),
			ContentType: body.fresh("contentType"),
			Opts:        body.fresh("opts"),
			Call:        body.fresh("call"),
			Buf:         body.fresh("buf"),
			Err:         body.fresh("err"),
			Key:         body.fresh("key"),
			P:           body.fresh("p"),
			Resp:        body.fresh("resp"),
			R:           body.fresh("r"),
			Context:     alias(hidden, f.Client, "context", "context"),
			HTTP:        alias(hidden, f.Client, "http", "net/http"),
			IO:          alias(hidden, f.Client && op.IsClientBodyReader(), "io", "io"),
			Bytes:       alias(hidden, f.Client && op.HasBody(), "bytes", "bytes"),
		}
	}
	return clashes
}

// Receiver is the receiver of the ServerInterface decorator's methods.
func (f File) Receiver() string { return f.Names.ServerReceiver }

// OpVar is the package-level idem.Operation of the server wrappers.
func (o Operation) OpVar() string { return o.Names.OpVar }

// OpVarDoc is the doc comment of OpVar, line by line.
func (o Operation) OpVarDoc() []string {
	if o.Event != nil {
		return []string{o.OpVar() + " is the idempotency configuration of " + o.ReceiverMethod() + ",", o.EventRoute() + "."}
	}
	return []string{o.OpVar() + " is the idempotency configuration of " + o.GoName + " (" + o.Route() + ")."}
}

// ClientOpVar is the package-level idem.ClientOperation of the client helper.
func (o Operation) ClientOpVar() string { return o.Names.ClientOpVar }

// StrictFunc is the function that wraps the operation's strict handler.
func (o Operation) StrictFunc() string { return o.Names.StrictFunc }

// unexported returns name with its first letter in lower case.
func unexported(name string) string {
	r, n := utf8.DecodeRuneInString(name)
	return string(unicode.ToLower(r)) + name[n:]
}
