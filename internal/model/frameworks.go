package model

// The frameworks beyond the net/http routers, echo v4 and gin: echo v5,
// fiber v2 and v3, iris.

// Import paths of the web frameworks oapi-codegen's echo5-server,
// fiber-server, fiber-v3-server and iris-server target, and of the
// runtime's adapters to them.
const (
	Echo5Import      = "github.com/labstack/echo/v5"
	FiberImport      = "github.com/gofiber/fiber/v2"
	FiberV3Import    = "github.com/gofiber/fiber/v3"
	IrisImport       = "github.com/kataras/iris/v12"
	IdemEcho5Import  = RuntimeImport + "/idemecho5"
	IdemFiberImport  = RuntimeImport + "/idemfiber"
	IdemFiber3Import = RuntimeImport + "/idemfiber3"
	IdemIrisImport   = RuntimeImport + "/idemiris"
)

// newFrameworkPkgs is frameworkPkgs for the frameworks of this file.
func (f File) newFrameworkPkgs() frameworkPkgs {
	switch f.Framework {
	case Echo5:
		return frameworkPkgs{"echo", Echo5Import, "idemecho5", IdemEcho5Import}
	case Fiber:
		return frameworkPkgs{"fiber", FiberImport, "idemfiber", IdemFiberImport}
	case FiberV3:
		return frameworkPkgs{"fiber", FiberV3Import, "idemfiber3", IdemFiber3Import}
	case Iris:
		return frameworkPkgs{"iris", IrisImport, "idemiris", IdemIrisImport}
	}
	return frameworkPkgs{}
}

// FrameworkServer reports whether the file has the ServerInterface
// decorator of a framework other than the net/http routers.
func (f File) FrameworkServer() bool { return f.Server && f.Framework != NetHTTP }

// FiberServer reports whether the file has the fiber (v2 or v3)
// ServerInterface decorator.
func (f File) FiberServer() bool { return f.Server && (f.Framework == Fiber || f.Framework == FiberV3) }

// Echo5Server reports whether the file has the echo v5 ServerInterface
// decorator.
func (f File) Echo5Server() bool { return f.Server && f.Framework == Echo5 }

// IrisServer reports whether the file has the iris ServerInterface
// decorator.
func (f File) IrisServer() bool { return f.Server && f.Framework == Iris }

// CtxStrict reports whether the file has a fiber strict server, whose
// response objects answer through the framework's context, not an
// http.ResponseWriter, and whose strict handler keeps the body as sent
// (fasthttp reads it whole): its middleware runs the protocol, after a
// step in front of the strict handler (ServeBody) that answers a bad key
// header or an oversized body before anything is decoded.
func (f File) CtxStrict() bool {
	return f.FrameworkStrict && (f.Framework == Fiber || f.Framework == FiberV3)
}

// VisitsContext reports whether the file has an iris strict server, whose
// response objects answer through iris's context, not an
// http.ResponseWriter (fiber's are CtxStrict).
func (f File) VisitsContext() bool { return f.FrameworkStrict && f.Framework == Iris }

// CtxTypeOf is the type of the context the framework's handlers take,
// with the framework's package named pkg.
func (f File) CtxTypeOf(pkg string) string {
	switch f.Framework {
	case Gin:
		return "*" + pkg + ".Context"
	case Echo5:
		return "*" + pkg + ".Context"
	case Fiber:
		return "*" + pkg + ".Ctx"
	case FiberV3:
		return pkg + ".Ctx"
	}
	return pkg + ".Context" // echo v4, iris
}

// HandlerReturnsError reports whether the framework's handlers return an
// error (echo, fiber), rather than nothing (gin, iris).
func (f File) HandlerReturnsError() bool {
	return f.Framework != Gin && f.Framework != Iris
}
