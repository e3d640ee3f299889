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
	OpVar       string // package-level idemop.Operation of the server wrappers
	ClientOpVar string // package-level idemop.ClientOperation of the client helper
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
	Gen          string // package idemgen
}

// ClientLocals are the names in the client helper's method of the
// operation, where its path parameters are in scope.
type ClientLocals struct {
	Ctx, Params, Body, ContentType, Opts string // parameters besides the path parameters
	TargetURL                            string // an initiator's target URL
	Call, Buf, Err, Key, P, Resp, R      string // locals
	Context, HTTP, IO, Bytes, Gen        string // packages
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
	for _, name := range f.exportedNames() {
		exported(-1, name)
	}
	a := f.newAllocator(declared)
	f.allocateEventNames(a.pkg, exported)
	f.Names = FileNames{
		ServerType: a.pkg.fresh("idempotentServer"),
		StrictType: a.pkg.fresh("idempotentStrictServer"),
		StrictMW:   a.pkg.fresh("idempotencyStrictMiddleware"),
		Aliases:    map[string]string{},
	}
	// Receivers are in scope with every operation's path parameters.
	f.Names.ServerReceiver = newScope(a.imports, a.params).fresh("s")
	f.Names.ClientReceiver = newScope(a.imports, a.params).fresh("c")
	for i := range f.Operations {
		op := &f.Operations[i]
		if f.AnyStrict() {
			exported(i, op.GoName+"IdempotentResponse")
		}
		op.Names.OpVar = a.pkg.fresh(unexported(op.GoName) + "IdempotencyOp")
		op.Names.ClientOpVar = a.pkg.fresh(unexported(op.GoName) + "IdempotencyClientOp")
		op.Names.StrictFunc = a.pkg.fresh(unexported(op.GoName) + "IdempotencyStrict")
		op.Names.Server = a.serverLocals(*op)
		op.Names.Client = a.clientLocals(*op)
	}
	return clashes
}

// exportedNames are the file-level exported identifiers f declares (those
// of its operations and events aside).
func (f *File) exportedNames() []string {
	var out []string
	if f.Server && len(f.Operations) > 0 {
		out = append(out, "WithIdempotency")
	}
	if f.NetHTTPServer() {
		out = append(out, "IdempotencyErrorHandler")
	}
	if f.AnyStrict() {
		out = append(out, "NewStrictHandlerWithIdempotency")
	}
	if f.Strict {
		out = append(out, "NewStrictHandlerWithIdempotencyOptions")
	}
	if f.Client && len(f.Operations) > 0 {
		out = append(out, "IdempotentClient", "NewIdempotentClient")
	}
	return out
}

// allocator chooses the names of one file: pkg is its package scope,
// imports the package names its code may use, params every operation's
// path parameters.
type allocator struct {
	f               *File
	pkg             scope
	imports, params []string
}

// newAllocator returns the allocator of f in a package that declares
// declared.
func (f *File) newAllocator(declared map[string]bool) *allocator {
	var params []string
	for _, op := range f.Operations {
		params = append(params, op.paramNames()...)
	}
	imports := []string{"bytes", "context", "errors", "fmt", "http", "idem", "idemgen", "idemop", "idemstore", "io", "time"}
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
	return &allocator{f: f, pkg: pkg, imports: imports, params: params}
}

// alias is how a method body where the path parameters hidden are in
// scope names the package path whose name is name; used says whether the
// body refers to it at all (an unused import does not compile).
func (a *allocator) alias(hidden []string, used bool, name, path string) string {
	if !used || !slices.Contains(hidden, name) {
		return name
	}
	for al, p := range a.f.Names.Aliases {
		if p == path {
			return al
		}
	}
	al := a.pkg.fresh(name)
	a.f.Names.Aliases[al] = path
	return al
}

// serverLocals are the names in the decorator's method of op.
func (a *allocator) serverLocals(op Operation) ServerLocals {
	f, fw := a.f, a.f.Facts()
	hidden := op.paramNames()
	body := newScope(hidden, a.imports, []string{f.Names.ServerReceiver})
	framework := f.FrameworkServer() || f.FrameworkStrict
	return ServerLocals{
		W:         body.fresh("w"),
		R:         body.fresh("r"),
		Params:    body.fresh("params"),
		HTTP:      a.alias(hidden, f.NetHTTPServer(), "http", "net/http"),
		Framework: a.alias(hidden, framework, fw.Pkg, fw.Import),
		Adapter:   a.alias(hidden, framework, fw.Adapter, fw.AdapterImport()),
		Ctx:       body.fresh(fw.CtxVarName()),
		Gen:       a.alias(hidden, f.AnyStrict() && fw.Adapter == "", "idemgen", GenImport),
	}
}

// clientLocals are the names in the client helper's method of op.
func (a *allocator) clientLocals(op Operation) ClientLocals {
	f := a.f
	hidden := op.paramNames()
	body := newScope(hidden, a.imports, []string{f.Names.ClientReceiver})
	return ClientLocals{
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
		Context:     a.alias(hidden, f.Client, "context", "context"),
		HTTP:        a.alias(hidden, f.Client, "http", "net/http"),
		IO:          a.alias(hidden, f.Client && op.IsClientBodyReader(), "io", "io"),
		Bytes:       a.alias(hidden, f.Client && op.HasBody(), "bytes", "bytes"),
		Gen:         a.alias(hidden, f.Client, "idemgen", GenImport),
	}
}

// Receiver is the receiver of the ServerInterface decorator's methods.
func (f File) Receiver() string { return f.Names.ServerReceiver }

// OpVar is the package-level idemop.Operation of the server wrappers.
func (o Operation) OpVar() string { return o.Names.OpVar }

// OpVarDoc is the doc comment of OpVar, line by line.
func (o Operation) OpVarDoc() []string {
	if o.Event != nil {
		return []string{o.OpVar() + " is the idempotency configuration of " + o.ReceiverMethod() + ",", o.EventRoute() + "."}
	}
	return []string{o.OpVar() + " is the idempotency configuration of " + o.GoName + " (" + o.Route() + ")."}
}

// ClientOpVar is the package-level idemop.ClientOperation of the client helper.
func (o Operation) ClientOpVar() string { return o.Names.ClientOpVar }

// StrictFunc is the function that wraps the operation's strict handler.
func (o Operation) StrictFunc() string { return o.Names.StrictFunc }

// unexported returns name with its first letter in lower case.
func unexported(name string) string {
	r, n := utf8.DecodeRuneInString(name)
	return string(unicode.ToLower(r)) + name[n:]
}
