package model

import (
	"cmp"
	"fmt"
	"slices"
)

// Framework is the web framework whose ServerInterface shape oapi-codegen
// generates. What idemgen knows of each is one row of the table
// frameworks (Facts); code and templates look facts up there and do not
// switch on the framework.
type Framework int

// The frameworks idemgen generates for.
const (
	NetHTTP Framework = iota // chi, std-http and gorilla: one net/http ServerInterface shape
	Echo                     // echo v4: methods take an echo.Context and return an error
	Gin                      // gin: methods take a *gin.Context
	Echo5                    // echo v5: methods take a *echo.Context and return an error
	Fiber                    // fiber v2: methods take a *fiber.Ctx and return an error
	FiberV3                  // fiber v3: methods take a fiber.Ctx and return an error
	Iris                     // iris: methods take an iris.Context
)

// FrameworkFacts is what the generator knows of one framework, a row of
// the table frameworks.
type FrameworkFacts struct {
	// Flags are oapi-codegen's generate: flags that choose the framework,
	// as a configuration file spells them.
	Flags []string
	// Pkg and Import are the framework's package name and import path; ""
	// for the net/http routers.
	Pkg, Import string
	// Adapter is the package name of the runtime's adapter to the
	// framework (AdapterImport); "" for the net/http routers, which call
	// the engine itself.
	Adapter string
	// Ctx is the type of the context the framework's handlers take, with
	// %s for the framework's package name.
	Ctx string
	// CtxVar is the name generated methods give that context parameter
	// before AllocateNames makes it fresh, oapi-codegen's own; "" for ctx.
	CtxVar string
	// ReturnsError says that the framework's handlers return an error
	// (rather than nothing).
	ReturnsError bool
	// ErrorHandler is what renders an error a handler returns, for the
	// decorator's doc; "" where handlers return none.
	ErrorHandler string
	// RequestContext is the expression for the request's context.Context
	// of the strict handler's context, with %s for the variable; "" for
	// %s.Request().Context().
	RequestContext string
	// Strict is how the framework's strict server answers.
	Strict StrictShape
	// Register names the oapi-codegen functions that take the
	// ServerInterface; "" for RegisterHandlers or its variants.
	Register string
}

// StrictShape is how a framework's strict response objects answer, which
// decides how the strict middleware captures them.
type StrictShape int

// The shapes of strict servers.
const (
	// StrictWriter: response objects write to an http.ResponseWriter; the
	// middleware captures them with idemgen.CaptureContext.
	StrictWriter StrictShape = iota
	// StrictVisitsContext: response objects answer through the
	// framework's context; the adapter's Capture records them.
	StrictVisitsContext
	// StrictInContext: response objects answer through the framework's
	// context and the strict handler keeps the body as sent (fasthttp
	// reads it whole): the adapter's ServeStrict runs the protocol around
	// the strict handler and its visit, after a step in front of the
	// strict handler (ServeBody) that answers a bad key header or an
	// oversized body before anything is decoded.
	StrictInContext
)

// frameworks holds the facts of each framework, one row each.
var frameworks = [...]FrameworkFacts{
	NetHTTP: {
		Flags:          []string{"chi-server", "std-http-server", "gorilla-server"},
		RequestContext: "%s", // the strict handler's ctx is the request's context
		Register:       "HandlerFromMux or its variants",
	},
	Echo: {
		Flags:        []string{"echo-server"},
		Pkg:          "echo",
		Import:       "github.com/labstack/echo/v4",
		Adapter:      "idemecho",
		Ctx:          "%s.Context",
		ReturnsError: true,
		ErrorHandler: "echo's HTTPErrorHandler",
	},
	Gin: {
		Flags:          []string{"gin-server"},
		Pkg:            "gin",
		Import:         "github.com/gin-gonic/gin",
		Adapter:        "idemgin",
		Ctx:            "*%s.Context",
		CtxVar:         "c",
		RequestContext: "%s.Request.Context()",
	},
	Echo5: {
		Flags:        []string{"echo5-server"},
		Pkg:          "echo",
		Import:       "github.com/labstack/echo/v5",
		Adapter:      "idemecho5",
		Ctx:          "*%s.Context",
		ReturnsError: true,
		ErrorHandler: "echo's HTTPErrorHandler",
	},
	Fiber: {
		Flags:        []string{"fiber-server"},
		Pkg:          "fiber",
		Import:       "github.com/gofiber/fiber/v2",
		Adapter:      "idemfiber",
		Ctx:          "*%s.Ctx",
		CtxVar:       "c",
		ReturnsError: true,
		ErrorHandler: "the app's ErrorHandler",
		Strict:       StrictInContext,
	},
	FiberV3: {
		Flags:        []string{"fiber-v3-server"},
		Pkg:          "fiber",
		Import:       "github.com/gofiber/fiber/v3",
		Adapter:      "idemfiber3",
		Ctx:          "%s.Ctx",
		CtxVar:       "c",
		ReturnsError: true,
		ErrorHandler: "the app's ErrorHandler",
		Strict:       StrictInContext,
	},
	Iris: {
		Flags:   []string{"iris-server"},
		Pkg:     "iris",
		Import:  "github.com/kataras/iris/v12",
		Adapter: "idemiris",
		Ctx:     "%s.Context",
		Strict:  StrictVisitsContext,
	},
}

// Facts returns fw's row of the framework table.
func (fw Framework) Facts() FrameworkFacts { return frameworks[fw] }

// FrameworkFor returns the framework that oapi-codegen's generate: flags
// choose (set reports whether a flag, as a configuration file spells it,
// is set), and false when they choose no server.
func FrameworkFor(set func(flag string) bool) (Framework, bool) {
	for fw, facts := range frameworks {
		if slices.ContainsFunc(facts.Flags, set) {
			return Framework(fw), true
		}
	}
	return NetHTTP, false
}

// FrameworkFlags are the generate: flags of every framework, in the
// table's order.
func FrameworkFlags() []string {
	var flags []string
	for _, facts := range frameworks {
		flags = append(flags, facts.Flags...)
	}
	return flags
}

// CtxType is the type of the context the framework's handlers take.
func (x FrameworkFacts) CtxType() string { return x.CtxTypeOf(x.Pkg) }

// CtxTypeOf is CtxType with the framework's package named pkg (an alias
// where a path parameter hides the package's own name).
func (x FrameworkFacts) CtxTypeOf(pkg string) string { return fmt.Sprintf(x.Ctx, pkg) }

// AdapterImport is the import path of the runtime's adapter.
func (x FrameworkFacts) AdapterImport() string { return RuntimeImport + "/" + x.Adapter }

// Result is what a handler returns, after its parameters: " error", or ""
// for nothing.
func (x FrameworkFacts) Result() string {
	if x.ReturnsError {
		return " error"
	}
	return ""
}

// Return is what precedes a handler's call in a handler that passes on
// its result: "return ", or "" where handlers return nothing.
func (x FrameworkFacts) Return() string {
	if x.ReturnsError {
		return "return "
	}
	return ""
}

// RequestContextOf is the expression for the request's context.Context of
// v, the strict handler's context.
func (x FrameworkFacts) RequestContextOf(v string) string {
	return fmt.Sprintf(cmp.Or(x.RequestContext, "%s.Request().Context()"), v)
}

// CtxVarName is the name generated methods give the context parameter
// before AllocateNames makes it fresh.
func (x FrameworkFacts) CtxVarName() string { return cmp.Or(x.CtxVar, "ctx") }

// RegisterFuncs names the oapi-codegen functions that take the
// ServerInterface.
func (x FrameworkFacts) RegisterFuncs() string {
	return cmp.Or(x.Register, "RegisterHandlers or its variants")
}

// StrictParams are the strict handler function's parameters before its
// request.
func (x FrameworkFacts) StrictParams() string {
	if x.Ctx == "" { // the net/http routers: no context of a framework
		return "ctx context.Context, w http.ResponseWriter, r *http.Request"
	}
	return "ctx " + x.CtxType()
}

// StrictArgs are the arguments matching StrictParams.
func (x FrameworkFacts) StrictArgs() string {
	if x.Ctx == "" {
		return "ctx, w, r"
	}
	return "ctx"
}

// Facts returns the facts of f's framework.
func (f File) Facts() FrameworkFacts { return f.Framework.Facts() }

// NetHTTPServer reports whether the file has the ServerInterface decorator
// of the net/http routers (chi, std-http, gorilla).
func (f File) NetHTTPServer() bool { return f.Server && f.Framework == NetHTTP }

// FrameworkServer reports whether the file has the ServerInterface
// decorator of a framework other than the net/http routers.
func (f File) FrameworkServer() bool { return f.Server && f.Framework != NetHTTP }

// AnyStrict reports whether the file has a strict-server middleware, for
// the net/http routers or for another framework.
func (f File) AnyStrict() bool { return f.Strict || f.FrameworkStrict }

// CtxStrict reports whether the file has a strict server of shape
// StrictInContext (fiber).
func (f File) CtxStrict() bool { return f.FrameworkStrict && f.Facts().Strict == StrictInContext }

// VisitsContext reports whether the file has a strict server of shape
// StrictVisitsContext (iris).
func (f File) VisitsContext() bool {
	return f.FrameworkStrict && f.Facts().Strict == StrictVisitsContext
}
