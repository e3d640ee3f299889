package idem

import "github.com/idemgen/idemgen/runtime/internal/genlink"

// The entry points that only generated code and the framework adapters
// call are package idemgen's (runtime/idemgen); genlink hands them over.
func init() {
	genlink.NewEngineFor = newEngineFor
	genlink.ServeBody = (*Engine).serveBody
	genlink.CheckRequest = (*Engine).precheck
	genlink.CaptureContext = captureContext
	genlink.KeyHeaderProblem = keyHeaderProblem
	genlink.Editor = (*Call).editor
	genlink.MarshalBody = (*Call).marshalBody
	genlink.MarshalForm = (*Call).marshalForm
}
