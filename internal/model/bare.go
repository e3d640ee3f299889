package model

import "fmt"

// Bare returns f for a run with no idempotent operation in scope: no
// server, strict or client scaffolding (which would wrap nothing and
// import what nothing uses), only the header and version guard, and
// Unwrapped saying why. A file that compiles, rather than none, keeps the
// generate directive and idemgen -check working while the spec has no
// x-idempotent operation yet, and for each config of a split layout (a
// models-only config among them). marked counts the operations the
// whole spec marks, before the config's include/exclude filters.
func (f File) Bare(marked int) File {
	switch {
	case !f.Server && !f.AnyStrict() && !f.Client:
		f.Unwrapped = "this configuration generates neither a server nor a client (generate: has no server flag and no client), so there is nothing to wrap"
	case marked == 0:
		f.Unwrapped = "the spec marks no operation x-idempotent"
	case marked == 1:
		f.Unwrapped = "the spec marks one operation x-idempotent, and this configuration's filters (include/exclude operation IDs and tags) leave it out"
	default:
		f.Unwrapped = fmt.Sprintf("the spec marks %d operations x-idempotent, and this configuration's filters (include/exclude operation IDs and tags) leave every one out", marked)
	}
	if f.Server || f.AnyStrict() || f.Client {
		f.Note = "wraps no operation: " + f.Unwrapped
	}
	f.Server, f.Strict, f.FrameworkStrict, f.Client = false, false, false, false
	f.Operations = nil
	return f
}
