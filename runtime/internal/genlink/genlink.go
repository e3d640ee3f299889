// Package genlink hands package idemgen the entry points of package idem
// that only generated code and the framework adapters call, so that idem's
// documentation shows only what users write. Package idem sets each
// variable in its init to its function, of the type written beside it;
// idemgen, which imports idem and so runs after that init, asserts the type
// once. A variable cannot name idem's types here: idem imports this
// package. (grpc's internal package links its packages the same way.)
package genlink

var (
	NewEngineFor     any // func([]*idemop.Operation, idemstore.Store, ...idem.Option) *idem.Engine
	ServeBody        any // func(*idem.Engine, http.ResponseWriter, *http.Request, *idemop.Operation, http.HandlerFunc)
	CheckRequest     any // func(*idem.Engine, *idem.Request, *idemop.Operation) *idem.Response
	CaptureContext   any // func(context.Context, func(http.ResponseWriter) error) (*idem.Response, error)
	KeyHeaderProblem any // func(name string, count int) *idem.Problem
	Editor           any // func(*idem.Call) func(context.Context, *http.Request) error
	MarshalBody      any // func(*idem.Call, any) ([]byte, error)
	MarshalForm      any // func(*idem.Call, any) ([]byte, error)
)
